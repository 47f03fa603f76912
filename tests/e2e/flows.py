"""What every browser test does on the way to what it tests: sign up, log in, ask."""

from __future__ import annotations

import uuid

from playwright.async_api import Page, expect

from tests.support.live_server import LiveServer

PASSWORD = "correct horse battery"


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
