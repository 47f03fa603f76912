"""What every browser test does on the way to what it tests: sign up, log in, upload, ask."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Awaitable, Callable

from playwright.async_api import Page, expect
from playwright.async_api import TimeoutError as PlaywrightTimeout

from tests.support.live_server import LiveServer

PASSWORD = "correct horse battery"
# The `signed_in` fixture: browser context options in, a new account's page and email out.
SignIn = Callable[..., Awaitable[tuple[Page, str]]]


async def sign_up(page: Page, server: LiveServer) -> str:
    email = f"e2e-{uuid.uuid4().hex[:8]}@example.com"
    await page.goto(server.url)
    await expect(page.get_by_role("heading", name="Log in to docchat")).to_be_visible()
    await page.get_by_role("button", name="No account yet? Sign up").click()
    await page.get_by_label("Email").fill(email)
    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_role("button", name="Sign up").click()
    # The composer shows at every size (on a phone, the chat list is in a closed drawer).
    await expect(page.get_by_role("textbox", name="Message")).to_be_visible()
    return email


async def ask(page: Page, question: str) -> None:
    box = page.get_by_role("textbox", name="Message")
    await box.fill(question)
    await box.press("Enter")


async def log_in(page: Page, server: LiveServer, email: str, password: str) -> None:
    await page.goto(server.url)
    await page.get_by_label("Email").fill(email)
    await page.get_by_label("Password").fill(password)
    await page.get_by_role("button", name="Log in").click()


async def upload(page: Page, files: dict[str, bytes], wait_ms: float = 60_000) -> None:
    """Upload files through the documents panel (their type sniffed by the server) and wait
    until each is searchable. Documents are found by name: the administrator's shared ones are
    listed too."""
    chosen = [{"name": name, "mimeType": "", "buffer": content} for name, content in files.items()]
    listed = page.get_by_test_id("document").or_(page.get_by_text("No documents yet."))
    await expect(listed.first).to_be_attached()
    first = page.get_by_test_id("document").filter(has_text=next(iter(files)))
    seen = page.get_by_test_id("upload").or_(first)
    # In CI (about 1 full run in 3) a file picked right after sign-up sometimes left no trace:
    # no upload row, no request, the documents panel listed; once even when picked a second
    # time 5 s later. Not reproduced alone or at a person's pace; cause unknown. The page is
    # let settle first, and the file picked up to three times, so the tests after it run.
    with contextlib.suppress(PlaywrightTimeout):  # an open answer stream never idles
        await page.wait_for_load_state("networkidle", timeout=3_000)
    for attempt in range(3):
        await page.get_by_test_id("file-input").set_input_files(chosen)
        try:
            await expect(seen.first).to_be_attached(timeout=5_000)
            break
        except AssertionError:
            if attempt == 2:
                raise
    for name in files:
        document = page.get_by_test_id("document").filter(has_text=name)
        await expect(document).to_have_attribute("data-status", "completed", timeout=wait_ms)


async def upload_texts(page: Page, files: dict[str, str]) -> None:
    await upload(page, {name: text.encode() for name, text in files.items()})
