"""Chat under load: 50 concurrent users posting messages (and 50 streaming) to a real server.

    .venv/bin/python -m bench.bench_chat_load [--users 50] [--messages 6] [--paces 5-15 1-3 0-0]
        [--library CHUNKS] [--chunks-per-document N] [--keep DIR] [--squad-questions]
        [--code-root DIR] [--tracing off on] [--answer-words N] [--build bulk|worker]

The server is `docchat serve` in its own process (uvicorn, PostgreSQL, Chroma, MiniLM); the
LLM is the scripted OpenAI-protocol server answering at once, in a process of its own (a short
sentence, or with `--answer-words N` an answer of N words streamed a word at a time, as a model
streams its tokens: reading them is the server's work, on the event loop other users wait for).
"Overhead" is each request's latency less the time the server waited for the LLM (the
answer's `meta.llm_ms`): everything but the LLM. "CPU ms / message" is the CPU the server's
process and PostgreSQL's used during the scenario (read from /proc), divided by the messages
answered: it depends far less than latency on what else the machine is doing. It counts all
the server did meanwhile (idle, with its worker looking at the queue every second, it uses
about 4 ms a second) and every PostgreSQL process on the machine ("n/a" for a database
elsewhere). "Grounded" is the share of answers built on passages: the others took the general
path (no match), which builds no context, citations or highlights, so a row of few grounded
answers times less than users get. Each user owns one small document, so every message runs retrieval. Each user
waits for the answer, then pauses for a random think time before the next message, as people
in a chat do: 5-15 s is reading an answer and typing the next question, 1-3 s is a stress pace
no person keeps up; the rows without think time send back to back, which measures the
server's capacity (latency there is mostly queueing).

`--library CHUNKS` puts a shared library of that many chunks (SQuAD prose, seeded random
vectors, as `bench_wide_scope` builds it: in bulk by default, about twice as fast;
`--build worker` writes the same rows and vectors a batch at a time, as the worker does) in
every user's scope before the server starts: each message then searches the library as well as
the user's own notes, as in an organisation's installation.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from tests.support.llm_server import Reply, ScriptedLLM, free_port
from tests.support.users import auth_headers

if TYPE_CHECKING:  # the model server's process imports this module: kept light
    from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

    from docchat.retrieval.index import BlockingVectorStore

from bench.common import (
    ROOT,
    machine,
    median,
    percentile,
    postgres_cpu_seconds,
    process_cpu_seconds,
    start_server,
    table,
    unfinished_documents,
    wait_ready,
)


async def make_user(client: httpx.AsyncClient, index: int) -> dict[str, str]:
    headers = await auth_headers(client)
    text = f"User {index} keeps notes: the harbour opens at dawn and the ferry leaves at nine."
    await client.post(
        "/api/v1/documents", headers=headers, files={"file": ("notes.md", text.encode())}
    )
    return headers


@dataclass
class Results:
    latency: list[float] = field(default_factory=list)
    # Latency less the time the server spent waiting for the LLM (its `meta.llm_ms`).
    overhead: list[float] = field(default_factory=list)
    first_byte: list[float] = field(default_factory=list)
    # The server's own measure of its search (`meta.retrieval_ms`), part of the overhead.
    retrieval: list[float] = field(default_factory=list)
    # Answers grounded in passages; the rest took the general path (no_match), which never
    # builds a context, citations or highlights: a latency over mostly those times less.
    grounded: int = 0
    errors: int = 0


@dataclass(frozen=True)
class Answered:
    chat_id: str
    llm_ms: float
    retrieval_ms: float
    grounded: bool
    first_byte: float | None = None


async def one_message(
    client: httpx.AsyncClient, headers: dict[str, str], body: dict[str, Any], stream: bool
) -> Answered:
    """Send one message; for a stream, also when its first byte arrived."""
    if not stream:
        response = await client.post("/api/v1/messages", headers=headers, json=body)
        response.raise_for_status()
        answer = response.json()
        meta = answer["assistant_message"]["meta"]
        return Answered(
            answer["chat_id"],
            meta["llm_ms"],
            meta.get("retrieval_ms") or 0.0,
            bool(meta.get("grounded")),
        )
    first = None
    text = ""
    async with client.stream(
        "POST", "/api/v1/messages/stream", headers=headers, json=body
    ) as response:
        response.raise_for_status()
        async for piece in response.aiter_text():
            first = first or time.perf_counter()
            text += piece
    if "event: done" not in text:
        raise RuntimeError("the stream ended without its done event")
    done = json.loads(text.split("event: done\ndata: ", 1)[1].split("\n", 1)[0])
    chat_id = text.split('"chat_id": "', 1)[1].split('"', 1)[0]
    meta = done["assistant_message"]["meta"]
    grounded = bool(meta.get("grounded"))
    return Answered(chat_id, meta["llm_ms"], meta.get("retrieval_ms") or 0.0, grounded, first)


async def run_user(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    messages: int,
    stream: bool,
    think: tuple[float, float],
    rng: random.Random,
    results: Results,
    asked: list[str],
) -> None:
    chat_id = None
    await asyncio.sleep(rng.uniform(0, think[1]))  # users do not all arrive in the same instant
    for index in range(messages):
        content = rng.choice(asked) if asked else f"When does the ferry leave? ({index})"
        body = {"content": content, "chat_id": chat_id}
        started = time.perf_counter()
        try:
            answered = await one_message(client, headers, body, stream)
        except (httpx.HTTPError, RuntimeError, IndexError, KeyError, ValueError):
            results.errors += 1
        else:
            chat_id = answered.chat_id
            latency = (time.perf_counter() - started) * 1000
            results.latency.append(latency)
            results.overhead.append(latency - answered.llm_ms)
            results.retrieval.append(answered.retrieval_ms)
            results.grounded += answered.grounded
            if answered.first_byte is not None:
                results.first_byte.append((answered.first_byte - started) * 1000)
        await asyncio.sleep(rng.uniform(*think))


async def scenario(
    base: str,
    users: list[dict[str, str]],
    messages: int,
    stream: bool,
    think: tuple[float, float],
    asked: list[str],
    server_pid: int,
) -> list[object]:
    results = Results()
    rng = random.Random(5)
    limits = httpx.Limits(max_connections=len(users) * 2)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        started = time.perf_counter()
        server_cpu, database_cpu = process_cpu_seconds(server_pid), postgres_cpu_seconds()
        await asyncio.gather(
            *(
                run_user(client, headers, messages, stream, think, rng, results, asked)
                for headers in users
            )
        )
        elapsed = time.perf_counter() - started
        server_cpu = process_cpu_seconds(server_pid) - server_cpu
        database_after = postgres_cpu_seconds()
    done = len(results.latency)
    per_message = 1000 / max(done, 1)
    database = (
        "n/a"
        if database_cpu is None or database_after is None
        else f"{(database_after - database_cpu) * per_message:.0f}"
    )
    first_byte = (
        f"{median(results.first_byte):.0f} / {percentile(results.first_byte, 95):.0f}"
        if stream
        else "-"
    )
    return [
        "stream" if stream else "POST",
        f"{think[0]:g}-{think[1]:g} s" if think[1] else "none",
        len(users),
        done + results.errors,
        f"{done / elapsed:.1f}",
        f"{median(results.latency):.0f}",
        f"{percentile(results.latency, 95):.0f}",
        f"{median(results.overhead):.0f}",
        f"{percentile(results.overhead, 95):.0f}",
        f"{median(results.retrieval):.0f} / {percentile(results.retrieval, 95):.0f}",
        first_byte,
        f"{server_cpu * per_message:.0f} / {database}",
        f"{100 * results.grounded / max(done, 1):.0f}%",
        results.errors,
    ]


SHORT_ANSWER = "The ferry leaves at nine [1]."


def answer_of(words: int) -> str:
    """The scripted answer: the short one, or one of `words` words that still cites [1]."""
    if words <= len(SHORT_ANSWER.split()):
        return SHORT_ANSWER
    filler = (f"detail{index}" for index in range(words - len(SHORT_ANSWER.split())))
    return f"{SHORT_ANSWER} {' '.join(filler)}"


def serve_llm(port: int, ready: Any, content: str = SHORT_ANSWER, seconds: float = 0.0) -> None:
    """The scripted LLM in a process of its own, so it does not share the load generator's GIL;
    each answer `content`, after `seconds` (a remote model's time)."""
    llm = ScriptedLLM(port=port)
    llm.default = Reply(content=content, delay_seconds=seconds)
    llm.start()
    ready.set()
    while True:
        time.sleep(3600)


async def build_library(
    sessionmaker: async_sessionmaker[AsyncSession],
    store: BlockingVectorStore,
    chunks: int,
    chunks_per_document: int,
    method: str,
) -> None:
    """A library of `chunks` chunks in documents of `chunks_per_document` chunks, shared with
    everyone, written into `store` (the default collection of the folder the server reads), in
    bulk or as the worker writes them (`method`, as `bench_wide_scope` builds them)."""
    import numpy as np

    from bench.bench_wide_scope import fill, owner_with_documents, sentences

    async with sessionmaker() as session:
        librarian, shelf = await owner_with_documents(
            session, chunks // chunks_per_document, shared=True
        )
        await session.commit()
    owned = [(librarian.id, document) for document in shelf]
    rng = np.random.default_rng(3)
    await fill(store, sessionmaker, owned, sentences(), rng, chunks_per_document, method)


def squad_questions() -> list[str]:
    """Real questions about the library's prose (SQuAD dev), each user picking at random: the
    words differ from message to message, as they do between people, so the lexical index
    reads other chunks each time instead of the same few cached ones."""
    from bench.bench_wide_scope import questions

    return questions(2000)


@contextlib.asynccontextmanager
async def prepared_installation(
    keep: Path | None, library: int, chunks_per_document: int, method: str = "bulk"
) -> AsyncIterator[tuple[str, Path, str]]:
    """The database URL and data folder the server runs on, the library built in them, and how
    the library was built (how long, and when: `method`, by this run or an earlier one).

    Without `keep`, both are new and removed afterwards. With `keep`, the installation of these
    `library` and `chunks_per_document` is kept in a folder of `keep` of their name and reused
    by later runs (`bench.common.kept_index`): building a 100k-chunk library takes minutes."""
    from bench.common import bench_index
    from docchat.llm.embeddings import LocalMiniLMEmbedder

    folder = None if keep is None else keep / f"{library}-x{chunks_per_document}"
    async with bench_index(folder, LocalMiniLMEmbedder.name, 384) as kept:
        when = "by an earlier run" if kept.notes else "now"
        if not kept.notes and library:
            started = time.perf_counter()
            await build_library(kept.sessionmaker, kept.store, library, chunks_per_document, method)
            kept.notes["build_seconds"] = round(time.perf_counter() - started)
            kept.notes["method"] = method
        kept.keep()
        kept.release_store()  # the server, a process of its own, opens it next
        seconds = kept.notes.get("build_seconds")
        # Installations kept before bulk builds were written as the worker writes.
        how = f"{seconds} s {when} ({kept.notes.get('method', 'worker')})" if seconds else ""
        yield kept.url, kept.folder, how


def serve_otlp(port_queue: Any) -> None:
    """An OTLP/HTTP trace receiver in a process of its own: it takes each batch and answers
    200 without decoding it, as a collector on another machine costs this one nothing."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Sink(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    port_queue.put(f"http://127.0.0.1:{server.server_address[1]}")
    server.serve_forever()


async def users_with_notes(base: str, user_count: int) -> list[dict[str, str]]:
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        users = [await make_user(client, i) for i in range(user_count)]
        # Every user's note is indexed before the first message: the chat is measured, not
        # the chat beside ingestion ("Responsiveness during ingestion" is that).
        for _ in range(300):
            counts = [await unfinished_documents(client, headers) for headers in users]
            if not any(counts):
                break
            await asyncio.sleep(0.5)
        else:
            raise RuntimeError("the users' notes were not indexed within 150 s")
        await asyncio.sleep(2)
    return users


async def main(
    user_count: int,
    messages: int,
    paces: list[tuple[float, float]],
    library: int,
    keep: Path | None = None,
    squad: bool = False,
    code_root: Path = ROOT,
    chunks_per_document: int = 100,
    tracing_modes: tuple[str, ...] = ("off",),
    answer_words: int = 0,
    build: str = "bulk",
) -> None:
    asked = squad_questions() if squad else []
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    llm_port = free_port()
    llm = context.Process(
        target=serve_llm, args=(llm_port, ready, answer_of(answer_words)), daemon=True
    )
    llm.start()
    ready.wait(30)
    collector = None
    tracing_env: dict[str, str] = {}
    if "on" in tracing_modes:
        urls = context.Queue()
        collector = context.Process(target=serve_otlp, args=(urls,), daemon=True)
        collector.start()
        tracing_env = {"OTEL_EXPORTER_OTLP_ENDPOINT": urls.get(timeout=30)}
    rows: list[list[object]] = []
    installation = prepared_installation(keep, library, chunks_per_document, build)
    async with installation as (url, folder, built):
        for tracing in tracing_modes:
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            server = start_server(
                url,
                f"http://127.0.0.1:{llm_port}/v1",
                folder,
                port,
                code_root=code_root,
                extra_env=tracing_env if tracing == "on" else None,
            )
            try:
                await wait_ready(base)
                users = await users_with_notes(base, user_count)
                rows += [
                    [
                        tracing,
                        *await scenario(base, users, messages, stream, pause, asked, server.pid),
                    ]
                    for pause in paces
                    for stream in (False, True)
                ]
            finally:
                server.terminate()
                server.wait(timeout=30)
        llm.terminate()
        if collector is not None:
            collector.terminate()
    scope = (
        f"a shared library of {library:,} chunks ({library // chunks_per_document:,} documents) "
        f"in every scope, built in {built} (bulk: the worker's rows by COPY, seeded random "
        "unit vectors); "
        if library
        else ""
    )
    scope += "SQuAD questions; " if squad else "one question, numbered; "
    if answer_words:
        scope += f"answers of {answer_words} words streamed a word at a time; "
    print(
        f"Chat under load, LLM answering at once; {scope}{machine()}; server, LLM and load "
        f"generator share the machine; tracing on: OTLP/HTTP to a receiver on loopback; "
        f"code: {code_root}"
    )
    print(
        table(
            [
                "tracing",
                "mode",
                "think time",
                "users",
                "requests",
                "req/s",
                "p50 ms",
                "p95 ms",
                "overhead p50 ms",
                "overhead p95 ms",
                "search p50 / p95 ms",
                "first byte p50 / p95 ms",
                "CPU ms / message: server / PostgreSQL",
                "grounded",
                "errors",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--messages", type=int, default=6)
    parser.add_argument(
        "--paces",
        nargs="+",
        default=["5-15", "1-3", "0-0"],
        help="think times between a user's messages, as MIN-MAX seconds, one scenario each",
    )
    parser.add_argument(
        "--library", type=int, default=0, help="chunks of a library shared with every user"
    )
    parser.add_argument(
        "--chunks-per-document",
        type=int,
        default=100,
        help="the library's documents' size in chunks (1: a wiki of one-chunk pages)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="build the installation in this folder once and reuse it in later runs",
    )
    parser.add_argument(
        "--squad-questions",
        action="store_true",
        help="ask real SQuAD questions (about the library) instead of one numbered question",
    )
    parser.add_argument(
        "--code-root", type=Path, default=ROOT, help="run this checkout's server (before a change)"
    )
    parser.add_argument(
        "--tracing",
        nargs="+",
        choices=["off", "on"],
        default=["off"],
        help="run the scenarios with OpenTelemetry traces off and/or on (OTLP to a local receiver)",
    )
    parser.add_argument(
        "--answer-words",
        type=int,
        default=0,
        help="the scripted model's answer length in words, streamed a word at a time "
        "(default: one short sentence)",
    )
    parser.add_argument(
        "--build",
        choices=["bulk", "worker"],
        default="bulk",
        help="write the library in bulk (COPY, the default) or as the worker writes chunks "
        "(a batch at a time; to compare the two)",
    )
    arguments = parser.parse_args()
    shortest = len(SHORT_ANSWER.split()) + 1
    if arguments.answer_words and arguments.answer_words < shortest:
        parser.error(f"--answer-words: 0 (the short answer) or at least {shortest}")
    if arguments.keep is not None:
        arguments.keep.mkdir(parents=True, exist_ok=True)
    paces = [(float(pace.split("-")[0]), float(pace.split("-")[1])) for pace in arguments.paces]
    asyncio.run(
        main(
            arguments.users,
            arguments.messages,
            paces,
            arguments.library,
            arguments.keep,
            arguments.squad_questions,
            arguments.code_root,
            arguments.chunks_per_document,
            tuple(arguments.tracing),
            arguments.answer_words,
            arguments.build,
        )
    )
