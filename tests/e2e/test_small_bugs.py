"""Bugs seen by people trying the web app (issue 40), each shown in a real browser; every test
here failed before its fix."""

from __future__ import annotations

import asyncio

import httpx
from playwright.async_api import Browser, Page, Route, expect

from tests.e2e.conftest import ADMIN_EMAIL, ADMIN_PASSWORD, SCREENSHOTS
from tests.e2e.flows import SignIn, ask, log_in, upload
from tests.support.files import filler, make_pdf
from tests.support.live_server import LiveServer
from tests.support.llm_server import ScriptedLLM
from tests.support.users import auth_headers, register

LIGHTHOUSE = [
    filler("harbour", 20),
    "The Northwind lighthouse stands on the north cape. Its lamp was first lit in 1887.",
]


async def test_a_citation_of_a_deleted_document_keeps_its_quote_and_offers_no_original(
    signed_in: SignIn, scripted_llm: ScriptedLLM
) -> None:
    """The viewer offered "Open the original at page 2" for a document that was gone."""
    page, _ = await signed_in()
    await upload(page, {"lighthouse.pdf": make_pdf(LIGHTHOUSE)})
    scripted_llm.script("Its lamp was first lit in 1887 [1].")
    await ask(page, "When was the Northwind lamp first lit?")
    answer = page.get_by_test_id("message-assistant")
    await expect(answer.get_by_role("button", name="Show source 1")).to_be_visible()

    await page.get_by_role("tab", name="Documents").click()  # the answer showed its sources
    document = page.get_by_test_id("document").filter(has_text="lighthouse.pdf")
    page.once("dialog", lambda dialog: dialog.accept())
    await document.get_by_role("button", name="Delete").click()
    await expect(document).to_have_count(0)

    await answer.get_by_role("button", name="Show source 1").first.click()
    await page.get_by_role("button", name="Show in the document (lighthouse.pdf)").first.click()
    viewer = page.get_by_role("dialog", name="lighthouse.pdf")
    await expect(viewer.get_by_test_id("document-gone")).to_contain_text("no longer available")
    await expect(viewer).to_contain_text("first lit in 1887")
    await expect(viewer.get_by_role("button", name="Open the original at page 2")).to_have_count(0)
    await expect(viewer.get_by_role("alert")).to_have_count(0)
    await viewer.get_by_role("button", name="Back to the answer").click()
    # The sources panel's own button says why too.
    await page.get_by_role("button", name="Open document at page 2 (lighthouse.pdf)").click()
    await expect(page.get_by_role("alert")).to_contain_text("no longer available to you")
    await page.screenshot(path=str(SCREENSHOTS / "viewer-document-gone.png"))


TIDES_MD = b"""# Glimmer harbour tides

The Glimmer harbour tide table is kept by the harbour office.

| Day | High tide |
| --- | --- |
| Monday | 06:10 |
| Tuesday | 06:55 |
"""
TIDES_TXT = (
    b"Glimmer harbour tide notes.\n\n\nThe Glimmer harbour tide gauge stands at the pier.\n\n"
    b"It was calibrated in spring.\n"
)
# Outlined pieces of the cited passage no wider than a bar: what a blank line drew.
BARS = """(viewer) => [...viewer.querySelectorAll("mark.cited")]
  .flatMap((mark) => [...mark.getClientRects()])
  .filter((rect) => rect.width < 4).length"""


async def test_the_viewer_renders_markdown_and_outlines_no_blank_line(
    signed_in: SignIn, scripted_llm: ScriptedLLM
) -> None:
    """Markdown's `#` and `| --- |` were shown as they are, and the cited passage's outline drew
    bars on its blank lines."""
    page, _ = await signed_in()
    await upload(page, {"tides.md": TIDES_MD, "gauge.txt": TIDES_TXT})
    scripted_llm.script("The office keeps it [1][2], the gauge is at the pier [1][2].")
    await ask(page, "Who keeps the Glimmer harbour tide table, and where is the tide gauge?")
    answer = page.get_by_test_id("message-assistant")
    await expect(answer.get_by_role("button", name="Show source 2")).to_be_visible()
    await answer.get_by_role("button", name="Show source 1").first.click()

    await page.get_by_role("button", name="Show in the document (tides.md)").click()
    viewer = page.get_by_role("dialog", name="tides.md")
    text = viewer.get_by_test_id("viewer-text")
    await expect(text.get_by_role("heading", name="Glimmer harbour tides")).to_be_visible()
    table = text.get_by_role("table")
    await expect(table.get_by_role("cell", name="06:55")).to_be_visible()
    await expect(table.get_by_role("columnheader", name="High tide")).to_be_visible()
    await expect(text).not_to_contain_text("| ---")
    await expect(text).not_to_contain_text("# Glimmer")
    await expect(viewer.get_by_test_id("cited-passage")).to_contain_text("kept by the harbour")
    await page.screenshot(path=str(SCREENSHOTS / "viewer-markdown.png"))
    await viewer.get_by_role("button", name="Back to the answer").click()

    await page.get_by_role("button", name="Show in the document (gauge.txt)").click()
    viewer = page.get_by_role("dialog", name="gauge.txt")
    cited = viewer.get_by_test_id("cited-passage")
    await expect(cited).to_contain_text("calibrated in spring")
    assert await viewer.evaluate(BARS) == 0
    await page.screenshot(path=str(SCREENSHOTS / "viewer-blank-lines.png"))


