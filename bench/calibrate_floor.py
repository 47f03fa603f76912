"""Calibrate "nothing matches": the similarity floor below which a question gets a general answer.

    .venv/bin/python -m bench.calibrate_floor [--dataset DIR] [--queries sample|all|N]

Half of the collection's articles (every other one) are uploaded whole, through the API and the
real worker; questions about those are answerable, questions about the other half are not (their
article is absent). Each question is searched by the service's own retriever with its default
settings and no floor; a question is answered from documents when one of the `RAG_TOP_K`
passages it keeps has a cosine similarity at or above the floor. For a range of floors this
prints how often an answerable question would wrongly get a general answer and how often a
question about an absent article would wrongly be answered from documents.
Targets: at most 2% and at most 10%.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from bench.common import machine, table
from bench.eval_retrieval import DEFAULT_DATASET, ingested, pick_queries, read_collection
from docchat.config import RAGSettings
from docchat.retrieval.retriever import Retriever

FLOORS = [round(0.05 * step, 2) for step in range(0, 15)]


async def main(folder: Path, which: str) -> None:
    collection = read_collection(folder, "articles")
    uploaded = collection.uploads[::2]
    present = {upload.key for upload in uploaded}
    rag = RAGSettings(_env_file=None)  # type: ignore[call-arg]
    best: dict[bool, list[float]] = {True: [], False: []}
    async with ingested(uploaded) as ingest:
        parts = ingest.components
        retriever = Retriever.from_settings(
            rag.model_copy(update={"similarity_floor": -1.0}),
            parts.embedder,
            parts.vector_index,
            parts.lexical,
        )
        for query_id in pick_queries(folder, collection, which):
            paragraph = next(iter(collection.qrels[query_id]))
            is_answerable = paragraph.rsplit("-", 1)[0] in present
            result = await retriever.search(collection.queries[query_id], ingest.scope, rag.top_k)
            best[is_answerable].append(max((hit.similarity for hit in result.chunks), default=-1.0))
    answerable, absent = best[True], best[False]
    rows = []
    for floor in FLOORS:
        wrongly_general = sum(value < floor for value in answerable) / len(answerable)
        wrongly_grounded = sum(value >= floor for value in absent) / len(absent)
        mark = " (default)" if abs(floor - rag.similarity_floor) < 1e-9 else ""
        rows.append([f"{floor:.2f}{mark}", f"{wrongly_general:.1%}", f"{wrongly_grounded:.1%}"])
    print(
        f"{folder.name}: {len(uploaded)} of {len(collection.uploads)} articles uploaded "
        f"({ingest.chunks} chunks); {len(answerable)} answerable questions, {len(absent)} about "
        f"absent articles; retrieval {rag.fusion}, top {rag.top_k}; {machine()}"
    )
    print(table(["floor", "answerable, wrongly general", "absent article, wrongly grounded"], rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--queries", default="sample", help="sample (1,000), all, or a count")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.dataset, arguments.queries))
