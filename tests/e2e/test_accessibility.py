"""Every page of the web app, at desktop and phone sizes, in light and dark colours, checked by
axe-core: no serious or critical violations (issue 19). Also: the colour theme follows the
system unless the user picks one, and the pick is kept."""

from __future__ import annotations

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from tests.e2e.accessibility import serious_violations
from tests.e2e.conftest import ADMIN_EMAIL, ADMIN_PASSWORD, SCREENSHOTS
from tests.e2e.flows import ask, log_in, sign_up, upload
from tests.support.live_server import LiveServer
from tests.support.llm_server import ScriptedLLM

SIZES = {"desktop": {"width": 1400, "height": 900}, "phone": {"width": 390, "height": 844}}
# A select's chosen words, measured in its font, with room for its arrow; and the room inside it.
FITS = """(select) => {
  const style = getComputedStyle(select);
  const context = document.createElement("canvas").getContext("2d");
  context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
  const words = context.measureText(select.selectedOptions[0].text).width;
  const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
  return { needed: words + 20, room: select.clientWidth - padding };
}"""


async def _check(page: Page, where: str, problems: dict[str, list[str]]) -> None:
    found = await serious_violations(page)
    if found:
        problems[where] = found


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", ["desktop", "phone"])
async def test_every_page_has_no_serious_accessibility_violations(
    browser: Browser, live_server: LiveServer, scripted_llm: ScriptedLLM, size: str, scheme: str
) -> None:
    scripted_llm.reset()
    context = await browser.new_context(
        viewport=SIZES[size],  # type: ignore[arg-type]
        color_scheme=scheme,  # type: ignore[arg-type]
        bypass_csp=True,
    )
    page = await context.new_page()
    problems: dict[str, list[str]] = {}
    await page.goto(live_server.url)
    await expect(page.get_by_role("heading", name="Log in to docchat")).to_be_visible()
    await _check(page, "login", problems)

    await sign_up(page, live_server)
    # A collection of one's own (with Everyone's): the composer offers "Ask within".
    token = await page.evaluate("JSON.parse(localStorage.getItem('docchat.tokens')).access_token")
    async with httpx.AsyncClient(base_url=live_server.url) as http:
        made = await http.post(
            "/api/v1/collections",
            json={"name": "Team notes"},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert made.status_code == 201, made.text
    await page.reload()
    await expect(page.get_by_label("Ask within")).to_be_visible()
    await _check(page, "empty chat", problems)
    await upload(page, {"pier.txt": b"Ferries leave from pier 4."})
    scripted_llm.script("From pier 4 [1].")
    await ask(page, "Where do ferries leave from?")
    answer = page.get_by_test_id("message-assistant").last
    await expect(answer).to_contain_text("pier 4")
    await _check(page, "chat with an answer", problems)
    # In a chat its choice is longest: at a phone's width its words were cut off.
    fit = await page.get_by_label("Ask within").evaluate(FITS)
    assert fit["needed"] <= fit["room"], fit
    if scheme == "light":
        await page.screenshot(path=str(SCREENSHOTS / f"ask-within-{size}.png"))
    await answer.get_by_role("button", name="Show source 1").click()
    await _check(page, "sources", problems)
    await page.screenshot(path=str(SCREENSHOTS / f"a11y-chat-{size}-{scheme}.png"))

    nav = page.get_by_role("navigation", name="Main")
    await nav.get_by_role("button", name="Collections").click()
    await _check(page, "collections", problems)
    await nav.get_by_role("button", name="Back to chats").click()
    await nav.get_by_role("button", name="Account").click()
    await _check(page, "account", problems)

    admin_context = await browser.new_context(
        viewport=SIZES[size],  # type: ignore[arg-type]
        color_scheme=scheme,  # type: ignore[arg-type]
        bypass_csp=True,
    )
    admin = await admin_context.new_page()
    await log_in(admin, live_server, ADMIN_EMAIL, ADMIN_PASSWORD)
    await (
        admin.get_by_role("navigation", name="Main")
        .get_by_role("button", name="Admin", exact=True)
        .click()
    )
    await expect(admin.get_by_role("heading", name="Usage")).to_be_visible()
    await _check(admin, "admin", problems)
    await admin_context.close()
    await context.close()
    if problems:
        pytest.fail(
            "\n".join(f"{where}: {found}" for where, issues in problems.items() for found in issues)
        )


async def test_the_colour_theme_follows_the_system_until_the_user_picks_one(
    browser: Browser, live_server: LiveServer
) -> None:
    context = await browser.new_context(
        viewport={"width": 1400, "height": 900}, color_scheme="dark"
    )
    page = await context.new_page()
    await sign_up(page, live_server)
    root = page.locator("html")
    await expect(root).to_have_attribute("data-theme", "dark")  # the system's choice
    background = "getComputedStyle(document.documentElement).backgroundColor"
    dark_background = await page.evaluate(background)
    picker = page.get_by_label("Colour theme")
    await picker.select_option("light")
    await expect(root).to_have_attribute("data-theme", "light")
    assert await page.evaluate(background) != dark_background
    await page.reload()
    await expect(root).to_have_attribute("data-theme", "light")  # kept across visits
    await expect(picker).to_have_value("light")
    await picker.select_option("system")
    await expect(root).to_have_attribute("data-theme", "dark")
    await page.emulate_media(color_scheme="light")  # the system changes: the page follows
    await expect(root).to_have_attribute("data-theme", "light")
    await context.close()