async def test_a_document_waiting_in_the_queue_offers_no_reprocess(signed_in: SignIn) -> None:
    """Reprocess was offered on documents still queued (it would only queue them again)."""
    page, _ = await signed_in()
    # One owner's documents are read one at a time: the later ones wait their turn.
    files = [
        {"name": f"report-{n}.txt", "mimeType": "", "buffer": filler(f"report{n}", 400).encode()}
        for n in range(3)
    ]
    await page.get_by_test_id("file-input").set_input_files(files)
    # Read in one look at the page: a queued document does not stay queued for long.
    seen = await page.wait_for_function(
        """() => {
          // A row can show "queued" for one refresh before its place in line is known (the
          // worker took the job between the two reads): wait for one that shows its place.
          const rows = document.querySelectorAll("[data-testid=document][data-status=queued]");
          const waiting = [...rows].find(
            (row) => row.textContent.includes("report-") && row.textContent.includes("in line"),
          );
          if (!waiting) return null;
          const buttons = [...waiting.querySelectorAll("button")].map((b) => b.textContent.trim());
          return { text: waiting.textContent, buttons };
        }""",
        timeout=30_000,
    )
    waiting = await seen.json_value()
    assert "in line" in waiting["text"]
    assert "Delete" in waiting["buttons"] and "Reprocess" not in waiting["buttons"]
    # (Documents an administrator shared with everyone are listed too: count only these.)
    done = page.locator("[data-testid=document][data-status=completed]").filter(has_text="report-")
    await expect(done).to_have_count(3, timeout=120_000)
    await expect(done.first.get_by_role("button", name="Reprocess")).to_be_visible()


async def _token(page: Page) -> str:
    token = await page.evaluate("JSON.parse(localStorage.getItem('docchat.tokens')).access_token")
    assert isinstance(token, str)
    return token


async def _chats(page: Page, server: LiveServer, titles: list[str]) -> list[str]:
    """Chats made through the API, oldest first: their ids."""
    headers = {"Authorization": f"Bearer {await _token(page)}"}
    async with httpx.AsyncClient(base_url=server.url, headers=headers) as http:
        made = [await http.post("/api/v1/chats", json={"title": title}) for title in titles]
    return [response.json()["id"] for response in made]


async def test_a_chat_opened_by_its_address_has_its_name_and_controls(
    signed_in: SignIn, live_server: LiveServer
) -> None:
    """A chat not in the loaded page of the list had no title, rename, delete or export."""
    page, _ = await signed_in()
    ids = await _chats(page, live_server, [f"Old chat {n}" for n in range(35)])
    await page.goto(f"{live_server.url}/chats/{ids[0]}")
    chats = page.get_by_role("complementary", name="Chats")
    await expect(chats.get_by_role("link", name="Old chat 34", exact=True)).to_be_visible()
    await expect(chats.get_by_role("link", name="Old chat 0", exact=True)).to_have_count(0)
    await expect(page.get_by_role("heading", level=1, name="Old chat 0")).to_be_visible()
    # The composer has the focus (it was on the page's body).
    await expect(page.get_by_role("textbox", name="Message")).to_be_focused()
    await page.get_by_role("button", name="Rename", exact=True).click()
    await page.get_by_label("New name of the chat").fill("The oldest chat")
    await page.get_by_label("New name of the chat").press("Enter")
    await expect(page.get_by_role("heading", level=1, name="The oldest chat")).to_be_visible()
    await expect(page.get_by_role("button", name="Save this chat as Markdown")).to_be_visible()
    await page.get_by_role("button", name="Delete", exact=True).click()
    await expect(page.get_by_role("status")).to_contain_text("Deleted “The oldest chat”")
    await expect(page).to_have_url(f"{live_server.url}/")


