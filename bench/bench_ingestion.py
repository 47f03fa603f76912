"""Ingestion throughput: upload to `completed`, next to the embedding model's raw throughput.

    .venv/bin/python bench/bench_ingestion.py [--runs 3]

Runs the real pipeline in one process (API upload over ASGI, the worker, the readers, MiniLM,
Chroma, PostgreSQL) on a 100-page PDF, on 50 mixed files, and on a set of files of each other
format (Word, PowerPoint, Excel, CSV, HTML, scans read by OCR), then embeds the same chunks
with the model alone (for scans the share is small: reading the pictures is the work).
Prints medians over the runs; "items" are pages, sections, slides or rows as the format has.
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
from tests.support.office_files import make_docx, make_pptx, make_xlsx

from bench.common import (
    build_components,
    build_settings,
    drop_database,
    fresh_database,
    machine,
    median,
    table,
)
from docchat.documents.filetypes import detect_kind
from docchat.extraction.chunking import chunk_document
from docchat.extraction.formats import extract
from docchat.extraction.ocr import OcrOptions, find_tesseract
from docchat.ingestion.worker import IngestionWorker
from docchat.llm.embeddings import LocalMiniLMEmbedder
from docchat.main.app import attach_components, create_app

SCANS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "ocr"
OCR = find_tesseract(OcrOptions())

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


# label, files, items (None: the pages the API reports), what an item is
Batch = tuple[str, list[tuple[str, bytes]], int | None, str]


def office_corpus(rng: random.Random) -> list[Batch]:
    docx_files = [
        (
            f"manual-{n}.docx",
            make_docx([(1 + s % 2, f"Section {s}", [prose(rng, 700)]) for s in range(10)]),
        )
        for n in range(20)
    ]
    decks = [
        (f"deck-{n}.pptx", make_pptx([(f"Slide {s}", prose(rng, 400)) for s in range(20)]))
        for n in range(10)
    ]
    header: list[object] = ["Ticket", "Route", "Fare", "Note"]
    tables = [
        [[f"T-{n}-{r}", rng.choice(WORDS), r % 90, prose(rng, 60)] for r in range(500)]
        for n in range(5)
    ]
    workbooks = [
        (f"fares-{n}.xlsx", make_xlsx({"Fares": [header, *t]})) for n, t in enumerate(tables)
    ]
    csv_files = [
        (f"fares-{n}.csv", "\n".join(",".join(map(str, row)) for row in [header, *t]).encode())
        for n, t in enumerate(tables)
    ]
    pages = [
        (
            f"page-{n}.html",
            (
                "<!doctype html><html><body><nav>Home | Docs</nav>"
                + "".join(f"<h2>Part {s}</h2><p>{prose(rng, 700)}</p>" for s in range(10))
                + "</body></html>"
            ).encode(),
        )
        for n in range(20)
    ]
    return [
        ("20 Word files", docx_files, 200, "sections"),
        ("10 PowerPoint decks", decks, 200, "slides"),
        ("5 Excel workbooks", workbooks, 2500, "rows"),
        ("5 CSV files", csv_files, 2500, "rows"),
        ("20 HTML pages", pages, 200, "sections"),
    ]


def corpus(seed: int) -> list[Batch]:
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
    return [
        ("100-page PDF", [("big.pdf", big)], None, "pages"),
        ("50 mixed PDF/Markdown/text", mixed, None, "pages"),
        *office_corpus(rng),
        ("3 scans (2 PDF, 1 JPEG), OCR", scans(), None, "pages"),
    ]


def scans() -> list[tuple[str, bytes]]:
    """Real pages, scanned (tests/fixtures/ocr): a two-column paper and a one-page document."""
    names = [
        "multicolumn-scanned.pdf",
        "google-doc-document-scanned.pdf",
        "google-doc-document-scanned.jpg",
    ]
    return [(name, (SCANS / name).read_bytes()) for name in names]


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
        kind = detect_kind(name, content[:8192], path)
        document = extract(path, kind, ocr=OCR)
        texts.extend(chunk.text for chunk in chunk_document(document, size=1000, overlap=200))
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
            batches = corpus(seed=7)
            results: dict[str, list[tuple[float, int, int, float]]] = {b[0]: [] for b in batches}
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
                    for label, files, _, _ in batches:
                        elapsed, pages, chunks = await ingest(client, headers, worker, files)
                        raw, raw_chunks = raw_embedding_seconds(
                            embedder, files, Path(folder), settings.embedding.batch_size
                        )
                        assert raw_chunks == chunks
                        results[label].append((elapsed, pages, chunks, raw))
            for label, _, counted, unit in batches:
                samples = results[label]
                elapsed = median([s[0] for s in samples])
                raw = median([s[3] for s in samples])
                items, chunks = counted or samples[0][1], samples[0][2]
                rows.append(
                    [
                        label,
                        f"{items:,} {unit}",
                        chunks,
                        f"{elapsed:.2f}",
                        f"{items / elapsed:.1f}",
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
                "items",
                "chunks",
                "seconds",
                "items/s",
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
