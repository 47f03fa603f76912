"""The answer cache under a team's workload: model calls saved and latency, cache off and on.

    .venv/bin/python -m bench.bench_answer_cache [--users 50] [--messages 6] [--repeats 0.2]
        [--articles 8] [--model-seconds 1.5]

One installation, two runs of `docchat serve` (RAG_ANSWER_CACHE off, then on). A team lead
uploads `--articles` squad-dev articles into a collection and invites every user, who accepts;
each user then asks `--messages` questions about the collection, each in a new chat, pausing
5-15 s between them. A question is, with probability `--repeats`, a repeat: one the user asked
before (half of those reworded trivially: lower case, no question mark), or, when they have
asked nothing yet or at even odds, one a colleague asked before, which a cached answer must
not serve (an answer belongs to its asker); else a SQuAD question about the articles not asked
yet. The model is the scripted OpenAI-protocol server, taking `--model-seconds` per answer, as
a remote model does. "Model calls" counts answers not marked `meta.cached`; a "false reuse" is
a cached answer to a question the user had not asked before.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from tests.support.llm_server import free_port
from tests.support.users import auth_headers

from bench.bench_chat_load import serve_llm
from bench.common import (
    drop_database,
    fresh_database,
    machine,
    median,
    percentile,
    start_server,
    table,
    unfinished_documents,
    wait_ready,
)

SQUAD = Path(__file__).parent / "datasets" / "squad-dev"


def library(articles: int) -> tuple[list[tuple[str, str]], list[str]]:
    """The first `articles` squad-dev articles (file name, text) and their questions."""
    documents: list[tuple[str, str, str]] = []
    with (SQUAD / "documents.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            entry = json.loads(line)
            if len(documents) < articles:
                documents.append((str(entry["_id"]), str(entry["title"]), str(entry["text"])))
    keys = {key for key, _, _ in documents}
    judged = set()
    for row in (SQUAD / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        query, paragraph, _ = row.split("\t")
        if paragraph.split("-")[0] in keys:
            judged.add(query)
    questions = []
    with (SQUAD / "queries.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            entry = json.loads(line)
            if entry["_id"] in judged:
                questions.append(str(entry["text"]))
    files = [(f"{title[:60].replace('/', ' ')}.txt", text) for _, title, text in documents]
    return files, questions


@dataclass
class Workload:
    """Who asks what, decided before the runs so both ask the same."""

    # per user: (question, "new", "same", "reworded" or "colleague")
    plan: list[list[tuple[str, str]]]

    @classmethod
    def build(cls, users: int, messages: int, repeats: float, questions: list[str]) -> Workload:
        rng = random.Random(7)
        fresh = list(dict.fromkeys(questions))
        rng.shuffle(fresh)
        asked: list[str] = []
        plan: list[list[tuple[str, str]]] = [[] for _ in range(users)]
        # Round by round, so a repeat is of a question asked in an earlier round (answered
        # by then), never of one asked later in its own round.
        for _ in range(messages):
            earlier = list(asked)
            for user in range(users):
                own = [question for question, kind in plan[user] if kind == "new"]
                others = [question for question in earlier if question not in own]
                if earlier and rng.random() < repeats:
                    if own and (not others or rng.random() < 0.5):
                        question, kind = rng.choice(own), "same"
                        if rng.random() < 0.5:
                            question, kind = question.lower().rstrip("?").strip(), "reworded"
                    else:
                        question, kind = rng.choice(others), "colleague"
                    plan[user].append((question, kind))
                else:
                    question = fresh.pop()
                    asked.append(question)
                    plan[user].append((question, "new"))
        return cls(plan)


@dataclass
class Results:
    latency: list[float] = field(default_factory=list)
    repeat_latency: list[float] = field(default_factory=list)
    model_calls: int = 0
    repeats: dict[str, int] = field(default_factory=lambda: {"same": 0, "reworded": 0})
    reused: dict[str, int] = field(default_factory=lambda: {"same": 0, "reworded": 0})
    false_reuse: int = 0
    colleague: int = 0
    errors: int = 0


async def run_user(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    questions: list[tuple[str, str]],
    collection: str,
    rng: random.Random,
    results: Results,
    round_gate: list[asyncio.Event],
) -> None:
    for index, (question, kind) in enumerate(questions):
        await round_gate[index].wait()
        await asyncio.sleep(rng.uniform(0, 10))
        body = {"content": question, "collection_ids": [collection]}
        started = time.perf_counter()
        try:
            response = await client.post("/api/v1/messages", headers=headers, json=body)
            response.raise_for_status()
        except httpx.HTTPError:
            results.errors += 1
            continue
        latency = (time.perf_counter() - started) * 1000
        cached = bool(response.json()["assistant_message"]["meta"].get("cached"))
        results.latency.append(latency)
        results.model_calls += not cached
        if kind == "colleague":
            results.colleague += 1
            results.false_reuse += cached
        elif kind != "new":
            results.repeats[kind] += 1
            results.reused[kind] += cached
            results.repeat_latency.append(latency)
        elif cached:
            results.false_reuse += 1


async def one_run(
    base: str,
    users: list[dict[str, str]],
    workload: Workload,
    collection: str,
) -> Results:
    results = Results()
    rng = random.Random(11)
    rounds = len(workload.plan[0])
    gates = [asyncio.Event() for _ in range(rounds)]
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        tasks = [
            asyncio.create_task(
                run_user(client, headers, questions, collection, rng, results, gates)
            )
            for headers, questions in zip(users, workload.plan, strict=True)
        ]
        # Rounds of 12 s: every question of a round is answered before the next round's
        # repeats come (an answer must be kept before it can be reused).
        for gate in gates:
            gate.set()
            await asyncio.sleep(12)
        await asyncio.gather(*tasks)
    return results


async def prepare(
    base: str, user_count: int, files: list[tuple[str, str]]
) -> tuple[list[dict[str, str]], str]:
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        lead = await auth_headers(client)
        made = await client.post("/api/v1/collections", headers=lead, json={"name": "Handbook"})
        collection = made.json()["id"]
        for name, text in files:
            uploaded = await client.post(
                "/api/v1/documents", headers=lead, files={"file": (name, text.encode())}
            )
            uploaded.raise_for_status()
            added = await client.put(
                f"/api/v1/collections/{collection}/documents/{uploaded.json()['id']}", headers=lead
            )
            added.raise_for_status()
        users = [lead]
        for _ in range(user_count - 1):
            headers = await auth_headers(client)
            email = (await client.get("/api/v1/users/me", headers=headers)).json()["email"]
            invited = await client.post(
                f"/api/v1/collections/{collection}/members",
                headers=lead,
                json={"email": email, "role": "viewer"},
            )
            invited.raise_for_status()
            await client.post(
                f"/api/v1/collections/{collection}/invitation/accept", headers=headers
            )
            users.append(headers)
        for _ in range(1200):
            if not await unfinished_documents(client, lead):
                break
            await asyncio.sleep(0.5)
        else:
            raise RuntimeError("the articles were not indexed within 10 minutes")
    return users, collection


def row(name: str, results: Results, baseline: Results | None) -> list[object]:
    saved = (
        f"{100 * (1 - results.model_calls / baseline.model_calls):.1f}%"
        if baseline and baseline.model_calls
        else "-"
    )
    return [
        name,
        len(results.latency),
        results.model_calls,
        saved,
        f"{results.reused['same']}/{results.repeats['same']}",
        f"{results.reused['reworded']}/{results.repeats['reworded']}",
        results.colleague,
        results.false_reuse,
        f"{median(results.latency):.0f} / {percentile(results.latency, 95):.0f}",
        f"{median(results.repeat_latency):.0f} / {percentile(results.repeat_latency, 95):.0f}",
        results.errors,
    ]


async def main(options: argparse.Namespace) -> None:
    files, questions = library(options.articles)
    workload = Workload.build(options.users, options.messages, options.repeats, questions)
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    llm_port = free_port()
    llm = context.Process(
        target=serve_llm,
        args=(llm_port, ready, "It is stated in the passage [1].", options.model_seconds),
        daemon=True,
    )
    llm.start()
    ready.wait(30)
    url = await fresh_database()
    rows = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            users: list[dict[str, str]] = []
            collection = ""
            baseline: Results | None = None
            for cache in ("false", "true"):
                port = free_port()
                base = f"http://127.0.0.1:{port}"
                server = start_server(
                    url,
                    f"http://127.0.0.1:{llm_port}/v1",
                    Path(folder),
                    port,
                    extra_env={"RAG_ANSWER_CACHE": cache},
                )
                try:
                    await wait_ready(base)
                    if not users:
                        users, collection = await prepare(base, options.users, files)
                    results = await one_run(base, users, workload, collection)
                finally:
                    server.terminate()
                    server.wait(timeout=30)
                rows.append(row(f"cache {'on' if cache == 'true' else 'off'}", results, baseline))
                baseline = baseline or results
    finally:
        llm.terminate()
        with contextlib.suppress(Exception):
            await drop_database(url)
    print(
        f"\nAnswer cache: {options.users} users, {options.messages} questions each about "
        f"{options.articles} squad-dev articles in a shared collection, {options.repeats:.0%} "
        f"repeats (own ones half reworded, or a colleague's), model {options.model_seconds:g} s per answer; {machine()}"
    )
    print(
        table(
            [
                "run",
                "questions",
                "model calls",
                "saved",
                "same words reused",
                "reworded reused",
                "colleagues' questions",
                "false reuse",
                "p50 / p95 ms",
                "repeats p50 / p95 ms",
                "errors",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--messages", type=int, default=6)
    parser.add_argument("--repeats", type=float, default=0.2)
    parser.add_argument("--articles", type=int, default=8)
    parser.add_argument("--model-seconds", type=float, default=1.5)
    asyncio.run(main(parser.parse_args()))