async def test_chat_rows_are_links_with_one_tab_stop_each(
    signed_in: SignIn, live_server: LiveServer
) -> None:
    """Rows were buttons (no middle-click, no new tab) with three tab stops each."""
    page, _ = await signed_in()
    first, second = await _chats(page, live_server, ["Ferries", "Bridges"])
    await page.reload()
    chats = page.get_by_role("complementary", name="Chats")
    row = chats.get_by_role("link", name="Ferries", exact=True)
    await expect(row).to_have_attribute("href", f"/chats/{first}")
    # Grouped by when they were last active, as in ChatGPT.
    await expect(chats.get_by_role("heading", name="Today")).to_be_visible()
    stops = await chats.locator(".chat-list li").evaluate_all(
        """(rows) => rows.map((row) => row.querySelectorAll("a, button, input, select").length)"""
    )
    assert stops == [1, 1]
    # Ctrl+click: a new tab with that chat; this one stays where it was.
    async with page.context.expect_page() as opened:
        await row.click(modifiers=["Control"])
    tab = await opened.value
    await expect(tab).to_have_url(f"{live_server.url}/chats/{first}")
    await expect(page).to_have_url(f"{live_server.url}/")
    await expect(tab.get_by_role("heading", level=1, name="Ferries")).to_be_visible()
    # A plain click opens it here.
    await chats.get_by_role("link", name="Bridges", exact=True).click()
    await expect(page).to_have_url(f"{live_server.url}/chats/{second}")
    await expect(chats.get_by_role("link", name="Bridges")).to_have_attribute(
        "aria-current", "page"
    )


async def test_the_keyboard_reaches_the_composer_and_the_shortcuts(signed_in: SignIn) -> None:
    """No skip link, no shortcut to the composer."""
    page, _ = await signed_in()
    await page.get_by_role("button", name="+ New chat").focus()
    await page.keyboard.press("Shift+Escape")
    composer = page.get_by_role("textbox", name="Message")
    await expect(composer).to_be_focused()
    # The skip link comes first, before the top bar.
    await page.get_by_role("button", name="docchat").focus()
    await page.keyboard.press("Shift+Tab")
    skip = page.get_by_role("link", name="Skip to the message box")
    await expect(skip).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(composer).to_be_focused()
    # ? lists the shortcuts (not while typing).
    await composer.type("?")
    await expect(page.get_by_role("dialog", name="Keyboard shortcuts")).to_have_count(0)
    await composer.fill("")
    await page.get_by_role("button", name="+ New chat").focus()
    await page.keyboard.press("?")
    shortcuts = page.get_by_role("dialog", name="Keyboard shortcuts")
    await expect(shortcuts).to_be_visible()
    await expect(shortcuts).to_contain_text("New chat")
    await page.screenshot(path=str(SCREENSHOTS / "shortcuts.png"))
    await page.keyboard.press("Escape")
    await expect(shortcuts).to_be_hidden()


async def test_the_phone_drawer_closes_by_touch_and_escape(signed_in: SignIn) -> None:
    """The chat drawer had no backdrop, and Escape worked only with the focus inside."""
    page, _ = await signed_in(viewport={"width": 390, "height": 844}, has_touch=True)
    toggle = page.get_by_role("button", name="Chats", exact=True)
    drawer = page.get_by_role("complementary", name="Chats")
    await toggle.tap()
    await expect(drawer).to_be_visible()
    await expect(page.get_by_test_id("drawer-backdrop")).to_be_visible()
    await page.screenshot(path=str(SCREENSHOTS / "chats-drawer-phone.png"))
    await page.touchscreen.tap(370, 500)  # beside the drawer
    await expect(drawer).to_be_hidden()
    await toggle.tap()
    await expect(drawer).to_be_visible()
    await page.evaluate("document.activeElement.blur()")
    await page.keyboard.press("Escape")
    await expect(drawer).to_be_hidden()


SPREAD_CITATIONS = " ".join(
    f"The harbour ferry timetable changes in spring, see note {n} [1]." for n in range(8)
)


async def test_a_citations_preview_stays_inside_the_conversation(
    signed_in: SignIn, scripted_llm: ScriptedLLM
) -> None:
    """The hover card was clipped at the column's right edge."""
    page, _ = await signed_in()
    await upload(page, {"ferries.txt": b"The harbour ferry timetable changes in spring."})
    scripted_llm.script(SPREAD_CITATIONS)
    await ask(page, "When does the ferry timetable change?")
    answer = page.get_by_test_id("message-assistant")
    markers = answer.get_by_role("button", name="Show source 1")
    await expect(markers).to_have_count(8)
    column = await page.locator(".messages").bounding_box()
    assert column is not None
    for index in range(8):
        await markers.nth(index).hover()
        card = answer.get_by_role("tooltip")  # the one shown (the others are hidden)
        await expect(card).to_be_visible()
        box = await card.bounding_box()
        assert box is not None
        assert column["x"] <= box["x"], (index, box, column)
        assert box["x"] + box["width"] <= column["x"] + column["width"], (index, box, column)
    await page.screenshot(path=str(SCREENSHOTS / "citation-preview-edge.png"))


