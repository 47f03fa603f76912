"""`/healthz` latency while hostile clients attack a running server (issue 13, items 2-5).

    .venv/bin/python -m bench.bench_abuse [--phase-seconds 10] [--code-root DIR]

`docchat serve` runs in its own process with its in-process worker, as the run command starts
it, with an OpenAI-protocol model that answers at once (in this process). A prober sends one
`GET /healthz` every 25 ms, one at a time, through each phase:
- idle;
- oversize bodies: chunked uploads of up to 200 MB with an invalid token and chunked JSON
  bodies of up to 200 MB to `/auth/register`, four at a time, again and again;
- failed logins: 40 concurrent logins with wrong passwords, again and again (the login
  throttles are raised for this phase, so that every attempt is hashed: the case of an
  attacker with many addresses);
- hostile PDF: a 20 KB PDF whose pages exhaust the reader, uploaded (the worker ingests it)
  and attached to six messages at once (inline answers read it too);
- amplifying ODT: an OpenDocument table of repeated rows and columns that reads as
  thousands of chunks, then another user's one-line note (how long the note waits);
- hostile sitemaps: two website sources synced again and again (Sync now): a 33 MB sitemap
  sent without a length (the case of issue 67), and one of 19 MB and 40,000 entries, just
  within the default bounds, that the sync parses in full.
`--code-root` runs another checkout's server (the same benchmark before a change).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from tests.support.files import exhausting_pdf
from tests.support.llm_server import free_port, start_scripted_llm
from tests.support.office_files import odt_with_repeated_cells
from tests.support.raw_http import send_endless_body
from tests.support.users import auth_headers, unique_email

from bench.common import (
    ROOT,
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
MB = 1024 * 1024
BOUNDARY = "bench"
FILE_PART = (
    f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\n'
    "Content-Type: text/plain\r\n\r\n"
).encode()


async def probe(base: str, until: asyncio.Event) -> list[float]:
    timings: list[float] = []
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        while not until.is_set():
            started = time.perf_counter()
            (await client.get("/healthz")).raise_for_status()
            timings.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(PROBE_GAP_SECONDS)
    return timings


async def during(base: str, attack: Callable[[], Awaitable[str]]) -> tuple[list[float], str, float]:
    """Probe while `attack` runs; the timings, what the attack saw, and how long it took."""
    stop = asyncio.Event()
    prober = asyncio.create_task(probe(base, stop))
    started = time.perf_counter()
    outcome = await attack()
    elapsed = time.perf_counter() - started
    stop.set()
    return await prober, outcome, elapsed


async def repeat_until(
    seconds: float, workers: int, one: Callable[[], Awaitable[str]]
) -> Counter[str]:
    deadline = time.monotonic() + seconds
    seen: Counter[str] = Counter()

    async def worker() -> None:
        while time.monotonic() < deadline:
            seen[await one()] += 1

    await asyncio.gather(*(worker() for _ in range(workers)))
    return seen


def oversize_bodies(port: int, seconds: float) -> Callable[[], Awaitable[str]]:
    sent: list[int] = []

    def upload() -> str:
        outcome = send_endless_body(
            port,
            "POST",
            "/api/v1/documents",
            {
                "Authorization": "Bearer forged",
                "Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
            },
            give_up_after=200 * MB,
            prefix=FILE_PART,
        )
        sent.append(outcome.sent_bytes)
        return f"upload {outcome.status}"

    def register() -> str:
        outcome = send_endless_body(
            port,
            "POST",
            "/api/v1/auth/register",
            {"Content-Type": "application/json"},
            give_up_after=200 * MB,
        )
        sent.append(outcome.sent_bytes)
        return f"register {outcome.status}"

    async def one(index: list[int] = [0]) -> str:  # noqa: B006 - alternates between the two
        index[0] += 1
        return await asyncio.to_thread(upload if index[0] % 2 else register)

    async def attack() -> str:
        seen = await repeat_until(seconds, 4, one)
        return f"{sum(seen.values())} bodies ({dict(seen)}), at most {max(sent) / MB:.1f} MB sent"

    return attack


def failed_logins(base: str, seconds: float) -> Callable[[], Awaitable[str]]:
    async def attack() -> str:
        async with httpx.AsyncClient(base_url=base, timeout=120) as client:

            async def one() -> str:
                response = await client.post(
                    "/api/v1/auth/login",
                    data={"username": unique_email("victim"), "password": "not the password"},
                )
                return str(response.status_code)

            seen = await repeat_until(seconds, 40, one)
        return f"{sum(seen.values())} logins ({dict(seen)})"

    return attack


def hostile_pdf(base: str, limit_seconds: float) -> Callable[[], Awaitable[str]]:
    async def attack() -> str:
        async with httpx.AsyncClient(base_url=base, timeout=limit_seconds + 60) as client:
            headers = await auth_headers(client)
            started = time.perf_counter()
            uploaded = await client.post(
                "/api/v1/documents", headers=headers, files={"file": ("x.pdf", exhausting_pdf())}
            )
            uploaded.raise_for_status()
            url = f"/api/v1/documents/{uploaded.json()['id']}"
            body = {"content": "What does it say?", "document_ids": [uploaded.json()["id"]]}
            messages = [
                asyncio.create_task(client.post("/api/v1/messages", headers=headers, json=body))
                for _ in range(6)
            ]
            status = "queued"
            while status in UNFINISHED and time.perf_counter() - started < limit_seconds:
                await asyncio.sleep(0.5)
                status = (await client.get(url, headers=headers)).json()["status"]
            ingest = time.perf_counter() - started
            done, pending = await asyncio.wait(messages, timeout=max(1, limit_seconds - ingest))
            for task in pending:
                task.cancel()
            answered = time.perf_counter() - started
            codes = Counter(str(task.result().status_code) for task in done if not task.exception())
        return (
            f"document {status} after {ingest:.0f} s; {len(done)}/6 messages answered "
            f"({dict(codes)}) after {answered:.0f} s"
        )

    return attack


async def _wait_done(
    client: httpx.AsyncClient, headers: dict[str, str], url: str, deadline: float
) -> tuple[str, float]:
    """The document's status once it is no longer waiting or processing (or at the
    deadline), and when that was (perf_counter)."""
    status = "queued"
    while status in UNFINISHED and time.perf_counter() < deadline:
        await asyncio.sleep(0.5)
        status = (await client.get(url, headers=headers)).json()["status"]
    return status, time.perf_counter()


def amplifying_odt(base: str, limit_seconds: float) -> Callable[[], Awaitable[str]]:
    """A 50 KB OpenDocument text whose table declares thousands of repeated columns and a
    million repeated rows, and, two seconds later, another user's one-line note."""

    async def attack() -> str:
        async with httpx.AsyncClient(base_url=base, timeout=limit_seconds + 60) as client:
            attacker, colleague = await auth_headers(client), await auth_headers(client)
            started = time.perf_counter()
            deadline = started + limit_seconds
            hostile = await client.post(
                "/api/v1/documents",
                headers=attacker,
                files={"file": ("sheet.odt", odt_with_repeated_cells())},
            )
            hostile.raise_for_status()
            await asyncio.sleep(2)
            note = await client.post(
                "/api/v1/documents",
                headers=colleague,
                files={"file": ("note.txt", b"The standup moved to 09:30.", "text/plain")},
            )
            note.raise_for_status()
            note_sent = time.perf_counter()
            odt_url = f"/api/v1/documents/{hostile.json()['id']}"
            note_url = f"/api/v1/documents/{note.json()['id']}"
            (note_status, note_done), (odt_status, odt_done) = await asyncio.gather(
                _wait_done(client, colleague, note_url, deadline),
                _wait_done(client, attacker, odt_url, deadline),
            )
        return (
            f"ODT {odt_status} after {odt_done - started:.0f} s; the other user's note "
            f"{note_status} {note_done - note_sent:.1f} s after upload"
        )

    return attack


