"""The event loop's cost of reading a model's streamed answer, per answer, by its length.

    .venv/bin/python -m bench.bench_llm_stream [--pieces 10 300 1000] [--answers 30]
        [--code-root DIR ...]

The scripted OpenAI-protocol server streams each answer as that many pieces (a piece is about a
token, as real servers send them), from a process of its own; the client is `LLM.stream`, the
path every chat answer takes, in a child process per code root, so its CPU time (user and
system, `time.process_time`) is the client's alone: the openai SDK, httpx and our reading of the
chunks. That CPU is spent on the server's event loop while other users' requests wait. Give
several `--code-root` to compare checkouts in one run (each row is the median of alternating
rounds).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 3


def serve_llm(port: int, ready: Any) -> None:
    """The scripted model in a process of its own; it answers with as many pieces as the
    request's `max_tokens` asks for (one word each)."""
    sys.path.insert(0, str(ROOT))
    from tests.support.llm_server import Reply, ScriptedLLM

    class Sized(ScriptedLLM):
        def _next(self, body: dict[str, Any]) -> Reply:
            words = int(body.get("max_tokens") or 10)
            return Reply(content=" ".join(f"word{i}" for i in range(words)))

    llm = Sized(port=port)
    llm.start()
    ready.set()
    while True:
        time.sleep(3600)


PATHS = ("stream", "passthrough")


async def measure(base_url: str, path: str, pieces: int, answers: int) -> dict[str, float]:
    """CPU milliseconds of this process per answer of `pieces` pieces, read through
    `LLM.stream` or `LLM.passthrough_stream` (run in a child process with the code root's
    `backend` on its path)."""
    from docchat.config import LLMSettings
    from docchat.llm.client import LLM

    llm = LLM(LLMSettings(base_url=base_url, model="scripted-model", api_key="key"))
    messages = [{"role": "user", "content": "Tell me about the harbour."}]
    body = {"model": "scripted-model", "messages": messages, "max_tokens": pieces}

    def read() -> AsyncIterator[object]:
        if path == "stream":
            return llm.stream(messages, max_tokens=pieces)
        return llm.passthrough_stream(body)

    try:
        for _ in range(3):  # warm: connection, imports, first allocations
            async for _item in read():
                pass
        started_cpu, started = time.process_time(), time.perf_counter()
        received = 0
        for _ in range(answers):
            async for _item in read():
                received += 1
        cpu = (time.process_time() - started_cpu) * 1000 / answers
        wall = (time.perf_counter() - started) * 1000 / answers
    finally:
        await llm.close()
    return {"cpu_ms": cpu, "wall_ms": wall, "items": received / answers}


def run_child(
    code_root: Path, base_url: str, path: str, pieces: int, answers: int
) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": f"{code_root / 'backend'}{os.pathsep}{ROOT}"}
    command = [sys.executable, "-m", "bench.bench_llm_stream", "--child", base_url, path]
    command += ["--pieces", str(pieces), "--answers", str(answers)]
    output = subprocess.run(command, env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    result: dict[str, float] = json.loads(output.stdout.strip().splitlines()[-1])
    return result


def main(pieces: list[int], answers: int, code_roots: list[Path]) -> None:
    from bench.common import machine, table

    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    from tests.support.llm_server import free_port

    port = free_port()
    server = context.Process(target=serve_llm, args=(port, ready), daemon=True)
    server.start()
    ready.wait(30)
    base_url = f"http://127.0.0.1:{port}/v1"
    cpu: dict[tuple[str, Path, int], list[float]] = {}
    wall: dict[tuple[str, Path, int], list[float]] = {}
    try:
        for _ in range(ROUNDS):  # alternating, so a slow minute hits every code alike
            for path in PATHS:
                for count in pieces:
                    for code_root in code_roots:
                        result = run_child(code_root, base_url, path, count, answers)
                        cpu.setdefault((path, code_root, count), []).append(result["cpu_ms"])
                        wall.setdefault((path, code_root, count), []).append(result["wall_ms"])
    finally:
        server.terminate()
    print(
        f"Reading a streamed answer (LLM.stream, LLM.passthrough_stream): client CPU per answer "
        f"(the scripted model in another process), median of {ROUNDS} rounds of {answers} "
        f"answers; per piece is the answer's CPU divided by its pieces (the request's own cost "
        f"included); {machine()}"
    )
    rows = [
        [
            path,
            str(code_root),
            count,
            f"{statistics.median(cpu[(path, code_root, count)]):.1f}",
            f"{statistics.median(cpu[(path, code_root, count)]) / count * 1000:.0f}",
            f"{statistics.median(wall[(path, code_root, count)]):.1f}",
        ]
        for path in PATHS
        for count in pieces
        for code_root in code_roots
    ]
    headers = [
        "path",
        "code",
        "pieces",
        "CPU ms / answer",
        "CPU us / piece (whole answer)",
        "wall ms / answer",
    ]
    print(table(headers, rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pieces", type=int, nargs="+", default=[10, 300, 1000])
    parser.add_argument("--answers", type=int, default=30)
    parser.add_argument("--code-root", type=Path, nargs="+", default=[ROOT])
    parser.add_argument("--child", nargs=2, metavar=("BASE_URL", "PATH"), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        base_url, path = arguments.child
        figures = asyncio.run(measure(base_url, path, arguments.pieces[0], arguments.answers))
        print(json.dumps(figures))
    else:
        main(arguments.pieces, arguments.answers, arguments.code_root)