async def test_on_a_phone_the_document_viewer_is_above_everything(
    signed_in: SignIn, scripted_llm: ScriptedLLM
) -> None:
    """ "Hide panel" was drawn over the viewer."""
    page, _ = await signed_in(viewport={"width": 390, "height": 844})
    await page.get_by_role("button", name="Documents & sources").click()
    # Markdown: rendered at a phone's width too (a table of its own width, scrolled sideways).
    ferries = (
        b"# Ferries\n\nThe harbour ferry timetable changes in spring.\n\n"
        b"| Ferry | Leaves | Arrives | Pier |\n| --- | --- | --- | --- |\n"
        b"| Morning ferry | 07:40 | 08:25 | North pier 4 |\n"
    )
    await upload(page, {"ferries.md": ferries})
    await page.get_by_role("button", name="Hide panel").click()
    scripted_llm.script("In spring [1].")
    await ask(page, "When does the ferry timetable change?")
    await (
        page.get_by_test_id("message-assistant").get_by_role("button", name="Show source 1").click()
    )
    await page.get_by_role("button", name="Show in the document (ferries.md)").click()
    viewer = page.get_by_role("dialog", name="ferries.md")
    await expect(viewer.get_by_role("table")).to_be_visible()
    hide = page.get_by_role("button", name="Hide panel")
    box = await hide.bounding_box()
    assert box is not None
    on_top = await page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y)?.closest('.viewer-backdrop') !== null",
        [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
    )
    assert on_top, "something is drawn over the document viewer"
    await page.screenshot(path=str(SCREENSHOTS / "viewer-phone.png"))


async def test_the_audit_log_filters_collection_actions_and_names_the_member(
    browser: Browser, live_server: LiveServer
) -> None:
    """No collection.* entries in the filter; a removed member was shown as raw ids."""
    async with httpx.AsyncClient(base_url=live_server.url) as http:
        olga = await auth_headers(http)
        vera_email = await register(http)
        collection = (
            await http.post("/api/v1/collections", headers=olga, json={"name": "Harbour team"})
        ).json()["id"]
        added = await http.post(
            f"/api/v1/collections/{collection}/members",
            headers=olga,
            json={"email": vera_email, "role": "viewer"},
        )
        assert added.status_code == 201, added.text
        member = next(m["id"] for m in added.json() if m["email"] == vera_email)
        removed = await http.delete(
            f"/api/v1/collections/{collection}/members/{member}", headers=olga
        )
        assert removed.status_code == 204

    context = await browser.new_context(viewport={"width": 1400, "height": 900})
    admin = await context.new_page()
    await log_in(admin, live_server, ADMIN_EMAIL, ADMIN_PASSWORD)
    await admin.get_by_role("button", name="Admin", exact=True).click()
    await admin.get_by_label("Action").select_option("collection.member_removed")
    log = admin.get_by_role("table", name="Audit log")
    await expect(log.get_by_role("row").filter(has_text="collection.created")).to_have_count(0)
    row = log.get_by_role("row").filter(has_text="Harbour team")
    await expect(row).to_contain_text(f"member: {vera_email}")
    await expect(row).not_to_contain_text("member_id")
    await context.close()


async def test_the_users_search_shows_the_reply_to_what_was_typed_last(
    browser: Browser, live_server: LiveServer
) -> None:
    """A late reply to an earlier search replaced the page of the latest one (found in review,
    the same race as the audit log's)."""
    async with httpx.AsyncClient(base_url=live_server.url) as http:
        wanted = await register(http)
    context = await browser.new_context(viewport={"width": 1400, "height": 900})
    admin = await context.new_page()
    await log_in(admin, live_server, ADMIN_EMAIL, ADMIN_PASSWORD)
    await admin.get_by_role("button", name="Admin", exact=True).click()
    users = admin.get_by_role("table", name="Users")
    await expect(users.get_by_role("row").nth(1)).to_be_visible()

    # Any search but the whole address answers slowly.
    async def slow_partial(route: Route) -> None:
        if wanted not in route.request.url.replace("%40", "@"):
            await asyncio.sleep(1.5)
        await route.continue_()

    await admin.route("**/api/v1/admin/users*", slow_partial)
    search = admin.get_by_placeholder("Search by email or name")
    await search.fill("example")  # every account, the administrator's too
    await search.fill(wanted)
    await admin.wait_for_timeout(2_500)  # the slow reply has come
    await expect(users.get_by_role("row")).to_have_count(2)  # the header and the one user
    await expect(users).to_contain_text(wanted)
    await context.close()