def _sitemap(entries: int, loc: Callable[[int], str]) -> bytes:
    urls = "".join(f"<url><loc>{loc(index)}</loc></url>\n" for index in range(entries))
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{urls}</urlset>\n'
    ).encode()


@contextmanager
def hostile_site() -> Iterator[str]:
    """A site on loopback with /big/sitemap.xml (33 MB, no length given: read until the
    bound) and /many/sitemap.xml (19 MB, 40,000 entries of long addresses outside its folder,
    so the sync lists nothing and fetches no page)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    big = _sitemap(330_000, lambda index: f"{base}/big/page-{index:08d}.html")
    padding = "x" * 400
    many = _sitemap(40_000, lambda index: f"{base}/elsewhere/{padding}/{index:08d}.html")
    bodies = {"/big/sitemap.xml": big, "/many/sitemap.xml": many}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # the body ends when the connection does

        def do_GET(self) -> None:
            body = bodies.get(self.path)
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "application/xml")
            self.end_headers()
            if body:
                for start in range(0, len(body), 1 << 20):
                    self.wfile.write(body[start : start + (1 << 20)])

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield base
    finally:
        server.shutdown()
        server.server_close()


def hostile_sitemaps(base: str, site: str, seconds: float) -> Callable[[], Awaitable[str]]:
    async def attack() -> str:
        async with httpx.AsyncClient(base_url=base, timeout=120) as client:
            headers = await auth_headers(client)
            made = await client.post("/api/v1/collections", headers=headers, json={"name": "S"})
            made.raise_for_status()
            sources = []
            for name in ("big", "many"):
                body = {
                    "name": name,
                    "kind": "website",
                    "settings": {"url": f"{site}/{name}/sitemap.xml"},
                    "interval_minutes": None,
                }
                created = await client.post(
                    f"/api/v1/collections/{made.json()['id']}/sources", headers=headers, json=body
                )
                created.raise_for_status()
                sources.append(created.json()["id"])
            syncs: Counter[str] = Counter()
            outcome: dict[str, str] = {}
            last: dict[str, str] = {}
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                for name, source in zip(("big", "many"), sources, strict=True):
                    state = (await client.get(f"/api/v1/sources/{source}", headers=headers)).json()
                    finished = state["last_finished_at"]
                    if finished and finished != last.get(name):
                        last[name] = finished
                        syncs[name] += 1
                        outcome[name] = (state["last_error"] or "ok")[:60]
                        await client.post(f"/api/v1/sources/{source}/sync", headers=headers)
                await asyncio.sleep(0.5)
        return "; ".join(f"{name}: {syncs[name]} syncs, {outcome.get(name)}" for name in outcome)

    return attack


def row(label: str, timings: list[float], outcome: str, seconds: float) -> list[object]:
    return [
        label,
        f"{seconds:.0f}",
        len(timings),
        f"{median(timings):.1f}",
        f"{percentile(timings, 95):.1f}",
        f"{percentile(timings, 99):.1f}",
        f"{max(timings):.0f}",
        outcome,
    ]


async def main(phase_seconds: float, code_root: Path, only: list[str] | None = None) -> None:
    llm = start_scripted_llm()
    url = await fresh_database()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    rows: list[list[object]] = []
    # Every login is hashed: no throttle helps (an attacker with many addresses).
    unthrottled = {
        "AUTH_LOGIN_MAX_FAILURES": "100000",
        "AUTH_LOGIN_ADDRESS_MAX_FAILURES": "100000",
        "AUTH_LOGIN_ACCOUNT_MAX_FAILURES": "100000",
        "MAX_UPLOAD_MB": "50",
        # The hostile site is on loopback; sources are looked for often, to sync again at once.
        "URL_FETCH_ALLOWED_HOSTS": '["127.0.0.1"]',
        "SOURCES_POLL_SECONDS": "1",
    }
    with tempfile.TemporaryDirectory() as folder, hostile_site() as site:
        server = start_server(
            url, llm.base_url, Path(folder), port, extra_env=unthrottled, code_root=code_root
        )
        try:
            await wait_ready(base, probe="/healthz")
            await during(base, lambda: asyncio.sleep(2, "warm-up"))

            async def idle() -> str:
                await asyncio.sleep(phase_seconds)
                return "-"

            for label, attack in (
                ("idle", idle),
                ("oversize bodies", oversize_bodies(port, phase_seconds)),
                ("failed logins", failed_logins(base, phase_seconds)),
                ("hostile PDF", hostile_pdf(base, 240)),
                ("amplifying ODT", amplifying_odt(base, 150)),
                ("hostile sitemaps", hostile_sitemaps(base, site, max(phase_seconds, 30))),
            ):
                if only and label != "idle" and label not in only:
                    continue
                timings, outcome, seconds = await during(base, attack)
                rows.append(row(label, timings, outcome, seconds))
                print(f"  {label}: done", flush=True)
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:  # stuck in a reader thread (older versions)
                server.kill()
                server.wait()
            llm.stop()
    await drop_database(url)
    print(
        f"GET /healthz every {PROBE_GAP_SECONDS * 1000:.0f} ms during each attack; code: {code_root}; {machine()}"
    )
    print(
        table(
            [
                "attack",
                "s",
                "probes",
                "p50 ms",
                "p95 ms",
                "p99 ms",
                "max ms",
                "what the attacker saw",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--phase-seconds", type=float, default=10.0)
    parser.add_argument("--code-root", type=Path, default=ROOT)
    parser.add_argument(
        "--only", action="append", help="run only the attacks named (idle always runs)"
    )
    arguments = parser.parse_args()
    asyncio.run(main(arguments.phase_seconds, arguments.code_root, arguments.only))
