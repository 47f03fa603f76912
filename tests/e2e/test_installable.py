"""The web app installs as an app (a manifest with icons, a service worker) and, without a
network, opens and says it is offline, then comes back by itself (issue 40)."""

from __future__ import annotations

import httpx
from playwright.async_api import expect

from tests.e2e.conftest import SCREENSHOTS
from tests.e2e.flows import SignIn
from tests.support.live_server import LiveServer


async def test_the_app_is_installable_and_opens_offline_saying_so(
    signed_in: SignIn, live_server: LiveServer
) -> None:
    page, _ = await signed_in(viewport={"width": 390, "height": 844}, service_workers="allow")
    manifest_url = await page.get_attribute("link[rel=manifest]", "href")
    assert manifest_url == "/manifest.json"
    async with httpx.AsyncClient(base_url=live_server.url) as http:
        manifest = (await http.get(manifest_url)).json()
        assert manifest["display"] == "standalone" and manifest["start_url"] == "/"
        sizes = {icon["sizes"] for icon in manifest["icons"]}
        assert {"192x192", "512x512"} <= sizes
        for icon in manifest["icons"]:
            response = await http.get(icon["src"])
            assert response.status_code == 200 and response.headers["content-type"] == icon["type"]

    # The worker is running and keeps the app's files (the second load goes through it).
    assert await page.evaluate("navigator.serviceWorker.ready.then((r) => Boolean(r.active))")
    await page.reload()
    await expect(page.get_by_role("textbox", name="Message")).to_be_visible()
    assert await page.evaluate("Boolean(navigator.serviceWorker.controller)")

    # Another page of the server (the API's docs), visited last, is not taken for the shell.
    await page.goto(f"{live_server.url}/docs")
    await page.context.set_offline(True)
    await page.goto(live_server.url)
    await expect(page.get_by_role("heading", name="You are offline")).to_be_visible()
    await page.screenshot(path=str(SCREENSHOTS / "offline-phone.png"))

    await page.context.set_offline(False)  # back by itself, no reload
    await expect(page.get_by_role("textbox", name="Message")).to_be_visible(timeout=15_000)

    # Signed in and losing the network: a bar says so, the page stays.
    await page.context.set_offline(True)
    await expect(page.get_by_role("status").filter(has_text="You are offline")).to_be_visible()
    await page.context.set_offline(False)
    await expect(page.get_by_role("status").filter(has_text="You are offline")).to_have_count(0)
