"""Responsiveness during ingestion: `GET /api/v1/chats` latency while the worker ingests a big PDF
(or, with `--small-files N`, N one-paragraph text files uploaded at once).

    .venv/bin/python -m bench.bench_responsiveness [--pages 200] [--runs 3]
        [--small-files 300 [--group-size 8]]

`docchat serve` runs in its own process with its in-process worker, as the run command starts
it. A prober sends one `GET /api/v1/chats` every 25 ms (one at a time, so the figures are the
server's latency, not queueing in the prober), first with the server idle, then from the upload
of a PDF (or of the small files) until the worker marks it (them) completed. Prints the median
over the runs of each figure. `--group-size` is the server's `WORKER_GROUP_SIZE`.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

import httpx
from tests.support.files import make_pdf
from tests.support.llm_server import free_port
from tests.support.users import auth_headers

from bench.bench_ingestion import prose
from bench.common import (
    UNFINISHED,
    drop_database,
    fresh_database,
    machine,
    median,
    percentile,
    start_server,
    table,
    wait_ready,
)

PROBE_GAP_SECONDS = 0.025
STARTUP_SECONDS = 40


async def probe(
    client: httpx.AsyncClient, headers: dict[str, str], until: asyncio.Event
) -> list[float]:
    timings = []
    while not until.is_set():
        started = time.perf_counter()
        response = await client.get("/api/v1/chats", headers=headers)
        response.raise_for_status()
        timings.append((time.perf_counter() - started) * 1000)
        await asyncio.sleep(PROBE_GAP_SECONDS)
    return timings


async def idle_probe(
    client: httpx.AsyncClient, headers: dict[str, str], seconds: float
) -> list[float]:
    stop = asyncio.Event()
    task = asyncio.create_task(probe(client, headers, stop))
    await asyncio.sleep(seconds)
    stop.set()
    return await task


async def ingesting_probe(
    client: httpx.AsyncClient, headers: dict[str, str], pdf: bytes
) -> tuple[list[float], float]:
    stop = asyncio.Event()
    task = asyncio.create_task(probe(client, headers, stop))
    started = time.perf_counter()
    response = await client.post(
        "/api/v1/documents", headers=headers, files={"file": ("big.pdf", pdf)}
    )
    response.raise_for_status()
    if response.status_code != 202:  # 200: a duplicate of a stored file, nothing to ingest
        raise RuntimeError(f"the upload was not queued ({response.status_code})")
    url = f"/api/v1/documents/{response.json()['id']}"
    while True:
        if (await client.get(url, headers=headers)).json()["status"] not in UNFINISHED:
            break
        await asyncio.sleep(0.25)
    elapsed = time.perf_counter() - started
    stop.set()
    return await task, elapsed


async def small_files_probe(
    client: httpx.AsyncClient, headers: dict[str, str], files: list[bytes]
) -> tuple[list[float], float]:
    stop = asyncio.Event()
    task = asyncio.create_task(probe(client, headers, stop))
    started = time.perf_counter()
    for number, content in enumerate(files):
        response = await client.post(
            "/api/v1/documents", headers=headers, files={"file": (f"note-{number}.txt", content)}
        )
        response.raise_for_status()
    while True:
        listed = await client.get("/api/v1/documents", headers=headers, params={"limit": 1})
        waiting = await client.get(
            "/api/v1/documents", headers=headers, params={"status": "completed", "limit": 1}
        )
        if waiting.json()["total"] >= listed.json()["total"]:
            break
        await asyncio.sleep(0.25)
    elapsed = time.perf_counter() - started
    stop.set()
    return await task, elapsed


def summary(label: str, samples: list[list[float]], seconds: float | None) -> list[object]:
    return [
        label,
        sum(len(s) for s in samples) // len(samples),
        f"{median([median(s) for s in samples]):.1f}",
        f"{median([percentile(s, 95) for s in samples]):.1f}",
        f"{median([percentile(s, 99) for s in samples]):.1f}",
        f"{median([max(s) for s in samples]):.0f}",
        f"{seconds:.1f}" if seconds is not None else "-",
    ]


async def main(pages: int, runs: int, small_files: int, group_size: int) -> None:
    url = await fresh_database()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    idle: list[list[float]] = []
    busy: list[list[float]] = []
    ingest_seconds: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        # The LLM is not used here; its address only has to be well formed.
        server = start_server(
            url,
            "http://127.0.0.1:9/v1",
            Path(folder),
            port,
            extra_env={"WORKER_GROUP_SIZE": str(group_size)},
        )
        try:
            await wait_ready(base, probe="/healthz")
            async with httpx.AsyncClient(base_url=base, timeout=60) as client:
                headers = await auth_headers(client)
                for index in range(20):
                    response = await client.post(
                        "/api/v1/chats", headers=headers, json={"title": f"Chat {index}"}
                    )
                    response.raise_for_status()
                # Warm up past a new installation's first-start work: for about 20 s the
                # server compiles the question glossaries into its (here new) data folder in
                # the background, and requests meanwhile take 4-7 times as long (idle p50
                # 58 ms measured with a 2 s warm-up, 8 ms with 40 s).
                await idle_probe(client, headers, STARTUP_SECONDS)
                for run in range(runs):
                    # A new file each run: the same bytes again would be a duplicate, done at once.
                    pdf = make_pdf(
                        [prose(random.Random(run * pages + page), 2200) for page in range(pages)]
                    )
                    idle.append(await idle_probe(client, headers, 10))
                    if small_files:
                        texts = [
                            prose(random.Random(f"{run}-{n}"), 600).encode()
                            for n in range(small_files)
                        ]
                        timings, seconds = await small_files_probe(client, headers, texts)
                    else:
                        timings, seconds = await ingesting_probe(client, headers, pdf)
                    busy.append(timings)
                    ingest_seconds.append(seconds)
        finally:
            server.terminate()
            server.wait(timeout=30)
    await drop_database(url)
    ingested = (
        f"{small_files} one-paragraph files, WORKER_GROUP_SIZE={group_size}"
        if small_files
        else f"{pages}-page PDF"
    )
    print(
        f"GET /api/v1/chats (20 chats) every {PROBE_GAP_SECONDS * 1000:.0f} ms, median of {runs} runs; "
        f"{ingested}; {machine()}"
    )
    print(
        table(
            ["server", "requests", "p50 ms", "p95 ms", "p99 ms", "max ms", "ingestion s"],
            [
                summary("idle", idle, None),
                summary("ingesting", busy, median(ingest_seconds)),
            ],
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--small-files", type=int, default=0, help="files instead of a PDF")
    parser.add_argument("--group-size", type=int, default=8, help="WORKER_GROUP_SIZE")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.pages, arguments.runs, arguments.small_files, arguments.group_size))
