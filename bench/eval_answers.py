"""Answer quality on SQuAD: does the answer hold a gold answer and cite the passage it came from,
and does each source's highlight show the fact?

    .venv/bin/python -m bench.eval_answers [--queries 200] [--llm-url URL --llm-model NAME]

The 48 SQuAD dev articles are uploaded whole, as a user would, and ingested by the real worker
(extraction, 1000/200 chunking, MiniLM, Chroma, BM25) into a fresh database; then each question
goes through the service's `AnswerEngine` (plan, produce, cite: what the message routes run,
minus the HTTP and the saving) over all the articles:

- `extractive`: RAG_ANSWER_MODE=extractive, no model call.
- `auto, built-in model`: RAG_ANSWER_MODE=auto with LLM_BUILTIN=true (the run command's
  default): extractive when a passage matched, the model for general questions.
- `generative, <model>` (with --llm-url): the model at URL writes every answer, no fallback, as
  the built-in model answered before this mode existed; `auto, <model>` the same model with the
  fallback to quoting for a grounded answer that cites nothing. Start the built-in model as
  scripts/run.sh does to measure it (docs/retrieval-quality.md has the command).

An answer counts as correct and cited when its text holds a gold answer string and one of its
cited sources overlaps the judged paragraph. Highlights (question only: what the stream's
`sources` event carries before the answer) are scored on the first retrieved source that
overlaps the judged paragraph, and on the first source whatever it is; "answer known" gives the
first gold answer as the answer, as a model's answer would name it.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import machine, percentile, table
from bench.eval_retrieval import (
    DEFAULT_DATASET,
    Ingested,
    ingested,
    pick_queries,
    read_collection,
)
from docchat.answers.engine import AnswerEngine
from docchat.answers.values import AnswerOptions, Generated, Question
from docchat.config import LLMSettings
from docchat.kit.errors import DocchatError
from docchat.llm.client import LLM
from docchat.retrieval.highlight import highlight
from docchat.retrieval.schemas import Source


@dataclass
class Tally:
    correct_and_cited: int = 0
    holds_answer: int = 0
    cited: int = 0
    bare: int = 0
    asked: int = 0
    milliseconds: list[float] = field(default_factory=list)

    def row(self, label: str) -> list[str]:
        def share(count: int) -> str:
            return f"{count / self.asked:.1%}" if self.asked else "-"

        return [
            label,
            share(self.correct_and_cited),
            share(self.holds_answer),
            share(self.cited),
            share(self.bare),
            f"{percentile(self.milliseconds, 50):.0f} / {percentile(self.milliseconds, 95):.0f}",
        ]


@dataclass
class HighlightTally:
    first_relevant: int = 0
    first_relevant_known: int = 0
    relevant_found: int = 0
    first_source: int = 0
    asked: int = 0


def _holds(text: str, answers: Sequence[str]) -> bool:
    return any(answer in text for answer in answers)


_MARKERS_AND_PUNCTUATION = re.compile(r"\[\d+\]|[\s.,;:!?()\[\]-]")


def _bare(text: str) -> bool:
    """An answer that says nothing besides its citation markers ("[1]", "[2]."): a failure."""
    return bool(text.strip()) and not _MARKERS_AND_PUNCTUATION.sub("", text)


def _relevant(source: Source, ingest: Ingested, relevant: set[str]) -> bool:
    return bool(ingest.units_of_chunk.get(source.chunk_id, frozenset()) & relevant)


def _engine(ingest: Ingested, llm_settings: LLMSettings) -> AnswerEngine:
    base = ingest.components.engine
    return AnswerEngine(
        llm=LLM(llm_settings),
        retriever=base.retriever,
        lexical=base.lexical,
        inline_reader=base.inline_reader,
        search=base.search,
        answers=base.answers,
        indexing=base.indexing,
        llm_settings=llm_settings,
        query_writer=base.query_writer,
        identities=base.identities,
        catalogue=base.catalogue,
        glosses=ingest.components.glosses,
    )


async def _answers(
    engine: AnswerEngine, ingest: Ingested, text: str, model: str, modes: Sequence[str]
) -> list[tuple[str, list[Source], list[Source], float]]:
    """For each answer mode, the saved answer's text and sources, the plan's candidates and the
    wall time; the modes after the first are cited from the same generation (they differ only
    in what `cite` does with it)."""
    results = []
    first = modes[0]
    options = AnswerOptions(rag_enabled=True, top_k=4, model=model, answer_mode=first)  # type: ignore[arg-type]
    question = Question(text=text, history=[], documents=ingest.scope, options=options, scope="all")
    started = time.perf_counter()
    plan = await engine.plan(question)
    generated: Generated | None = None
    try:
        async for item in engine.produce(question, plan, streaming=False):
            if isinstance(item, Generated):
                generated = item
    except DocchatError:  # no model to make conversation with: no answer
        elapsed = (time.perf_counter() - started) * 1000
        return [("", [], plan.candidates, elapsed) for _ in modes]
    assert generated is not None
    produced = time.perf_counter()
    for mode in modes:
        chosen = dataclasses.replace(options, answer_mode=mode)  # type: ignore[arg-type]
        asked = dataclasses.replace(question, options=chosen)
        cite_started = time.perf_counter()
        cited = engine.cite(asked, plan, generated.content)
        elapsed = (produced - started + time.perf_counter() - cite_started) * 1000
        results.append((cited.content, cited.sources or [], plan.candidates, elapsed))
    return results


DEFAULT_LABEL = "auto, built-in model (the default)"


async def evaluate(
    folder: Path, which: str, llm_url: str | None, llm_model: str, model_queries: int | None
) -> None:
    collection = read_collection(folder, "articles")
    answers_of = _gold_answers(folder)
    sample = pick_queries(folder, collection, "sample")
    # The sample is sorted by id, which groups questions by article: take them evenly spread.
    count = len(sample) if which == "sample" else int(which)
    query_ids = sample[:: max(1, len(sample) // count)][:count]
    dead = LLMSettings(_env_file=None, base_url="http://127.0.0.1:9/v1", max_retries=0)  # type: ignore[call-arg]
    model = dead
    if llm_url:
        model = LLMSettings(  # type: ignore[call-arg]
            _env_file=None,
            base_url=llm_url,
            model=llm_model,
            max_retries=0,
            timeout_seconds=120,
            context_window=8192,
            max_tokens=512,
        )
    # (the engine's model settings, the answer modes cited from one generation, their rows)
    runs: list[tuple[LLMSettings, list[str], list[str]]] = [
        (dead, ["extractive"], ["extractive"]),
        (model.model_copy(update={"builtin": True}), ["auto"], [DEFAULT_LABEL]),
    ]
    if llm_url:
        runs.append(
            (
                model,
                ["generative", "auto"],
                [f"generative, {llm_model} (before)", f"auto, {llm_model} (quotes if uncited)"],
            )
        )
    labels = [label for _, _, rows in runs for label in rows]
    tallies = {label: Tally() for label in labels}
    marks = HighlightTally()
    async with ingested(collection.uploads) as ingest:
        chunks = await ingest.components.lexical.document_chunks(ingest.scope)
        texts = {chunk.id: chunk.text for chunk in chunks}
        for llm_settings, cited_as, rows in runs:
            engine = _engine(ingest, llm_settings)
            asked = query_ids
            if model_queries is not None and "generative" in cited_as:
                asked = query_ids[:: max(1, len(query_ids) // model_queries)][:model_queries]
            for number, query_id in enumerate(asked, start=1):
                question = collection.queries[query_id]
                gold = answers_of[query_id]
                relevant = collection.qrels[query_id]
                results = await _answers(engine, ingest, question, llm_settings.model, cited_as)
                for row, (content, sources, candidates, elapsed) in zip(rows, results, strict=True):
                    tally = tallies[row]
                    tally.asked += 1
                    tally.milliseconds.append(elapsed)
                    holds = _holds(content, gold)
                    tally.holds_answer += holds
                    tally.cited += bool(sources)
                    tally.bare += _bare(content)
                    tally.correct_and_cited += holds and any(
                        _relevant(source, ingest, relevant) for source in sources
                    )
                    if row == "extractive":
                        _count_highlights(
                            marks, candidates, texts, ingest, relevant, question, gold
                        )
                if number % 50 == 0:
                    print(f"  {rows[0]}: {number}/{len(query_ids)}", flush=True)
            await engine.llm.close()
    print(
        f"Answers over {len(collection.uploads)} SQuAD articles ({ingest.chunks} chunks), "
        f"{len(query_ids)} questions (the model's own rows: {model_queries or len(query_ids)}), "
        f"top_k 4; {machine()}"
    )
    print(
        table(
            [
                "mode",
                "correct and cited",
                "holds a gold answer",
                "has sources",
                "only markers",
                "ms p50 / p95",
            ],
            [tallies[label].row(label) for label in labels],
        )
    )
    print()
    found = marks.relevant_found
    print(
        f"Highlights (at most 200 characters), {marks.asked} questions; the judged paragraph "
        f"was among the sources for {found}"
    )
    print(
        table(
            ["highlight of", "holds a gold answer"],
            [
                [
                    "first relevant source, question only",
                    f"{marks.first_relevant / max(1, found):.1%}",
                ],
                [
                    "first relevant source, answer known",
                    f"{marks.first_relevant_known / max(1, found):.1%}",
                ],
                ["first source, question only", f"{marks.first_source / max(1, marks.asked):.1%}"],
            ],
        )
    )


def _count_highlights(
    marks: HighlightTally,
    candidates: Sequence[Source],
    texts: dict[str, str],
    ingest: Ingested,
    relevant: set[str],
    question: str,
    gold: Sequence[str],
) -> None:
    marks.asked += 1
    if candidates and candidates[0].highlight is not None:
        marks.first_source += _holds(candidates[0].highlight.text, gold)
    first = next((s for s in candidates if _relevant(s, ingest, relevant)), None)
    if first is None or first.highlight is None:
        return
    marks.relevant_found += 1
    marks.first_relevant += _holds(first.highlight.text, gold)
    known = highlight(texts[first.chunk_id], question, gold[0], location=first.location)
    marks.first_relevant_known += known is not None and _holds(known.text, gold)


def _gold_answers(folder: Path) -> dict[str, list[str]]:
    import json

    answers: dict[str, list[str]] = {}
    with (folder / "queries.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            entry = json.loads(line)
            answers[str(entry["_id"])] = list(entry["metadata"]["answers"])
    return answers


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--queries", default="200", help="a count (from the sample), or sample")
    parser.add_argument("--llm-url", default=None, help="an OpenAI-compatible model to measure")
    parser.add_argument("--llm-model", default="smollm2")
    parser.add_argument(
        "--model-queries", type=int, default=None, help="ask the model this many (default: all)"
    )
    arguments = parser.parse_args()
    which = arguments.queries
    asyncio.run(
        evaluate(
            arguments.dataset,
            which,
            arguments.llm_url,
            arguments.llm_model,
            arguments.model_queries,
        )
    )
