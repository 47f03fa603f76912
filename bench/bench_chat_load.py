"""Chat under load: 50 concurrent users posting messages (and 50 streaming) to a real server.

    .venv/bin/python bench/bench_chat_load.py [--users 50] [--messages 4]

The server is `docchat serve` in its own process (uvicorn, PostgreSQL, Chroma, MiniLM); the
LLM is the scripted OpenAI-protocol server answering at once, so the figures are docchat's own
overhead. Each user owns one small document, so every message runs retrieval.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from tests.support.llm_server import free_port, start_scripted_llm
from tests.support.users import auth_headers

from bench.common import ROOT, drop_database, fresh_database, machine, median, percentile, table


def start_server(
    database_url: str, llm_url: str, data_dir: Path, port: int
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "DATA_DIR": str(data_dir),
        "LLM_BASE_URL": llm_url,
        "LLM_MODEL": "scripted-model",
        "LOG_LEVEL": "WARNING",
        "AUTH_SECRET_KEY": "bench-secret-key-0123456789-abcdefgh",
        "WORKER_POLL_SECONDS": "0.2",
    }
    command = [sys.executable, "-m", "docchat.cli", "serve", "--port", str(port)]
    return subprocess.Popen(
        command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


async def wait_ready(base: str) -> None:
    async with httpx.AsyncClient() as client:
        for _ in range(600):
            try:
                if (await client.get(f"{base}/readyz")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.2)
    raise RuntimeError("server did not start")


async def make_user(client: httpx.AsyncClient, index: int) -> dict[str, str]:
    headers = await auth_headers(client)
    text = f"User {index} keeps notes: the harbour opens at dawn and the ferry leaves at nine."
    await client.post(
        "/api/v1/documents", headers=headers, files={"file": ("notes.md", text.encode())}
    )
    return headers


async def run_user(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    messages: int,
    stream: bool,
    results: dict[str, list[float]],
) -> None:
    chat_id = None
    for index in range(messages):
        body = {"content": f"When does the ferry leave? ({index})", "chat_id": chat_id}
        started = time.perf_counter()
        try:
            if stream:
                async with client.stream(
                    "POST", "/api/v1/messages/stream", headers=headers, json=body
                ) as response:
                    first = None
                    text = ""
                    async for piece in response.aiter_text():
                        first = first or time.perf_counter()
                        text += piece
                    ok = response.status_code == 200 and "event: done" in text
                    results["ttfb"].append(((first or time.perf_counter()) - started) * 1000)
                    chat_id = chat_id or text.split('"chat_id": "', 1)[1].split('"', 1)[0]
            else:
                response = await client.post("/api/v1/messages", headers=headers, json=body)
                ok = response.status_code == 200
                chat_id = chat_id or response.json()["chat_id"]
        except (httpx.HTTPError, IndexError, KeyError):
            ok = False
        results["latency" if ok else "errors"].append((time.perf_counter() - started) * 1000)


async def scenario(
    base: str, users: list[dict[str, str]], messages: int, stream: bool
) -> list[object]:
    results: dict[str, list[float]] = {"latency": [], "errors": [], "ttfb": []}
    limits = httpx.Limits(max_connections=len(users) * 2)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        started = time.perf_counter()
        await asyncio.gather(
            *(run_user(client, headers, messages, stream, results) for headers in users)
        )
        elapsed = time.perf_counter() - started
    done = len(results["latency"])
    ttfb = (
        f"{median(results['ttfb']):.0f} / {percentile(results['ttfb'], 95):.0f}" if stream else "-"
    )
    return [
        "streaming" if stream else "POST /messages",
        len(users),
        done + len(results["errors"]),
        f"{done / elapsed:.1f}",
        f"{median(results['latency']):.0f}",
        f"{percentile(results['latency'], 95):.0f}",
        ttfb,
        len(results["errors"]),
    ]


async def main(user_count: int, messages: int) -> None:
    llm = start_scripted_llm()
    llm.default.content = "The ferry leaves at nine [1]."
    url = await fresh_database()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as folder:
        server = start_server(url, llm.base_url, Path(folder), port)
        try:
            await wait_ready(base)
            async with httpx.AsyncClient(base_url=base, timeout=60) as client:
                users = [await make_user(client, i) for i in range(user_count)]
                for _ in range(300):  # let the worker index the documents
                    pending = (
                        await client.get("/api/v1/documents?status=processing", headers=users[-1])
                    ).json()["total"]
                    if not pending:
                        break
                    await asyncio.sleep(0.5)
                await asyncio.sleep(2)
            rows = [await scenario(base, users, messages, stream) for stream in (False, True)]
        finally:
            server.terminate()
            server.wait(timeout=30)
            llm.stop()
    await drop_database(url)
    print(
        f"Chat under load, LLM answering at once; {machine()}; server and load generator share the machine"
    )
    print(
        table(
            [
                "mode",
                "users",
                "requests",
                "req/s",
                "p50 ms",
                "p95 ms",
                "first byte p50 / p95 ms",
                "errors",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--messages", type=int, default=4)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.users, arguments.messages))
