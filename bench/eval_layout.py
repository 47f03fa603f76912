"""Facts that sit in a PDF's table cells and second columns: found, cited where they are, and
highlighted, before and after a change, in one run.

    .venv/bin/python -m bench.eval_layout [--before REV]

Real PDFs from public sources (bench/datasets/layout/README.md) are uploaded and ingested by
the real worker (its reader in its sandbox, 1000/200 chunks, MiniLM, Chroma, BM25) into a fresh
database; each of the 61 facts' questions is then answered by the keyless default
(`extractive`) over all of them. Per fact:

- **found**: the first source (the best passage retrieved) is of the fact's document and holds
  the fact;
- **cited where it is**: a cited source of that document holds it, on its page, and for a
  fact in a table is located as table rows ("table 1, rows 2-5");
- **highlighted**: that source's highlight shows it.

`--before REV` measures that revision's reader too (a git worktree of REV, whose `backend` this
program then runs in a process of its own, the worker's sandbox included), and prints both.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.common import ROOT, machine, table, worktree

DATASET = ROOT / "bench" / "datasets" / "layout"
# The two government reports are also the table reader's test files.
FILES = {
    "fbi-nics-background-checks-2015-11.pdf": ROOT / "tests" / "fixtures" / "pdf",
    "usda-ag-energy-round-up-2017-02-24.pdf": ROOT / "tests" / "fixtures" / "pdf",
}


@dataclass(frozen=True)
class Fact:
    file: str
    question: str
    answers: tuple[str, ...]
    page: int
    where: str  # "table" or "column"

    @property
    def path(self) -> Path:
        return FILES.get(self.file, DATASET) / self.file


@dataclass(frozen=True)
class Scored:
    where: str
    found: bool
    cited: bool
    highlighted: bool


def read_facts() -> list[Fact]:
    with (DATASET / "facts.jsonl").open(encoding="utf-8") as lines:
        return [
            Fact(**{**entry, "answers": tuple(entry["answers"])})
            for entry in map(json.loads, lines)
        ]


def _holds(text: str | None, answers: Sequence[str]) -> bool:
    flat = " ".join((text or "").split())
    return any(answer in flat for answer in answers)


async def measure(facts: Sequence[Fact], show: bool = False) -> tuple[list[Scored], float]:
    """Each fact scored over one ingestion of their files, and the ingestion's seconds."""
    from bench.eval_answers import _answers, _engine
    from bench.eval_retrieval import Upload, ingested
    from docchat.config import LLMSettings

    paths = sorted({fact.path for fact in facts})
    uploads = [
        Upload(path.name, path.name, "", file=path, content_type="application/pdf")
        for path in paths
    ]
    dead = LLMSettings(_env_file=None, base_url="http://127.0.0.1:9/v1", max_retries=0)  # type: ignore[call-arg]
    scored: list[Scored] = []
    async with ingested(uploads) as ingest:
        chunks = await ingest.components.lexical.document_chunks(ingest.scope)
        texts = {chunk.id: chunk.text for chunk in chunks}
        engine = _engine(ingest, dead)
        for fact in facts:
            ((content, sources, candidates, _),) = await _answers(
                engine, ingest, fact.question, dead.model, ["extractive"]
            )
            first = candidates[0] if candidates else None
            found = (
                first is not None
                and first.document_name == fact.file
                and _holds(texts.get(first.chunk_id), fact.answers)
            )
            placed = next(
                (
                    source
                    for source in sources
                    if source.document_name == fact.file
                    and source.page == fact.page
                    and (fact.where != "table" or (source.location or "").startswith("table"))
                    and _holds(texts.get(source.chunk_id), fact.answers)
                ),
                None,
            )
            highlighted = (
                placed is not None
                and placed.highlight is not None
                and _holds(placed.highlight.text, fact.answers)
            )
            scored.append(Scored(fact.where, found, placed is not None, highlighted))
            if show and not (found and highlighted):
                mark = placed.highlight.text if placed and placed.highlight else None
                print(
                    f"MISS {fact.question} {fact.answers}: first "
                    f"{first.document_name if first else None} p{first.page if first else None} "
                    f"{first.location if first else None}; cited "
                    f"{[(s.page, s.location) for s in sources]}; highlight {mark!r}; "
                    f"answer {' '.join(content.split())[:160]!r}",
                    flush=True,
                )
        await engine.llm.close()
    return scored, ingest.seconds


def _rows(label: str, scored: Sequence[Scored]) -> list[list[str]]:
    rows = []
    for where in ("table", "column", "all"):
        chosen = [score for score in scored if where in ("all", score.where)]
        if not chosen:
            continue

        def share(count: int, of: Sequence[Scored] = chosen) -> str:
            return f"{count / len(of):.0%} ({count}/{len(of)})"

        rows.append(
            [
                label,
                {"table": "in a table", "column": "in a column", "all": "all"}[where],
                share(sum(score.found for score in chosen)),
                share(sum(score.cited for score in chosen)),
                share(sum(score.highlighted for score in chosen)),
            ]
        )
    return rows


def _measured_by(revision: str, show: bool) -> tuple[list[Scored], float]:
    """This program's measure, run on `revision`'s backend in a process of its own."""
    with worktree(revision) as tree, tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "scored.json"
        env = {**os.environ, "PYTHONPATH": f"{tree / 'backend'}{os.pathsep}{ROOT}"}
        command = [sys.executable, "-m", "bench.eval_layout", "--json", str(out)]
        command += ["--show"] if show else []
        subprocess.run(command, env=env, cwd=ROOT, check=True)
        result = json.loads(out.read_text())
    return [Scored(**entry) for entry in result["scored"]], float(result["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", help="a git revision to measure too (a worktree of it)")
    parser.add_argument("--json", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--show", action="store_true", help="print each fact not highlighted")
    arguments = parser.parse_args()
    facts = read_facts()
    if arguments.json is not None:
        scored, seconds = asyncio.run(measure(facts, arguments.show))
        body = {"scored": [asdict(score) for score in scored], "seconds": seconds}
        arguments.json.write_text(json.dumps(body))
        return
    runs: list[tuple[str, list[Scored], float]] = []
    if arguments.before:
        runs.append(
            (f"before ({arguments.before})", *_measured_by(arguments.before, arguments.show))
        )
    runs.append(("now", *asyncio.run(measure(facts, arguments.show))))
    files = len({fact.file for fact in facts})
    print(f"{len(facts)} facts in {files} real PDFs, keyless (extractive) answers; {machine()}")
    print(
        table(
            ["reader", "facts", "found (first source)", "cited where it is", "highlighted"],
            [row for label, scored, _ in runs for row in _rows(label, scored)],
        )
    )
    print(
        table(
            ["reader", "ingestion of the files, s"],
            [[label, f"{seconds:.1f}"] for label, _, seconds in runs],
        )
    )


if __name__ == "__main__":
    main()
