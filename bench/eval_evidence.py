"""What answers say about their evidence: questions the documents cannot answer, controls they
can, and documents that disagree (issue 69).

    .venv/bin/python -m bench.eval_evidence [--llm-url URL --llm-model NAME] [--model-sample 20]
                                            [--builtin-url URL] [--answers-out FILE]

The sets are `bench/datasets/evidence-*` (see their READMEs and `bench/evidence_sets.py`):
63 unanswerable questions and 60 answerable controls over the 48 SQuAD dev articles and the 52
PostgreSQL manual pages, uploaded together, as a user would, and ingested by the real worker
(extraction, chunking, MiniLM, Chroma, BM25) into a fresh database; 40 conflicting pairs, 80
small dated documents (PDF with /CreationDate, HTML with `<meta name="date">`), in another
one. Each question goes through the service's `AnswerEngine` (plan, produce, cite: what the
message routes run, minus the HTTP and the saving) over all the documents, top_k 4:

- `extractive`: RAG_ANSWER_MODE=extractive, no model call;
- `auto, built-in model`: RAG_ANSWER_MODE=auto with LLM_BUILTIN=true (the run command's
  default). The built-in model is asked only for small talk there, so it need not run; give
  `--builtin-url` to use a running one (scripts/run.sh starts it);
- with `--llm-url`: `generative, <model>` (the model writes every answer) and `auto, <model>`
  (the same, with the extractive fallbacks), each on `--model-sample` questions of each set,
  spread evenly (a real model on these 2 cores takes ~10 s an answer).

Each mode answers each question itself, unless `--share-generation`: then the model's two rows
are cited from one generation each (as `bench/eval_answers.py` does), which halves the model's
time and is exact while `generative` and `auto` differ only in `AnswerEngine.cite`: so they do
with a connected model (only the built-in one changes what `auto` asks it). Figures:
- unanswerable answered as grounded: `meta.evidence == "answered"`, or, where an engine sets no
  evidence, a grounded answer (`meta.grounded`); `partial` is shown apart;
- answerable called not_in_documents: `meta.evidence == "not_in_documents"`, or, where none is
  set, an answer that is not grounded;
- conflicts shown: `meta.conflicts` has a conflict whose sides cover both documents (a side
  covers one when its value is that document's value or its `[n]` cites that document) AND the
  answer's text holds both values;
- cited claims supported: an answer's claims are the stretches of text before each group of
  `[n]` markers; a claim that states a checkable fact (a gold answer of an answerable question,
  a value of either side of a conflict) is supported when every fact it states is also in a
  passage it cites (the text of the cited source's passages the answer was given). Claims that
  state none are not judged; unanswerable questions have none. This is independent of the
  engine's own check of its citations.
- only markers: answers that say nothing besides "[1]"; ms: wall time of plan, produce, cite.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx

from bench import evidence_sets as sets
from bench.common import machine, percentile, table
from bench.eval_answers import _engine
from bench.eval_retrieval import Ingested, Upload, ingested, read_collection
from docchat.answers.engine import AnswerEngine
from docchat.answers.meta import AnswerMeta
from docchat.answers.values import AnswerOptions, Generated, Question
from docchat.config import LLMSettings
from docchat.kit.errors import DocchatError
from docchat.retrieval.schemas import Source

DATASETS = Path(__file__).parent / "datasets"
TOP_K = 4
Mode = Literal["auto", "generative", "extractive"]


@dataclass(frozen=True)
class Run:
    label: str
    settings: LLMSettings
    mode: Mode
    # Questions of each set asked (None: all).
    sample: int | None
    # The model at `settings.base_url` answers (waited for before its questions).
    calls_model: bool = False


@dataclass
class Outcome:
    content: str
    sources: list[Source]
    meta: AnswerMeta
    # The text of each source (1-based, as the answer's markers number them).
    passages: dict[int, str]
    milliseconds: float
    failed: bool = False
    # Every passage the answer was given, as "document name: text" (for --answers-out).
    given: tuple[str, ...] = ()


@dataclass
class Tally:
    unanswerable: int = 0
    unanswerable_grounded: int = 0
    unanswerable_partial: int = 0
    by_kind: dict[str, list[int]] = field(default_factory=dict)  # kind: [grounded, asked]
    answerable: int = 0
    answerable_not_in_documents: int = 0
    answerable_holds: int = 0
    conflicts: int = 0
    conflicts_shown: int = 0
    conflicts_in_meta: int = 0
    conflicts_in_text: int = 0
    conflicts_both_cited: int = 0
    conflicts_newer_marked: int = 0
    claims_judged: int = 0
    claims_supported: int = 0
    bare: int = 0
    failed: int = 0
    milliseconds: list[float] = field(default_factory=list)

    @property
    def asked(self) -> int:
        return self.unanswerable + self.answerable + self.conflicts

    def row(self, label: str) -> list[str]:
        return [
            label,
            _share(self.unanswerable_grounded, self.unanswerable),
            _share(self.unanswerable_partial, self.unanswerable),
            _share(self.answerable_not_in_documents, self.answerable),
            _share(self.answerable_holds, self.answerable),
            _share(self.conflicts_shown, self.conflicts),
            f"{_share(self.claims_supported, self.claims_judged)} of {self.claims_judged}",
            _share(self.bare, self.asked),
            f"{percentile(self.milliseconds, 50):.0f} / {percentile(self.milliseconds, 95):.0f}",
        ]

    def conflict_row(self, label: str) -> list[str]:
        return [
            label,
            _share(self.conflicts_in_meta, self.conflicts),
            _share(self.conflicts_in_text, self.conflicts),
            _share(self.conflicts_both_cited, self.conflicts),
            f"{self.conflicts_newer_marked} of {self.conflicts_shown}",
        ]

    def kind_row(self, label: str) -> list[str]:
        cells = [label]
        for kind in sets.KINDS:
            grounded, asked = self.by_kind.get(kind, [0, 0])
            cells.append(f"{grounded} / {asked}")
        return cells


def _share(count: int, total: int) -> str:
    return f"{count / total:.1%}" if total else "-"


def _spread(items: Sequence[Any], count: int | None) -> list[Any]:
    if count is None or count >= len(items):
        return list(items)
    step = len(items) / count
    return [items[int(index * step)] for index in range(count)]


# -- asking -------------------------------------------------------------------------------------


async def _answers(
    engine: AnswerEngine, ingest: Ingested, text: str, runs: Sequence[Run]
) -> list[Outcome]:
    """The answer of each run in `runs`: one plan and one generation (in the first run's mode),
    cited in each run's mode (a group of runs shares a generation only with
    --share-generation, where the modes differ in `cite` alone)."""
    first = runs[0]
    options = AnswerOptions(
        rag_enabled=True, top_k=TOP_K, model=first.settings.model, answer_mode=first.mode
    )
    question = Question(text=text, history=[], documents=ingest.scope, options=options, scope="all")
    started = time.perf_counter()
    plan = await engine.plan(question)
    generated: Generated | None = None
    try:
        async for item in engine.produce(question, plan, streaming=False):
            if isinstance(item, Generated):
                generated = item
    except DocchatError:  # the model failed: no answer
        elapsed = (time.perf_counter() - started) * 1000
        return [Outcome("", [], plan.meta, {}, elapsed, failed=True) for _ in runs]
    assert generated is not None
    produced = time.perf_counter() - started
    by_place: dict[tuple[str, int | None, str | None], list[str]] = {}
    for entry in plan.entries:
        place = (str(entry.source.document_id), entry.source.page, entry.source.location)
        by_place.setdefault(place, []).append(entry.text)
    outcomes = []
    for run in runs:
        asked = dataclasses.replace(
            question, options=dataclasses.replace(options, answer_mode=run.mode)
        )
        cite_started = time.perf_counter()
        cited = engine.cite(asked, plan, generated.content)
        elapsed = (produced + time.perf_counter() - cite_started) * 1000
        sources = cited.sources or []
        passages = {
            number: "\n".join(by_place.get((str(s.document_id), s.page, s.location), []))
            for number, s in enumerate(sources, start=1)
        }
        given = tuple(f"{entry.source.document_name}: {entry.text}" for entry in plan.entries)
        outcomes.append(Outcome(cited.content, sources, cited.meta, passages, elapsed, given=given))
    return outcomes


def _groups(runs: Sequence[Run], share: bool) -> list[list[Run]]:
    """Runs answered from one generation: with `share`, those of the same model."""
    groups: list[list[Run]] = []
    for run in runs:
        if share and run.calls_model and groups and groups[-1][0].settings == run.settings:
            groups[-1].append(run)
        else:
            groups.append([run])
    return groups


def _claims_grounded(meta: AnswerMeta) -> bool:
    if meta.evidence is not None:
        return meta.evidence == "answered"
    return meta.grounded


def _called_not_in_documents(meta: AnswerMeta) -> bool:
    if meta.evidence is not None:
        return meta.evidence == "not_in_documents"
    return not meta.grounded


def _count_claims(tally: Tally, outcome: Outcome, facts: list[tuple[str, ...]]) -> list[bool]:
    verdicts = []
    for claim in sets.claims(outcome.content):
        verdict = sets.supported(claim, facts, outcome.passages)
        if verdict is not None:
            verdicts.append(verdict)
    tally.claims_judged += len(verdicts)
    tally.claims_supported += sum(verdicts)
    return verdicts


def _common(tally: Tally, outcome: Outcome) -> None:
    tally.milliseconds.append(outcome.milliseconds)
    tally.bare += sets.is_bare(outcome.content)
    tally.failed += outcome.failed


class Recorder:
    """Keeps each answer and its judgement (--answers-out)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.rows: list[dict[str, Any]] = []

    def add(self, run: Run, item: str, text: str, outcome: Outcome, **judged: Any) -> None:
        if self.path is None:
            return
        self.rows.append(
            {
                "mode": run.label,
                "id": item,
                "question": text,
                "answer": outcome.content,
                "sources": [source.document_name for source in outcome.sources],
                "meta": outcome.meta.model_dump(mode="json", exclude_none=True),
                "ms": round(outcome.milliseconds),
                "given": list(outcome.given),
                **judged,
            }
        )

    def write(self) -> None:
        if self.path is None:
            return
        with self.path.open("w", encoding="utf-8") as out:
            for row in self.rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")


