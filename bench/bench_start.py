"""A server's start: how long `docchat serve` takes to answer /readyz, the memory it holds then,
and the CPU it spends, on its first start (empty data folder) and its next (same folder).

    PYTHONPATH=. .venv/bin/python -m bench.bench_start [--before REV ...] [--settle 60]

Each start gets a fresh database; the second start of a version reuses the first's data folder,
as a restarted server does. Reported per start: seconds to ready; the process's resident memory
(RSS) at ready and `--settle` seconds later (the translation glossary compiles in the background
on a first start); how long the first question takes, asked at ready by a new user with no
documents; the server process's CPU seconds to ready and over the settle time (a child
it starts is not counted); the p95 of /healthz asked four times a second meanwhile. `--before
REV...` measures those revisions (git worktrees) in the same run, first. The machine's load is
printed beside.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from tests.support.llm_server import free_port, start_scripted_llm

from bench.common import (
    ROOT,
    drop_database,
    fresh_database,
    machine,
    percentile,
    process_cpu_seconds,
    table,
    wait_ready,
    worktree,
)
from bench.common import start_server as spawn_server


@dataclass
class Start:
    version: str
    which: str
    ready_seconds: float
    rss_ready_mb: float
    rss_settled_mb: float
    cpu_to_ready: float
    cpu_settling: float
    probe_p95_ms: float
    first_question_ms: float


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _start(
    version: str, which: str, code: Path, data: Path, llm: str, settle: float
) -> Start:
    url = await fresh_database()
    port = free_port()
    began = time.perf_counter()
    server = spawn_server(url, llm, data, port, code_root=code)
    try:
        await wait_ready(f"http://127.0.0.1:{port}")
        ready = time.perf_counter() - began
        cpu_ready, rss_ready = process_cpu_seconds(server.pid), _rss_mb(server.pid)
        first_question = await _first_question(f"http://127.0.0.1:{port}")
        probes = await _probe(f"http://127.0.0.1:{port}/healthz", settle)
        cpu_settled, rss_settled = process_cpu_seconds(server.pid), _rss_mb(server.pid)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        await drop_database(url)
    return Start(
        version,
        which,
        ready,
        rss_ready,
        rss_settled,
        cpu_ready,
        cpu_settled - cpu_ready,
        percentile(probes, 95) * 1000,
        first_question * 1000,
    )


async def _first_question(base: str) -> float:
    """Seconds the server's first question takes, asked as soon as it is ready by a new user
    with no documents (the question's own reading: its language, its vector, the search)."""
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        account = {"email": "first@example.com", "password": "a-long-enough-password-1"}
        (await client.post("/api/v1/auth/register", json=account)).raise_for_status()
        login = await client.post(
            "/api/v1/auth/login",
            data={"username": account["email"], "password": account["password"]},
        )
        headers = {"Authorization": f"Bearer {login.json()['access_token']}"}
        asked = time.perf_counter()
        answer = await client.post(
            "/api/v1/messages",
            headers=headers,
            json={"content": "Wann fährt die erste Fähre am Morgen ab?"},
        )
        answer.raise_for_status()
        return time.perf_counter() - asked


async def _probe(url: str, seconds: float) -> list[float]:
    """Response times of /healthz asked four times a second for `seconds`: how long a request
    waits for the server's loop while the start's background work runs."""
    times: list[float] = []
    async with httpx.AsyncClient(timeout=30) as client:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            asked = time.perf_counter()
            await client.get(url)
            times.append(time.perf_counter() - asked)
            await asyncio.sleep(0.25)
    return times


async def _version(version: str, code: Path, llm: str, settle: float) -> list[Start]:
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "data"
        return [
            await _start(version, which, code, data, llm, settle) for which in ("first", "second")
        ]


async def _run(before: list[str], settle: float) -> list[Start]:
    os.environ.pop("EMBEDDING_MODEL_CACHE_DIR", None)  # the default, under DATA_DIR
    llm = start_scripted_llm()
    try:
        starts: list[Start] = []
        for revision in before:
            with worktree(revision) as tree:
                starts += await _version(revision, tree, llm.base_url, settle)
        starts += await _version("now", ROOT, llm.base_url, settle)
        return starts
    finally:
        llm.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--before", nargs="*", default=[], help="git revisions to measure first (worktrees)"
    )
    parser.add_argument("--settle", type=float, default=60.0, help="seconds watched after ready")
    arguments = parser.parse_args()
    load = os.getloadavg()
    starts = asyncio.run(_run(arguments.before, arguments.settle))
    print(
        f"{machine()}; load average at the start {load[0]:.1f}, at the end {os.getloadavg()[0]:.1f}"
    )
    print(
        table(
            [
                "version",
                "start",
                "ready (s)",
                "RSS at ready (MB)",
                f"RSS {arguments.settle:.0f} s later (MB)",
                "CPU to ready (s)",
                f"CPU in the {arguments.settle:.0f} s after (s)",
                "/healthz p95 then (ms)",
                "first question (ms)",
            ],
            [
                [
                    start.version,
                    start.which,
                    f"{start.ready_seconds:.1f}",
                    f"{start.rss_ready_mb:.0f}",
                    f"{start.rss_settled_mb:.0f}",
                    f"{start.cpu_to_ready:.1f}",
                    f"{start.cpu_settling:.1f}",
                    f"{start.probe_p95_ms:.0f}",
                    f"{start.first_question_ms:.0f}",
                ]
                for start in starts
            ],
        )
    )


if __name__ == "__main__":
    main()
