"""Questions that need several searches: are the passages they need read, and quoted (issue 70)?

    .venv/bin/python -m bench.eval_research [--only r-pg-01,r-sq-02] [--answers-out FILE]
        [--llm-url URL --llm-model NAME --model-questions 10]

The set is `bench/datasets/research` (see its README): 68 multi-part and multi-document
questions over the 48 SQuAD dev articles and the 52 PostgreSQL manual pages, each with the
facts (2 to 4) its answer needs, every fact a string of one document. The two collections are
uploaded together, as a user would, and ingested by the real worker (extraction, chunking,
MiniLM, Chroma, BM25) into a fresh database; each question goes through the service's
`AnswerEngine` (plan, produce, cite) over all the documents, with no model (extractive answers):

- `one search, top 4`: today's answer: the question searched once, its 4 best passages read;
- `one search, top 24`: the same search reading as many passages as research mode's context
  budget holds (`research.CONTEXT_FACTOR` times a plain question's), to tell reading more from
  searching better;
- `research brief, top 4`: options.research: the question searched whole and each of its parts
  on its own, then in the document of the best passage alone (`docchat.answers.research`), the
  answer quoting each part's own passages.

With --llm-url (an OpenAI-compatible model that calls tools, e.g. `bench/real_model.sh`), two
more rows on an evenly spread sample of --model-questions questions (a real model is slow here):

- `one search, <model>`: the model writes the answer from the question's 4 best passages;
- `research with tools, <model>`: options.research with that model: it starts from what the
  question and its parts found and takes its own steps (search, list, read, finish) within the
  step and token budgets (`docchat.answers.research_loop`); "searches" counts its steps.

Figures, per row: all facts read (every fact of the question is in a passage the answer was
given), facts read (of all facts), all facts cited (every fact is in a line of the answer that
ends with a citation marker), searches and passages read per question, and the wall time of
plan, produce and cite. A fact that no chunk of the ingested collections holds (the reader's
text differs from the one the set was checked against) is counted apart: no row can read it.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import dataclasses
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import machine, percentile, table
from bench.eval_answers import _engine
from bench.eval_retrieval import Ingested, ingested, read_collection
from docchat.answers import research
from docchat.answers.engine import AnswerEngine
from docchat.answers.values import AnswerOptions, Generated, Question
from docchat.config import LLMSettings

DATASETS = Path(__file__).parent / "datasets"
QUESTIONS = DATASETS / "research" / "questions.jsonl"
_MARKER = re.compile(r"\[\d+\]")


@dataclass(frozen=True)
class Fact:
    document: str
    answer: str


@dataclass(frozen=True)
class ResearchQuestion:
    id: str
    collection: str
    kind: str
    text: str
    facts: tuple[Fact, ...]


@dataclass(frozen=True)
class Row:
    label: str
    top_k: int
    research: bool
    # The model that writes the answer ("none": extractive, quoted answers).
    model: str = "none"
    # Times a plain question's context budget (RAG_MAX_CONTEXT_TOKENS) the answer may read.
    context_factor: int = 1


ROWS = (
    Row("one search, top 4", 4, False),
    Row("one search, top 24", 24, False, context_factor=research.CONTEXT_FACTOR),
    Row("research brief, top 4", 4, True),
)


def model_rows(model: str) -> tuple[Row, ...]:
    return (
        Row(f"one search, {model}", 4, False, model),
        Row(f"research with tools, {model}", 4, True, model),
    )


@dataclass
class Tally:
    questions: int = 0
    all_read: int = 0
    facts: int = 0
    facts_read: int = 0
    all_cited: int = 0
    searches: list[int] = field(default_factory=list)
    passages: list[int] = field(default_factory=list)
    milliseconds: list[float] = field(default_factory=list)

    def row(self, label: str) -> list[str]:
        return [
            label,
            _share(self.all_read, self.questions),
            _share(self.facts_read, self.facts),
            _share(self.all_cited, self.questions),
            f"{sum(self.searches) / len(self.searches):.1f}",
            f"{sum(self.passages) / len(self.passages):.1f}",
            f"{percentile(self.milliseconds, 50):.0f} / {percentile(self.milliseconds, 95):.0f}",
        ]


def _share(count: int, total: int) -> str:
    return f"{count / total:.1%}" if total else "-"


def read_questions(path: Path = QUESTIONS) -> list[ResearchQuestion]:
    questions = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        facts = tuple(Fact(str(item["document"]), str(item["answer"])) for item in row["required"])
        questions.append(
            ResearchQuestion(row["_id"], row["collection"], row["kind"], row["text"], facts)
        )
    return questions


def _bare(text: str) -> str:
    """`text` without its white space: a fact is matched whatever spaces the reader kept
    around inline markup ("character(n)" or "character( n )")."""
    return "".join(text.split())


def holds(text: str, fact: Fact) -> bool:
    return _bare(fact.answer) in _bare(text)


def _cited_lines(answer: str) -> list[str]:
    return [line for line in answer.splitlines() if _MARKER.search(line)]


@dataclass(frozen=True)
class Outcome:
    content: str
    read: tuple[str, ...]
    searches: int
    milliseconds: float


def _reading(engine: AnswerEngine, row: Row) -> AnswerEngine:
    """`engine`, with the context budget `row` reads."""
    if row.context_factor == 1:
        return engine
    wider = copy.copy(engine)
    tokens = engine.search.max_context_tokens * row.context_factor
    wider.search = engine.search.model_copy(update={"max_context_tokens": tokens})
    return wider


async def answer(engine: AnswerEngine, ingest: Ingested, text: str, row: Row) -> Outcome:
    """One question answered as `row` says: quoted (no model), or written by `row.model`."""
    engine = _reading(engine, row)
    options = AnswerOptions(
        rag_enabled=True,
        top_k=row.top_k,
        model=row.model,
        answer_mode="extractive" if row.model == "none" else "generative",
        research=row.research,
    )
    question = Question(text=text, history=[], documents=ingest.scope, options=options, scope="all")
    started = time.perf_counter()
    plan = await engine.plan(question)
    generated: Generated | None = None
    async for item in engine.produce(question, plan, streaming=False):
        if isinstance(item, Generated):
            generated = item
    assert generated is not None
    cited = engine.cite(question, plan, generated.content)
    elapsed = (time.perf_counter() - started) * 1000
    searches = len(plan.meta.research) if plan.meta.research else 1
    if plan.meta.research_steps:
        searches = len(plan.meta.research_steps)
    read = tuple(entry.text for entry in plan.entries)
    return Outcome(cited.content, read, searches, elapsed)


def count(tally: Tally, question: ResearchQuestion, outcome: Outcome) -> None:
    tally.questions += 1
    read = [any(holds(passage, fact) for passage in outcome.read) for fact in question.facts]
    cited_lines = _cited_lines(outcome.content)
    cited = [any(holds(line, fact) for line in cited_lines) for fact in question.facts]
    tally.facts += len(read)
    tally.facts_read += sum(read)
    tally.all_read += all(read)
    tally.all_cited += all(cited)
    tally.searches.append(outcome.searches)
    tally.passages.append(len(outcome.read))
    tally.milliseconds.append(outcome.milliseconds)


async def unreachable(ingest: Ingested, questions: Sequence[ResearchQuestion]) -> list[Fact]:
    """The facts no ingested chunk holds."""
    chunks = await ingest.components.lexical.document_chunks(ingest.scope)
    return [
        fact
        for question in questions
        for fact in question.facts
        if not any(holds(chunk.text, fact) for chunk in chunks)
    ]


@dataclass(frozen=True)
class RealModel:
    url: str
    name: str
    questions: int

    def settings(self) -> LLMSettings:
        return LLMSettings(  # type: ignore[call-arg]
            _env_file=None,
            base_url=self.url,
            model=self.name,
            max_retries=0,
            timeout_seconds=600,
            context_window=8192,
            max_tokens=512,
        )


def spread(questions: Sequence[ResearchQuestion], count: int) -> list[ResearchQuestion]:
    """`count` questions spread evenly over the set (which is grouped by collection)."""
    return list(questions[:: max(1, len(questions) // count)][:count])


async def evaluate(only: Sequence[str], real: RealModel | None) -> list[dict[str, object]]:
    """Print the table; each answer, for --answers-out."""
    questions = [q for q in read_questions() if not only or q.id in only]
    squad = read_collection(DATASETS / "squad-dev", "articles")
    manual = read_collection(DATASETS / "postgresql-manual", "passages")
    rows = ROWS + (model_rows(real.name) if real is not None else ())
    tallies = {row.label: Tally() for row in rows}
    written: list[dict[str, object]] = []
    sample = spread(questions, real.questions) if real is not None else []
    async with ingested([*squad.uploads, *manual.uploads]) as ingest:
        print(
            f"ingested {len(squad.uploads)} SQuAD articles and {len(manual.uploads)} manual "
            f"pages ({ingest.chunks} chunks) in {ingest.seconds:.0f} s",
            flush=True,
        )
        missing = await unreachable(ingest, questions)
        runs: list[tuple[AnswerEngine, tuple[Row, ...], list[ResearchQuestion]]] = [
            (ingest.components.engine, ROWS, questions)
        ]
        if real is not None:
            runs.append((_engine(ingest, real.settings()), model_rows(real.name), sample))
        for engine, chosen, asked in runs:
            for question in asked:
                for row in chosen:
                    outcome = await answer(engine, ingest, question.text, row)
                    count(tallies[row.label], question, outcome)
                    written.append(
                        {"id": question.id, "row": row.label, **dataclasses.asdict(outcome)}
                    )
                    if row.model != "none":
                        print(
                            f"  {question.id} {row.label}: {outcome.milliseconds / 1000:.0f} s",
                            flush=True,
                        )
    facts = sum(len(question.facts) for question in questions)
    print(f"\n{machine()}; {len(questions)} questions, {facts} facts")
    if real is not None:
        print(f"rows with {real.name}: {len(sample)} questions ({', '.join(q.id for q in sample)})")
    print(f"facts no ingested chunk holds: {len(missing)} of {facts}")
    for fact in missing:
        print(f"  {fact.document}: {fact.answer!r}")
    headers = [
        "reading",
        "all facts read",
        "facts read",
        "all facts cited",
        "searches or steps",
        "passages read",
        "ms p50 / p95",
    ]
    print(table(headers, [tallies[row.label].row(row.label) for row in rows]))
    return written


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", default="", help="comma-separated question ids")
    parser.add_argument("--answers-out", type=Path, default=None, help="write each answer (JSONL)")
    parser.add_argument(
        "--llm-url", default=None, help="an OpenAI-compatible model that calls tools"
    )
    parser.add_argument("--llm-model", default="qwen2.5-1.5b", help="its model name")
    parser.add_argument("--model-questions", type=int, default=10, help="questions it answers")
    arguments = parser.parse_args()
    only = [word for word in arguments.only.split(",") if word]
    real = None
    if arguments.llm_url:
        real = RealModel(arguments.llm_url, arguments.llm_model, arguments.model_questions)
    written = asyncio.run(evaluate(only, real))
    if arguments.answers_out is not None:
        arguments.answers_out.write_text("".join(json.dumps(item) + "\n" for item in written))


if __name__ == "__main__":
    main()