async def _wait_for_model(run: Run, minutes: float = 60) -> None:
    """A model server still starting (bench/real_model.sh builds llama.cpp first) is waited
    for, so a run may be started while it builds: the ingestion takes a while too."""
    if not run.calls_model:
        return
    deadline = time.monotonic() + minutes * 60
    async with httpx.AsyncClient(timeout=10) as client:
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(f"{run.settings.base_url}/models")).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise SystemExit(f"no model answers at {run.settings.base_url}")
            await asyncio.sleep(15)


async def _ask_collections(
    ingest: Ingested,
    groups: Sequence[Sequence[Run]],
    tallies: dict[str, Tally],
    recorder: Recorder,
) -> None:
    unanswerable, answerable = sets.unanswerable(), sets.answerable()
    for runs in groups:
        await _wait_for_model(runs[0])
        engine = _engine(ingest, runs[0].settings)
        for question in _spread(unanswerable, runs[0].sample):
            outcomes = await _answers(engine, ingest, question.text, runs)
            for run, outcome in zip(runs, outcomes, strict=True):
                _judge_unanswerable(tallies[run.label], run, question, outcome, recorder)
        for control in _spread(answerable, runs[0].sample):
            outcomes = await _answers(engine, ingest, control.text, runs)
            for run, outcome in zip(runs, outcomes, strict=True):
                _judge_answerable(tallies[run.label], run, control, outcome, recorder)
        for run in runs:
            tally = tallies[run.label]
            print(f"  {run.label}: {tally.unanswerable + tally.answerable} questions", flush=True)
        await engine.llm.close()


