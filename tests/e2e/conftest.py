"""End-to-end fixtures: the real app on loopback and Debian's Chromium driven by Playwright."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import Browser, BrowserContext, Page, async_playwright
from pydantic import SecretStr

from docchat.config import Settings, SourceSettings, UrlFetchSettings, WorkerSettings
from tests.e2e.flows import SignIn, sign_up
from tests.support import glossary
from tests.support.database import alembic, create_database, drop_database
from tests.support.live_server import LiveServer
from tests.support.llm_server import ScriptedLLM

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "frontend" / "dist"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# The flags this machine needs: no sandbox as root, no GPU, and no calls home.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Written on every run; the README shows copies kept in docs/screenshots.
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
ADMIN_EMAIL = "admin@example.com"
ADMIN_PASSWORD = "admin password 123"
DESKTOP = {"width": 1400, "height": 900}


@pytest_asyncio.fixture(scope="session")
async def e2e_database_url() -> AsyncIterator[str]:
    """A database of the browser tests' own: what their server commits (documents shared with
    everyone, among others) must not reach the API tests' database, whatever the order."""
    url = await create_database("docchat_e2e")
    await alembic(url, "upgrade", "head")
    yield url
    await drop_database(url)


@pytest.fixture(scope="session")
def shared_folders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the live server's administrators may add folder sources."""
    return tmp_path_factory.mktemp("shared-folders")


@pytest.fixture(scope="session")
def live_server(
    settings: Settings,
    tmp_path_factory: pytest.TempPathFactory,
    e2e_database_url: str,
    shared_folders: Path,
    compiled_glossary: Path,
) -> Iterator[LiveServer]:
    if not (DIST / "index.html").is_file():
        pytest.fail(
            "The web app is not built: run `npm run build` in frontend/ (scripts/test.sh does)"
        )
    e2e_settings = settings.model_copy(
        update={
            "database_url": e2e_database_url,
            "data_dir": glossary.seed(compiled_glossary, tmp_path_factory.mktemp("e2e-data")),
            "frontend_dir": DIST,
            "worker": WorkerSettings(_env_file=None, enabled=True, poll_seconds=0.2),  # type: ignore[call-arg]
            # Every browser test signs up from loopback; the sign-up limit is tested elsewhere.
            "auth": settings.auth.model_copy(update={"register_max_per_address": 1000}),
            # The pages a test fetches by URL come from a server on loopback.
            "url_fetch": UrlFetchSettings(_env_file=None, allowed_hosts=["127.0.0.1"]),  # type: ignore[call-arg]
            "sources": SourceSettings(  # type: ignore[call-arg]
                _env_file=None, folder_roots=[shared_folders], poll_seconds=0.3
            ),
            "admin_email": ADMIN_EMAIL,
            "admin_password": SecretStr(ADMIN_PASSWORD),
        }
    )
    server = LiveServer(e2e_settings).start()
    yield server
    server.stop()


@pytest_asyncio.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    if not shutil.which(CHROMIUM):
        pytest.fail("Chromium is not installed (Debian: apt-get install chromium)")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        await browser.close()


@pytest_asyncio.fixture
async def signed_in(
    browser: Browser, live_server: LiveServer, scripted_llm: ScriptedLLM
) -> AsyncIterator[SignIn]:
    """Opens a browser context (desktop size unless the options say otherwise) with a page
    signed in as a new account, returning the page and the account's email; the model's script
    is reset first and every context opened is closed after the test, failed or not."""
    scripted_llm.reset()
    contexts: list[BrowserContext] = []

    async def open_page(**options: Any) -> tuple[Page, str]:
        # No service worker unless a test asks for one: page.route() does not see what a
        # worker fetches, and most tests route requests.
        defaults = {"viewport": DESKTOP, "service_workers": "block"}
        context = await browser.new_context(**{**defaults, **options})
        contexts.append(context)
        page = await context.new_page()
        return page, await sign_up(page, live_server)

    yield open_page
    for context in contexts:
        await context.close()
