"""The web app's first paint: first contentful paint (FCP) and when the chat page is usable.

    .venv/bin/python -m bench.bench_web [--runs 10]

`docchat serve` in its own process serves the built app (frontend/dist: run `npm run build`
first) on loopback, with gzip; Debian's Chromium (Playwright) opens it, each run in a fresh
profile (nothing cached) and then once more in the same profile (cached). Reported: FCP from
the browser's paint timing, "ready" when the signed-in chat page shows its chat list and
composer, and the bytes the page transferred (compressed, as sent). Targets (issue 40): FCP
under 600 ms, under 200 KB on a first visit.

`--dist before=/path/to/dist --dist after=frontend/dist` measures several builds in one run
(each served by its own process), for a before/after figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
from pathlib import Path

import httpx
from playwright.async_api import Browser, Page, async_playwright
from tests.support.processes import docchat_env, start_api, wait_for

from bench.common import ROOT, drop_database, fresh_database, machine, median, percentile, table

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
PASSWORD = "bench password 1234"
_TIMINGS = """() => {
  const paint = performance.getEntriesByName("first-contentful-paint")[0];
  const resources = performance.getEntriesByType("resource");
  const navigation = performance.getEntriesByType("navigation")[0];
  const bytes = resources.reduce((sum, r) => sum + r.transferSize, navigation.transferSize);
  return { fcp: paint ? paint.startTime : null, bytes };
}"""


async def _visit(page: Page, url: str, ready_selector: str) -> tuple[float, float, int]:
    await page.goto(url)
    await page.wait_for_selector(ready_selector)
    ready = float(await page.evaluate("performance.now()"))
    await page.wait_for_load_state("load")
    timings = await page.evaluate(_TIMINGS)
    return float(timings["fcp"]), ready, int(timings["bytes"])


async def _measure(
    browser: Browser, url: str, tokens: dict[str, str] | None, runs: int
) -> list[list[object]]:
    """Rows for one page: cold (fresh profile) and warm (the same profile again)."""
    selector = "textarea" if tokens else "text=Log in to docchat"
    cold: list[tuple[float, float, int]] = []
    warm: list[tuple[float, float, int]] = []
    for _ in range(runs):
        context = await browser.new_context(viewport={"width": 1400, "height": 900})
        if tokens:
            await context.add_init_script(
                f"localStorage.setItem('docchat.tokens', {json.dumps(json.dumps(tokens))})"
            )
        page = await context.new_page()
        cold.append(await _visit(page, url, selector))
        warm.append(await _visit(page, url, selector))
        await context.close()
    name = "chat page (signed in)" if tokens else "login page"
    rows: list[list[object]] = []
    for label, samples in (("first visit", cold), ("cached", warm)):
        fcps = [s[0] for s in samples]
        rows.append(
            [
                name,
                label,
                f"{median(fcps):.0f}",
                f"{percentile(fcps, 95):.0f}",
                f"{median([s[1] for s in samples]):.0f}",
                f"{median([s[2] for s in samples]) / 1024:.0f}",
            ]
        )
    return rows


async def _measure_build(label: str, dist: Path, runs: int) -> list[list[object]]:
    url = await fresh_database()
    with tempfile.TemporaryDirectory() as folder:
        env = docchat_env(
            DATABASE_URL=url,
            DATA_DIR=str(Path(folder) / "data"),
            AUTH_SECRET_KEY="bench-secret-key-0123456789-abcdefgh",
            LLM_BASE_URL="http://127.0.0.1:9/v1",
            FRONTEND_DIR=str(dist),
        )
        api = start_api("web", env, Path(folder))
        try:
            # /healthz, not /readyz: readiness also wants a model, which this bench has none of.
            assert api.url is not None, "the API was started with a port"
            wait_for(api, f"{api.url}/healthz")
            email = "bench-web@example.com"
            async with httpx.AsyncClient(base_url=api.url) as client:
                await client.post(
                    "/api/v1/auth/register", json={"email": email, "password": PASSWORD}
                )
                login = await client.post(
                    "/api/v1/auth/login", data={"username": email, "password": PASSWORD}
                )
                tokens = login.json()
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                rows = await _measure(browser, api.url, None, runs)
                rows += await _measure(browser, api.url, tokens, runs)
                await browser.close()
        finally:
            api.stop()
    await drop_database(url)
    return [[label, *row] for row in rows]


async def main(runs: int, builds: list[tuple[str, Path]]) -> None:
    for _, dist in builds:
        if not (dist / "index.html").is_file():
            raise SystemExit(f"No build in {dist}: cd frontend && npm run build")
    rows: list[list[object]] = []
    for label, dist in builds:
        rows += await _measure_build(label, dist, runs)
    print(f"Web app first paint, {runs} runs each; {machine()}")
    headers = ["page", "cache", "FCP p50 ms", "FCP p95 ms", "usable p50 ms", "KB transferred"]
    print(table(["build", *headers], rows))


def _build(value: str) -> tuple[str, Path]:
    label, _, path = value.partition("=")
    return (label, Path(path)) if path else ("this build", Path(label))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument(
        "--dist",
        type=_build,
        action="append",
        help="label=folder of a build to measure (repeatable); default: frontend/dist",
    )
    arguments = parser.parse_args()
    builds = arguments.dist or [("this build", ROOT / "frontend" / "dist")]
    asyncio.run(main(arguments.runs, builds))