def _judge_unanswerable(
    tally: Tally, run: Run, question: sets.Unanswerable, outcome: Outcome, recorder: Recorder
) -> None:
    grounded = _claims_grounded(outcome.meta)
    tally.unanswerable += 1
    tally.unanswerable_grounded += grounded
    tally.unanswerable_partial += outcome.meta.evidence == "partial"
    counts = tally.by_kind.setdefault(question.kind, [0, 0])
    counts[0] += grounded
    counts[1] += 1
    _common(tally, outcome)
    recorder.add(run, question.id, question.text, outcome, answered_as_grounded=grounded)


def _judge_answerable(
    tally: Tally, run: Run, control: sets.Answerable, outcome: Outcome, recorder: Recorder
) -> None:
    refused = _called_not_in_documents(outcome.meta)
    holds = sets.holds_any(outcome.content, control.answers)
    tally.answerable += 1
    tally.answerable_not_in_documents += refused
    tally.answerable_holds += holds
    verdicts = _count_claims(tally, outcome, [control.answers])
    _common(tally, outcome)
    recorder.add(
        run,
        control.id,
        control.text,
        outcome,
        called_not_in_documents=refused,
        holds_answer=holds,
        claims_supported=verdicts,
    )


def _side_covers(
    side: Any, index: int, pair: sets.ConflictPair, documents_of: dict[int, int]
) -> bool:
    document = pair.documents[index]
    return (
        sets.holds_any(str(side.value), document.variants)
        or documents_of.get(int(side.source)) == index
    )


