"""Retrieval quality: BM25 alone, vector alone (MiniLM) and docchat's hybrid, side by side.

    .venv/bin/python -m bench.eval_retrieval --dataset DIR [--max-queries 300]

DIR is a retrieval test collection in the BEIR layout: `corpus.jsonl` (`_id`, `title`,
`text`), `queries.jsonl` (`_id`, `text`) and `qrels/test.tsv` (`query-id`, `corpus-id`,
`score`, with a header line). Every corpus entry is uploaded as a document through the API
and ingested by the real worker (extraction, 1000/200 chunking, MiniLM, Chroma, the
PostgreSQL lexical index) into a fresh database; each query is then answered by the three
retrievers over the same scope (all the user's documents). Chunks are mapped back to their
documents (a document ranks where its best chunk ranks) and scored against the judgements:
recall@1/4/10, MRR@10 and nDCG@10.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import math
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import httpx
from tests.support.users import auth_headers

from bench.common import (
    build_components,
    build_settings,
    drop_database,
    fresh_database,
    machine,
    table,
)
from docchat.app import attach_components, create_app
from docchat.ingestion.worker import IngestionWorker
from docchat.llm.embeddings import LocalMiniLMEmbedder
from docchat.retrieval.index import DocumentRef
from docchat.retrieval.query_embedding import embed_query
from docchat.retrieval.retriever import Retriever

DEPTH = 10


def read_collection(
    folder: Path,
) -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, int]]]:
    corpus = {}
    with (folder / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            entry = json.loads(line)
            corpus[str(entry["_id"])] = "\n\n".join(
                part for part in (entry.get("title"), entry.get("text")) if part
            )
    queries = {}
    with (folder / "queries.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            entry = json.loads(line)
            queries[str(entry["_id"])] = str(entry["text"])
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / "test.tsv").open(encoding="utf-8") as rows:
        for row in csv.DictReader(rows, delimiter="\t"):
            if int(row["score"]) > 0:
                qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return corpus, queries, qrels


def documents_in_order(corpus_ids: Sequence[str]) -> list[str]:
    """A document ranks where its best chunk ranks."""
    seen: list[str] = []
    for corpus_id in corpus_ids:
        if corpus_id not in seen:
            seen.append(corpus_id)
    return seen


def scores(ranking: Sequence[str], relevant: dict[str, int]) -> dict[str, float]:
    found = [corpus_id in relevant for corpus_id in ranking[:DEPTH]]
    total = len(relevant)
    first = next((rank for rank, hit in enumerate(found, start=1) if hit), None)
    gains = [relevant.get(corpus_id, 0) for corpus_id in ranking[:DEPTH]]
    dcg = sum((2**gain - 1) / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))
    ideal = sorted(relevant.values(), reverse=True)[:DEPTH]
    idcg = sum((2**gain - 1) / math.log2(rank + 1) for rank, gain in enumerate(ideal, start=1))
    return {
        "recall@1": sum(found[:1]) / total,
        "recall@4": sum(found[:4]) / total,
        "recall@10": sum(found[:10]) / total,
        "mrr@10": 1 / first if first else 0.0,
        "ndcg@10": dcg / idcg if idcg else 0.0,
    }


async def main(folder: Path, max_queries: int) -> None:
    corpus, queries, qrels = read_collection(folder)
    judged = [query_id for query_id in queries if query_id in qrels][:max_queries]
    embedder = LocalMiniLMEmbedder()
    url = await fresh_database()
    totals: dict[str, dict[str, float]] = {}
    try:
        with tempfile.TemporaryDirectory() as data:
            settings = build_settings(url, Path(data))
            components, engine = build_components(settings, embedder)
            app = create_app(settings, run_worker=False)
            attach_components(app, components)
            started = time.perf_counter()
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://eval", timeout=120
            ) as client:
                headers = await auth_headers(client)
                names: dict[str, str] = {}
                for corpus_id, text in corpus.items():
                    response = await client.post(
                        "/api/v1/documents",
                        headers=headers,
                        files={"file": (f"{corpus_id}.txt", text.encode(), "text/plain")},
                    )
                    response.raise_for_status()
                    names[response.json()["id"]] = corpus_id
                await IngestionWorker(components).run_until_idle(max_jobs=len(corpus) + 10)
                listing = await client.get("/api/v1/documents?limit=1", headers=headers)
                owner = listing.json()["items"][0]["owner_id"]
            ingest_seconds = time.perf_counter() - started
            scope = [DocumentRef(uuid.UUID(i), uuid.UUID(owner)) for i in names]
            index = components.lexical
            hybrid = Retriever(
                embedder, components.vector_index, similarity_floor=-1.0, lexical=index
            )
            for query_id in judged:
                question = queries[query_id]
                vector = await embed_query(embedder, question)
                rankings = {
                    "BM25 alone": [
                        names[str(hit.chunk.document_id)]
                        for hit in await index.search(scope, question, 50)
                    ],
                    "vector alone (MiniLM)": [
                        names[str(hit.chunk.document_id)]
                        for hit in await components.vector_index.query(vector, scope, 50)
                    ],
                    "docchat hybrid": [
                        names[str(hit.chunk.document_id)]
                        for hit in (await hybrid.search(question, scope, 50)).chunks
                    ],
                }
                for label, ranking in rankings.items():
                    for metric, value in scores(
                        documents_in_order(ranking), qrels[query_id]
                    ).items():
                        totals.setdefault(label, {}).setdefault(metric, 0.0)
                        totals[label][metric] += value
            await engine.dispose()  # type: ignore[attr-defined]
    finally:
        await drop_database(url)
    metrics = ["recall@1", "recall@4", "recall@10", "mrr@10", "ndcg@10"]
    print(
        f"Retrieval quality on {folder.name}: {len(corpus)} documents, {len(judged)} judged "
        f"queries; ingestion {ingest_seconds:.0f} s; {machine()}"
    )
    print(
        table(
            ["retriever", *metrics],
            [
                [label, *(f"{values[metric] / len(judged):.3f}" for metric in metrics)]
                for label, values in totals.items()
            ],
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--max-queries", type=int, default=300)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.dataset, arguments.max_queries))
