"""Calibrate "nothing matches": the similarity floor below which a question gets a general answer.

    .venv/bin/python -m bench.calibrate_floor [--dataset DIR] [--queries sample|all|N]

Half of the collection's articles (every other one) are uploaded whole, through the API and the
real worker; questions about those are answerable, questions about the other half are not (their
article is absent). Each question is searched by the service's own retriever with its default
settings and no floor; a question is answered from documents when one of its candidate
passages has a match score (cosine similarity, plus a weight times the share of the question's
BM25 weight the passage matches) at or above the floor. For a range of floors this
prints how often an answerable question would wrongly get a general answer and how often a
question about an absent article would wrongly be answered from documents.
Targets: at most 2% and at most 10%.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from bench.common import machine, table
from bench.eval_retrieval import (
    DEFAULT_DATASET,
    ingested,
    pick_queries,
    read_collection,
    unfloored_retriever,
)
from docchat.config import FusionSettings, SearchSettings
from docchat.retrieval.retriever import CALIBRATED_MATCH_FLOOR

FLOORS = [round(0.3 + 0.025 * step, 3) for step in range(0, 15)]
EVIDENCE_WEIGHTS = [0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0]
MOST_WRONGLY_GENERAL = 0.02
# Every fused candidate, so that a passage past the first few that passes the floor counts.
ALL_CANDIDATES = 50

Passages = list[tuple[float, float]]  # (cosine similarity, BM25 coverage) of each candidate


def best_match(passages: Passages, evidence: float) -> float:
    return max(
        (cosine + evidence * min(coverage, 1.0) for cosine, coverage in passages), default=-9
    )


def rates(answerable: list[float], absent: list[float], floor: float) -> tuple[float, float]:
    wrongly_general = sum(value < floor for value in answerable) / len(answerable)
    wrongly_grounded = sum(value >= floor for value in absent) / len(absent)
    return wrongly_general, wrongly_grounded


def highest_safe_floor(answerable: list[float]) -> float:
    """The highest floor (in steps of 0.005) leaving at most 2% of answerable questions general."""
    floor = 0.0
    while rates(answerable, [0.0], floor + 0.005)[0] <= MOST_WRONGLY_GENERAL:
        floor += 0.005
    return round(floor, 3)


async def search_all(folder: Path, which: str) -> tuple[str, dict[str, list[Passages]]]:
    """Every question's candidates (cosine, coverage), by whether its article is uploaded."""
    collection = read_collection(folder, "articles")
    uploaded = collection.uploads[::2]
    present = {upload.key for upload in uploaded}
    fusion = FusionSettings(_env_file=None)  # type: ignore[call-arg]
    found: dict[str, list[Passages]] = {"answerable": [], "absent": []}
    async with ingested(uploaded) as ingest:
        retriever = unfloored_retriever(ingest.components)
        for query_id in pick_queries(folder, collection, which):
            paragraph = next(iter(collection.qrels[query_id]))
            side = "answerable" if paragraph.rsplit("-", 1)[0] in present else "absent"
            question = collection.queries[query_id]
            result = await retriever.search(question, ingest.scope, ALL_CANDIDATES)
            found[side].append([(hit.similarity, hit.lexical_coverage) for hit in result.chunks])
    title = (
        f"{folder.name}: {len(uploaded)} of {len(collection.uploads)} articles uploaded "
        f"({ingest.chunks} chunks); {len(found['answerable'])} answerable questions, "
        f"{len(found['absent'])} about absent articles; retrieval {fusion.fusion}; {machine()}"
    )
    return title, found


def report(title: str, found: dict[str, list[Passages]]) -> None:
    search = SearchSettings(_env_file=None)  # type: ignore[call-arg]
    default_floor = CALIBRATED_MATCH_FLOOR["hybrid" if search.hybrid else "vector"]
    default_floor = default_floor if search.match_floor is None else search.match_floor
    print(title)
    answerable = [best_match(p, search.lexical_evidence) for p in found["answerable"]]
    absent = [best_match(p, search.lexical_evidence) for p in found["absent"]]
    rows = []
    for floor in sorted({*FLOORS, default_floor}):
        general, grounded = rates(answerable, absent, floor)
        mark = " (default)" if abs(floor - default_floor) < 1e-9 else ""
        rows.append([f"{floor:.3f}{mark}", f"{general:.1%}", f"{grounded:.1%}"])
    print(f"Match score = cosine + {search.lexical_evidence} x BM25 coverage:")
    print(table(["floor", "answerable, wrongly general", "absent, wrongly grounded"], rows))
    rows = []
    for evidence in EVIDENCE_WEIGHTS:
        answerable = [best_match(p, evidence) for p in found["answerable"]]
        absent = [best_match(p, evidence) for p in found["absent"]]
        floor = highest_safe_floor(answerable)
        general, grounded = rates(answerable, absent, floor)
        rows.append([f"{evidence}", f"{floor:.3f}", f"{general:.1%}", f"{grounded:.1%}"])
    print("Each weight of the BM25 evidence at the highest floor leaving at most 2% general:")
    print(
        table(
            ["BM25 evidence weight", "floor", "wrongly general", "wrongly grounded"],
            rows,
        )
    )


async def main(folder: Path, which: str, save: Path | None, load: Path | None) -> None:
    if load is not None:
        saved = json.loads(await asyncio.to_thread(load.read_text))
        report(saved["title"], saved["found"])
        return
    title, found = await search_all(folder, which)
    if save is not None:
        payload = json.dumps({"title": title, "found": found})
        await asyncio.to_thread(save.write_text, payload)
    report(title, found)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--queries", default="sample", help="sample (1,000), all, or a count")
    parser.add_argument("--save", type=Path, help="write every question's candidates (JSON)")
    parser.add_argument("--load", type=Path, help="report on candidates saved by --save")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.dataset, arguments.queries, arguments.save, arguments.load))