async def _ask_conflicts(
    ingest: Ingested,
    groups: Sequence[Sequence[Run]],
    tallies: dict[str, Tally],
    recorder: Recorder,
) -> None:
    pairs = sets.conflicts()
    for runs in groups:
        await _wait_for_model(runs[0])
        engine = _engine(ingest, runs[0].settings)
        for pair in _spread(pairs, runs[0].sample):
            outcomes = await _answers(engine, ingest, pair.text, runs)
            for run, outcome in zip(runs, outcomes, strict=True):
                _judge_conflict(tallies[run.label], run, pair, outcome, ingest, recorder)
        for run in runs:
            print(f"  {run.label}: {tallies[run.label].conflicts} conflicts", flush=True)
        await engine.llm.close()


def _judge_conflict(
    tally: Tally,
    run: Run,
    pair: sets.ConflictPair,
    outcome: Outcome,
    ingest: Ingested,
    recorder: Recorder,
) -> None:
    # [n] -> which of the pair's two documents it cites (absent: another pair's)
    documents_of: dict[int, int] = {}
    for number, source in enumerate(outcome.sources, start=1):
        for unit in ingest.units_of_chunk.get(source.chunk_id, frozenset()):
            pair_id, _, index = unit.rpartition(".")
            if pair_id == pair.id:
                documents_of[number] = int(index)
    in_meta, newer_marked = False, False
    newer = pair.documents.index(pair.newer)
    for conflict in outcome.meta.conflicts or []:
        covers = [
            {i for i in (0, 1) if _side_covers(side, i, pair, documents_of)}
            for side in conflict.sides
        ]
        if {0, 1} <= set().union(*covers):
            in_meta = True
            newest = [c for c, side in zip(covers, conflict.sides, strict=True) if side.newest]
            newer_marked = any(newer in c for c in newest)
    in_text = all(sets.holds_any(outcome.content, d.variants) for d in pair.documents)
    both_cited = set(documents_of.values()) == {0, 1}
    tally.conflicts += 1
    tally.conflicts_in_meta += in_meta
    tally.conflicts_in_text += in_text
    tally.conflicts_shown += in_meta and in_text
    tally.conflicts_both_cited += both_cited
    tally.conflicts_newer_marked += in_meta and in_text and newer_marked
    facts = [document.variants for document in pair.documents]
    verdicts = _count_claims(tally, outcome, facts)
    _common(tally, outcome)
    recorder.add(
        run,
        pair.id,
        pair.text,
        outcome,
        conflict_in_meta=in_meta,
        both_values_in_text=in_text,
        both_cited=both_cited,
        claims_supported=verdicts,
    )


def _conflict_uploads(folder: Path) -> list[Upload]:
    uploads = []
    for pair in sets.conflicts():
        for index, document in enumerate(pair.documents):
            data, content_type = sets.render(document)
            path = folder / document.filename
            path.write_bytes(data)
            uploads.append(
                Upload(
                    f"{pair.id}.{index}",
                    document.filename,
                    "",
                    file=path,
                    content_type=content_type,
                )
            )
    return uploads


def _runs(
    llm_url: str | None, llm_model: str, builtin_url: str | None, model_sample: int | None
) -> list[Run]:
    dead = LLMSettings(_env_file=None, base_url="http://127.0.0.1:9/v1", max_retries=0)  # type: ignore[call-arg]
    builtin = LLMSettings(  # type: ignore[call-arg]
        _env_file=None,
        base_url=builtin_url or "http://127.0.0.1:9/v1",
        builtin=True,
        max_retries=0,
        timeout_seconds=120,
    )
    runs = [
        Run("extractive", dead, "extractive", None),
        Run("auto, built-in model (the default)", builtin, "auto", None),
    ]
    if llm_url:
        model = LLMSettings(  # type: ignore[call-arg]
            _env_file=None,
            base_url=llm_url,
            model=llm_model,
            max_retries=0,
            timeout_seconds=180,
            context_window=8192,
            max_tokens=512,
        )
        runs.append(Run(f"generative, {llm_model}", model, "generative", model_sample, True))
        runs.append(Run(f"auto, {llm_model}", model, "auto", model_sample, True))
    return runs


