"""Reading files in a child process with limits, so a hostile file costs only its own time.

A parser is at the mercy of its input: a 12 KB PDF can hold pages that take pypdf minutes
each. Extraction (and chunking) therefore runs in a long-lived child process that the parent
can kill: each request has a wall-clock limit (the parent kills the child when it passes),
a CPU-time limit (`RLIMIT_CPU`, so the kernel stops a child that spins), a memory limit
(`RLIMIT_AS`), and each PDF page a time limit of its own (a timer signal in the child). A
killed child is replaced on the next request. One sandbox serves one caller at a time; the
worker and the message flow each have their own, so neither can starve the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import resource
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from docchat.extraction.bounds import ExpansionLimits
from docchat.extraction.chunking import TextChunk, chunk_document
from docchat.extraction.formats import extract
from docchat.extraction.kinds import FileKind
from docchat.extraction.ocr import OcrOptions
from docchat.extraction.reader import ExtractionError

logger = logging.getLogger(__name__)
# Seconds a child gets to exit after the pipe closes before it is killed.
EXIT_GRACE_SECONDS = 2.0


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 300.0
    cpu_seconds: int = 300
    page_seconds: float = 10.0
    memory_mb: int = 2048
    ocr: OcrOptions | None = None  # None: scanned pages and images are not read
    expansion: ExpansionLimits = field(default_factory=ExpansionLimits)


@dataclass(frozen=True)
class PreparedDocument:
    """A file read and split: what ingestion embeds and inline answers quote."""

    page_count: int
    chunks: list[TextChunk]
    # The document's own date, where the file carries one (`ExtractedDocument`).
    document_date: dt.date | None = None


@dataclass(frozen=True)
class _Request:
    path: str
    kind: str
    chunk_size: int
    chunk_overlap: int
    page_seconds: float
    cpu_seconds: int
    ocr: OcrOptions | None = None
    expansion: ExpansionLimits = field(default_factory=ExpansionLimits)


def prepare(
    path: Path,
    kind: FileKind,
    *,
    chunk_size: int,
    chunk_overlap: int,
    page_seconds: float | None,
    ocr: OcrOptions | None = None,
    expansion: ExpansionLimits | None = None,
) -> PreparedDocument:
    """Extract and chunk in this process (blocking). The child runs this; so can tests.
    `ExtractionError` when the file gives more than `expansion` allows for its size."""
    expansion = expansion or ExpansionLimits()
    extracted = extract(path, kind, page_seconds=page_seconds, ocr=ocr)
    expansion.check_text(extracted, path.stat().st_size, chunk_size)
    chunks = chunk_document(extracted, size=chunk_size, overlap=chunk_overlap)
    expansion.check_chunks(len(chunks))
    return PreparedDocument(
        page_count=extracted.page_count, chunks=chunks, document_date=extracted.document_date
    )


def _limit_cpu(seconds: int) -> None:
    """Allow this process `seconds` more CPU time from now (SIGXCPU, then death, past it)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = int(usage.ru_utime + usage.ru_stime) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = used + seconds
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _child(requests: Connection, replies: Connection, memory_mb: int) -> None:
    """The child's loop: one request in, one ("ok", PreparedDocument) or ("error", text) out."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when a child ends
    limit = memory_mb * 1024 * 1024
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    while True:
        try:
            request: _Request = requests.recv()
        except EOFError:
            return
        _limit_cpu(request.cpu_seconds)
        try:
            prepared = prepare(
                Path(request.path),
                FileKind(request.kind),
                chunk_size=request.chunk_size,
                chunk_overlap=request.chunk_overlap,
                page_seconds=request.page_seconds,
                ocr=request.ocr,
                expansion=request.expansion,
            )
            reply: tuple[str, Any] = ("ok", prepared)
        except ExtractionError as exc:
            reply = ("error", str(exc))
        except MemoryError:
            reply = ("error", f"The file needs more than {memory_mb} MB of memory to read")
        except Exception:  # a parser bug must not kill the loop
            # Its words (paths, library internals) go to the log, never to the user.
            logger.exception("reading a %s failed", request.kind)
            reply = ("error", f"The {FileKind(request.kind).label} could not be read")
        replies.send(reply)


@dataclass
class _Child:
    process: subprocess.Popen[bytes]
    requests: Connection
    replies: Connection

    def close(self) -> None:
        self.requests.close()
        self.replies.close()


def _spawn(memory_mb: int) -> _Child:
    """A fresh interpreter running `_child` (`python -m` this module: nothing of the parent's
    `__main__` is imported again, whatever program the parent is)."""
    to_child_read, to_child_write = os.pipe()
    from_child_read, from_child_write = os.pipe()
    command = [
        sys.executable,
        "-m",
        "docchat.extraction.sandbox",
        str(to_child_read),
        str(from_child_write),
        str(memory_mb),
    ]
    process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        command, pass_fds=(to_child_read, from_child_write), stdin=subprocess.DEVNULL
    )
    os.close(to_child_read)
    os.close(from_child_write)
    return _Child(
        process,
        Connection(to_child_write, readable=False),
        Connection(from_child_read, writable=False),
    )


class ExtractionSandbox:
    """Extraction and chunking in a child process, one request at a time, within `Limits`."""

    def __init__(self, limits: Limits, *, name: str = "extraction") -> None:
        self.limits = limits
        self.name = name
        self._child: _Child | None = None
        self._lock = asyncio.Lock()
        # A thread of its own to wait on the child: never one of the loop's shared threads.
        self._waiter = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{name}-wait")

    def _start(self) -> _Child:
        if self._child is None or self._child.process.poll() is not None:
            self._kill()
            self._child = _spawn(self.limits.memory_mb)
        return self._child

    def _kill(self) -> None:
        if self._child is not None:
            self._child.close()
            self._child.process.kill()
            self._child.process.wait(EXIT_GRACE_SECONDS)
        self._child = None

    def _run(self, request: _Request, wall_seconds: float) -> PreparedDocument:
        child = self._start()
        started = time.monotonic()
        try:
            child.requests.send(request)
            answered = child.replies.poll(wall_seconds)
            reply = child.replies.recv() if answered else None
        except (EOFError, OSError, BrokenPipeError):
            reply = None
            answered = True  # the child died (CPU or memory limit, or a crash)
        if reply is None:
            elapsed = time.monotonic() - started
            self._kill()
            if not answered:
                raise ExtractionError(
                    f"Reading the file took longer than {wall_seconds:.0f} s and was stopped; "
                    "it may be built to exhaust readers"
                )
            raise ExtractionError(
                f"Reading the file was stopped after {elapsed:.0f} s: it used more than "
                f"{self.limits.cpu_seconds} s of CPU or {self.limits.memory_mb} MB of memory"
            )
        status, value = reply
        if status == "ok":
            prepared: PreparedDocument = value
            return prepared
        raise ExtractionError(str(value))

    async def prepare(
        self,
        path: Path,
        kind: FileKind,
        *,
        chunk_size: int,
        chunk_overlap: int,
        wall_seconds: float | None = None,
        queue_seconds: float | None = None,
    ) -> PreparedDocument:
        """The file's pages and chunks; `ExtractionError` when it cannot be read within the
        limits. `queue_seconds` bounds the wait for the sandbox (TimeoutError past it)."""
        request = _Request(
            path=str(path),
            kind=kind.value,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            page_seconds=self.limits.page_seconds,
            cpu_seconds=self.limits.cpu_seconds,
            ocr=self.limits.ocr,
            expansion=self.limits.expansion,
        )
        wall = wall_seconds or self.limits.wall_seconds
        await asyncio.wait_for(self._lock.acquire(), queue_seconds)
        running = asyncio.get_running_loop().run_in_executor(self._waiter, self._run, request, wall)
        # The child is free again when the call ends, not when a cancelled caller stops waiting.
        running.add_done_callback(self._finished)
        return await asyncio.shield(running)

    def _finished(self, running: asyncio.Future[PreparedDocument]) -> None:
        self._lock.release()
        if not running.cancelled():
            running.exception()  # seen: a caller that was cancelled meanwhile never asks

    def close(self) -> None:
        """Stop the child (idempotent): an idle one exits when its requests pipe closes, one
        still reading a file is killed (the process is stopping: nobody waits for its answer).
        The child's death ends the waiting thread's poll, so the process can exit."""
        child, self._child = self._child, None
        if child is not None:
            child.requests.close()
            if self._lock.locked():
                child.process.kill()
            try:
                child.process.wait(EXIT_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                child.process.kill()
                child.process.wait()
            child.replies.close()
        self._waiter.shutdown(wait=False)


if __name__ == "__main__":
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s extraction %(name)s %(message)s"
    )
    # Run as `python -m`, this file is `__main__`; the loop runs from the module proper, so
    # what it sends pickles under the names the parent knows.
    from docchat.extraction import sandbox

    sandbox._child(
        Connection(int(sys.argv[1]), writable=False),
        Connection(int(sys.argv[2]), readable=False),
        int(sys.argv[3]),
    )
