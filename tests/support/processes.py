"""Real processes for scale-out tests: a Chroma server (`chroma run`, from the chromadb
package), `docchat serve` API processes and `docchat worker` processes, each with its own log
file (shown when a test fails to start one)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.llm_server import free_port

ROOT = Path(__file__).resolve().parents[2]
CHROMA = Path(sys.executable).with_name("chroma")


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    url: str | None = None

    def stop(self) -> None:
        terminate(self.popen, timeout=20)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""


def terminate(popen: subprocess.Popen[bytes], timeout: float = 10) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `timeout` seconds."""
    if popen.poll() is None:
        popen.terminate()
        try:
            popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait()


def _spawn(name: str, command: list[str], env: Mapping[str, str], logs: Path) -> Process:
    log = logs / f"{name}.log"
    with log.open("wb") as out:
        popen = subprocess.Popen(command, env=dict(env), cwd=ROOT, stdout=out, stderr=out)  # noqa: S603
    return Process(name, popen, log)


def wait_for(process: Process, url: str, timeout: float = 120) -> None:
    """Until `url` answers 200; fails with the process's own output if it never does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.popen.poll() is not None:
            raise RuntimeError(f"{process.name} exited:\n{process.output()}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise RuntimeError(f"{process.name} never became ready at {url}:\n{process.output()}")


def start_chroma(path: Path, logs: Path) -> Process:
    if not CHROMA.exists() and shutil.which("chroma") is None:
        raise RuntimeError("the chroma command (from the chromadb package) is not installed")
    port = free_port()
    command = [str(CHROMA if CHROMA.exists() else "chroma"), "run", "--path", str(path)]
    process = _spawn(
        "chroma", [*command, "--host", "127.0.0.1", "--port", str(port)], {**os.environ}, logs
    )
    process.url = f"http://127.0.0.1:{port}"
    wait_for(process, f"{process.url}/api/v2/heartbeat")
    return process


def docchat_env(**settings: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT / "backend"),
        "LOG_LEVEL": "WARNING",
        "WORKER_POLL_SECONDS": "0.2",
        **settings,
    }


def start_api(name: str, env: Mapping[str, str], logs: Path) -> Process:
    """`docchat serve` without the in-process worker (workers run on their own)."""
    port = free_port()
    command = [sys.executable, "-m", "docchat.main.cli", "serve", "--port", str(port)]
    process = _spawn(name, command, {**env, "WORKER_ENABLED": "false"}, logs)
    process.url = f"http://127.0.0.1:{port}"
    return process


def start_worker(name: str, env: Mapping[str, str], logs: Path) -> Process:
    return _spawn(name, [sys.executable, "-m", "docchat.main.cli", "worker"], env, logs)