async def evaluate(
    llm_url: str | None,
    llm_model: str,
    builtin_url: str | None,
    model_sample: int | None,
    only: Sequence[str],
    answers_out: Path | None,
    share_generation: bool = False,
) -> None:
    runs = [
        run for run in _runs(llm_url, llm_model, builtin_url, model_sample) if _chosen(run, only)
    ]
    tallies = {run.label: Tally() for run in runs}
    groups = _groups(runs, share_generation)
    recorder = Recorder(answers_out)
    squad = read_collection(DATASETS / "squad-dev", "articles")
    manual = read_collection(DATASETS / "postgresql-manual", "passages")
    async with ingested([*squad.uploads, *manual.uploads]) as ingest:
        print(
            f"ingested {len(squad.uploads)} SQuAD articles and {len(manual.uploads)} manual "
            f"pages ({ingest.chunks} chunks) in {ingest.seconds:.0f} s",
            flush=True,
        )
        collection_chunks = ingest.chunks
        await _ask_collections(ingest, groups, tallies, recorder)
    with tempfile.TemporaryDirectory() as folder:
        uploads = _conflict_uploads(Path(folder))
        async with ingested(uploads) as ingest:
            print(
                f"ingested {len(uploads)} conflicting documents ({ingest.chunks} chunks)",
                flush=True,
            )
            await _ask_conflicts(ingest, groups, tallies, recorder)
    recorder.write()
    _print(runs, tallies, collection_chunks)


def _chosen(run: Run, only: Sequence[str]) -> bool:
    return not only or any(word in run.label for word in only)


def _print(runs: Sequence[Run], tallies: dict[str, Tally], chunks: int) -> None:
    counts = {
        run.label: f"{tallies[run.label].unanswerable}/{tallies[run.label].answerable}/"
        f"{tallies[run.label].conflicts}"
        for run in runs
    }
    print()
    print(
        "Evidence: unanswerable / answerable / conflicting questions asked per mode: "
        + "; ".join(f"{label} {count}" for label, count in counts.items())
        + f". SQuAD dev articles and the PostgreSQL manual ({chunks} chunks), 80 conflicting "
        f"documents; top_k {TOP_K}; {machine()}"
    )
    print(
        table(
            [
                "mode",
                "unanswerable answered as grounded (<= 10%)",
                "unanswerable partial",
                "answerable called not_in_documents (<= 3%)",
                "answerable holds a gold answer",
                "conflicts shown (>= 80%)",
                "cited claims supported (>= 95%)",
                "only markers",
                "ms p50 / p95",
            ],
            [tallies[run.label].row(run.label) for run in runs],
        )
    )
    print()
    print("Conflicts in detail")
    print(
        table(
            [
                "mode",
                "meta.conflicts has both",
                "text holds both values",
                "both documents cited",
                "newer marked (of shown)",
            ],
            [tallies[run.label].conflict_row(run.label) for run in runs],
        )
    )
    print()
    print("Unanswerable answered as grounded, by kind")
    print(
        table(
            ["mode", *sets.KINDS],
            [tallies[run.label].kind_row(run.label) for run in runs],
        )
    )
    failed = {run.label: tallies[run.label].failed for run in runs if tallies[run.label].failed}
    if failed:
        print(f"model calls that failed (no answer, counted as not grounded): {failed}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--llm-url", default=None, help="an OpenAI-compatible model to measure")
    parser.add_argument("--llm-model", default="qwen2.5-1.5b")
    parser.add_argument("--builtin-url", default=None, help="a running built-in model (optional)")
    parser.add_argument(
        "--model-sample", type=int, default=20, help="questions of each set the model answers"
    )
    parser.add_argument(
        "--only", default="", help="comma-separated words: run only the modes whose label has one"
    )
    parser.add_argument("--answers-out", type=Path, default=None, help="write each answer (JSONL)")
    parser.add_argument(
        "--share-generation",
        action="store_true",
        help="the model's generative and auto rows cite one generation (half the model's time; "
        "right while the two modes differ only in cite)",
    )
    arguments = parser.parse_args()
    asyncio.run(
        evaluate(
            arguments.llm_url,
            arguments.llm_model,
            arguments.builtin_url,
            arguments.model_sample,
            [word for word in arguments.only.split(",") if word],
            arguments.answers_out,
            arguments.share_generation,
        )
    )
