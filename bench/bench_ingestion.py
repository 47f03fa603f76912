"""Ingestion throughput: upload to `completed`, next to the embedding model's raw throughput.

    .venv/bin/python bench/bench_ingestion.py [--runs 3]

Runs the real pipeline in one process (API upload over ASGI, the worker, pypdf, MiniLM,
Chroma, PostgreSQL) on a 100-page PDF and on 50 mixed files, then embeds the same chunks with
the model alone. Prints medians over the runs.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import tempfile
import time
from pathlib import Path

import httpx
from tests.support.files import make_pdf

from bench.common import (
    build_components,
    build_settings,
    drop_database,
    fresh_database,
    machine,
    median,
    table,
)
from docchat.app import attach_components, create_app
from docchat.extraction.chunking import chunk_document
from docchat.extraction.kinds import FileKind
from docchat.extraction.reader import extract
from docchat.ingestion.worker import IngestionWorker
from docchat.llm.embeddings import LocalMiniLMEmbedder

WORDS = [
    "harbour",
    "tide",
    "vessel",
    "engine",
    "survey",
    "report",
    "budget",
    "council",
    "river",
    "bridge",
    "station",
    "archive",
    "record",
    "member",
    "meeting",
    "schedule",
    "weather",
    "season",
    "cargo",
    "crane",
    "dock",
    "pilot",
    "beacon",
    "signal",
    "lighthouse",
    "keeper",
    "museum",
    "visitor",
    "ticket",
    "route",
    "timetable",
    "ferry",
    "island",
    "coast",
    "storm",
]


def prose(rng: random.Random, characters: int) -> str:
    sentences: list[str] = []
    while sum(len(s) for s in sentences) < characters:
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 18))]
        sentences.append(" ".join(words).capitalize() + ".")
    return " ".join(sentences)


def corpus(seed: int) -> tuple[bytes, list[tuple[str, bytes]]]:
    rng = random.Random(seed)
    big = make_pdf([prose(rng, 2200) for _ in range(100)])
    mixed: list[tuple[str, bytes]] = []
    for index in range(50):
        kind = index % 3
        if kind == 0:
            mixed.append((f"report-{index}.pdf", make_pdf([prose(rng, 1800) for _ in range(5)])))
        elif kind == 1:
            mixed.append((f"notes-{index}.md", ("# Notes\n\n" + prose(rng, 6000)).encode()))
        else:
            mixed.append((f"log-{index}.txt", prose(rng, 6000).encode()))
    return big, mixed


async def ingest(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    worker: IngestionWorker,
    files: list[tuple[str, bytes]],
) -> tuple[float, int, int]:
    started = time.perf_counter()
    ids = []
    for name, content in files:
        response = await client.post(
            "/api/v1/documents", headers=headers, files={"file": (name, content)}
        )
        assert response.status_code == 202, response.text
        ids.append(response.json()["id"])
    await worker.run_until_idle()
    elapsed = time.perf_counter() - started
    pages = chunks = 0
    for document_id in ids:
        document = (await client.get(f"/api/v1/documents/{document_id}", headers=headers)).json()
        assert document["status"] == "completed", document
        pages += document["page_count"]
        chunks += document["chunk_count"]
    return elapsed, pages, chunks


def raw_embedding_seconds(
    embedder: LocalMiniLMEmbedder, files: list[tuple[str, bytes]], folder: Path, batch: int
) -> tuple[float, int]:
    texts: list[str] = []
    for name, content in files:
        path = folder / name
        path.write_bytes(content)
        kind = FileKind.pdf if name.endswith(".pdf") else FileKind.text
        texts.extend(
            chunk.text for chunk in chunk_document(extract(path, kind), size=1000, overlap=200)
        )
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        embedder.embed(texts[start : start + batch])
    return time.perf_counter() - started, len(texts)


async def main(runs: int) -> None:
    embedder = LocalMiniLMEmbedder()
    url = await fresh_database()
    rows = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            settings = build_settings(url, Path(folder) / "data")
            components, engine = build_components(settings, embedder)
            app = create_app(settings, run_worker=False)
            attach_components(app, components)
            worker = IngestionWorker(components)
            big, mixed = corpus(seed=7)
            results: dict[str, list[tuple[float, int, int, float]]] = {
                "100-page PDF": [],
                "50 mixed files": [],
            }
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://bench"
            ) as client:
                for run in range(runs):
                    email = f"bench-{run}@example.com"
                    await client.post(
                        "/api/v1/auth/register", json={"email": email, "password": "bench password"}
                    )
                    token = (
                        await client.post(
                            "/api/v1/auth/login",
                            data={"username": email, "password": "bench password"},
                        )
                    ).json()
                    headers = {"Authorization": f"Bearer {token['access_token']}"}
                    for label, files in (
                        ("100-page PDF", [("big.pdf", big)]),
                        ("50 mixed files", mixed),
                    ):
                        elapsed, pages, chunks = await ingest(client, headers, worker, files)
                        raw, raw_chunks = raw_embedding_seconds(
                            embedder, files, Path(folder), settings.embedding.batch_size
                        )
                        assert raw_chunks == chunks
                        results[label].append((elapsed, pages, chunks, raw))
            for label, samples in results.items():
                elapsed = median([s[0] for s in samples])
                raw = median([s[3] for s in samples])
                pages, chunks = samples[0][1], samples[0][2]
                rows.append(
                    [
                        label,
                        pages,
                        chunks,
                        f"{elapsed:.2f}",
                        f"{pages / elapsed:.1f}",
                        f"{chunks / elapsed:.1f}",
                        f"{chunks / raw:.1f}",
                        f"{100 * raw / elapsed:.0f}%",
                    ]
                )
            await engine.dispose()  # type: ignore[attr-defined]
    finally:
        await drop_database(url)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"Ingestion, median of {runs} runs; {machine()}")
    print(
        table(
            [
                "input",
                "pages",
                "chunks",
                "seconds",
                "pages/s",
                "chunks/s",
                "model alone chunks/s",
                "of model alone",
            ],
            rows,
        )
    )
    print(f"peak memory of the process (API + worker + model): {peak_mb:.0f} MB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    asyncio.run(main(parser.parse_args().runs))
