"""The web app as a daily tool (issue 19): what an answer draws from is in view, a chat has an
address, switching chats mid-answer misfiles nothing, uploads queue up and say why they fail."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import re
import uuid
from pathlib import Path

import httpx
from playwright.async_api import Browser, Page, Route, expect
from playwright.async_api import Error as PlaywrightError

from tests.e2e.accessibility import serious_violations
from tests.e2e.conftest import ADMIN_EMAIL, ADMIN_PASSWORD, DESKTOP, SCREENSHOTS
from tests.e2e.flows import SignIn, ask, log_in, sign_up, upload, upload_texts
from tests.support.files import filler, make_pdf
from tests.support.live_server import LiveServer
from tests.support.llm_server import Reply, ScriptedLLM
from tests.support.office_files import make_docx, make_pptx
from tests.support.web_site import Site

CHAT_URL = re.compile(r"/chats/[0-9a-f-]{36}$")


async def access_token(page: Page) -> str:
    token = await page.evaluate("JSON.parse(localStorage.getItem('docchat.tokens')).access_token")
    assert isinstance(token, str)
    return token


async def test_new_chat_during_an_answer_stays_new_and_the_answer_lands_in_its_own_chat(
    signed_in: SignIn,
    live_server: LiveServer,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in()
    await upload_texts(page, {"bridge.txt": "The harbour bridge opened to traffic in 1932."})

    # The request is held a moment, so "New chat" comes before the chat exists.
    async def hold(route: Route) -> None:
        await asyncio.sleep(1.0)
        await route.continue_()

    await page.route("**/api/v1/messages/stream", hold)
    scripted_llm.script(Reply(content="It opened in 1932 [1].", delay_seconds=1))
    await ask(page, "When did the harbour bridge open?")
    await page.get_by_role("button", name="+ New chat").click()

    # The answer finishes in the background and its chat appears in the list...
    chats = page.get_by_role("complementary", name="Chats")
    first = chats.get_by_role("link", name="When did the harbour bridge open?", exact=True)
    await expect(first).to_be_visible(timeout=15_000)
    await page.wait_for_timeout(500)  # room for a stray handler to act
    # ...while the page stays on the new, empty chat, with none of that chat's sources.
    await expect(page).to_have_url(f"{live_server.url}/")
    await expect(page.get_by_role("heading", name="Ask about your documents")).to_be_visible()
    await expect(page.get_by_test_id("message-user")).to_have_count(0)
    await expect(page.get_by_role("tab", name="Documents")).to_have_attribute(
        "aria-selected", "true"
    )
    # The first chat has its whole answer (it was not stopped by leaving).
    await first.click()
    answer = page.get_by_test_id("message-assistant")
    await expect(answer).to_contain_text("It opened in 1932")
    await expect(answer.get_by_text("1 source")).to_be_visible()
    await expect(answer.get_by_text("Stopped", exact=True)).to_have_count(0)


async def test_what_an_answer_draws_from_is_in_view_and_picks_clear_after_sending(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in()
    await upload_texts(
        page,
        {
            "bridges.txt": "The harbour bridge opened to traffic in 1932.",
            "tides.txt": "Spring tides in the harbour rise four metres.",
        },
    )
    panel = page.get_by_role("complementary", name="Documents and sources")
    pick_bridges = panel.get_by_label("Use bridges.txt for the next message")
    pick_tides = panel.get_by_label("Use tides.txt for the next message")
    next_scope = page.get_by_role("group", name="The next message asks about")
    chat_scope = page.get_by_role("group", name="This chat answers from")
    documents_tab = page.get_by_role("tab", name="Documents")

    # A pick shows in the composer as a chip; sending uses it, then it clears.
    await pick_bridges.check()
    await expect(next_scope.get_by_test_id("chip-next")).to_have_text(["bridges.txt×"])
    await expect(next_scope).to_contain_text("they become this chat's documents")
    scripted_llm.script("The bridge opened in 1932 [1].")
    await ask(page, "When did the bridge open?")
    await expect(page.get_by_test_id("message-assistant")).to_contain_text("1932")
    await expect(next_scope).to_have_count(0)
    await documents_tab.click()  # the answer showed its sources in the panel
    await expect(pick_bridges).not_to_be_checked()
    # The first message's picks became the chat's documents, and the header says so.
    await expect(chat_scope.get_by_test_id("chip-linked")).to_have_text(["bridges.txt×"])
    await page.screenshot(path=str(SCREENSHOTS / "scope.png"))

    # A pinned pick stays for the following messages, until removed.
    await pick_tides.check()
    await next_scope.get_by_label("Keep for the following messages").check()
    scripted_llm.script("Four metres [1].")
    await ask(page, "How high are spring tides?")
    await expect(page.get_by_test_id("message-assistant")).to_have_count(2)
    assert "four metres" in scripted_llm.prompt_text()
    await expect(next_scope.get_by_test_id("chip-next")).to_have_text(["tides.txt×"])
    await next_scope.get_by_role("button", name="Remove tides.txt").click()
    await expect(next_scope).to_have_count(0)
    await documents_tab.click()
    await expect(pick_tides).not_to_be_checked()

    # The chat's own documents are edited in its header.
    await chat_scope.get_by_role("button", name="Remove bridges.txt").click()
    await expect(chat_scope).to_contain_text("all documents you can read")

    # Picks belong to the chat they were made in.
    await pick_bridges.check()
    await expect(next_scope).to_be_visible()
    await page.get_by_role("button", name="+ New chat").click()
    await expect(next_scope).to_have_count(0)
    await expect(pick_bridges).not_to_be_checked()


async def test_each_chat_has_an_address_that_reload_back_and_links_open(
    browser: Browser, live_server: LiveServer, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.reset()
    context = await browser.new_context()
    page = await context.new_page()
    await sign_up(page, live_server)
    scripted_llm.script("Answer one.", "Answer two.")
    await ask(page, "Question one")
    await expect(page.get_by_test_id("message-assistant")).to_contain_text("Answer one.")
    await expect(page).to_have_url(CHAT_URL)
    first_url = page.url

    await page.get_by_role("button", name="+ New chat").click()
    await expect(page).to_have_url(f"{live_server.url}/")
    await ask(page, "Question two")
    await expect(page.get_by_test_id("message-assistant")).to_contain_text("Answer two.")
    await expect(page).to_have_url(CHAT_URL)
    second_url = page.url
    assert second_url != first_url

    # Reload keeps the open chat; Back and Forward move between chats.
    await page.reload()
    await expect(page.get_by_test_id("message-user")).to_have_text(["Question two"])
    await page.go_back()
    await expect(page).to_have_url(first_url)
    await expect(page.get_by_test_id("message-user")).to_have_text(["Question one"])
    await page.go_forward()
    await expect(page.get_by_test_id("message-user")).to_have_text(["Question two"])

    # Other pages have addresses too, and Back returns to the chat.
    await page.get_by_role("button", name="Collections").click()
    await expect(page).to_have_url(f"{live_server.url}/collections")
    await page.go_back()
    await expect(page.get_by_test_id("message-user")).to_have_text(["Question two"])

    # A link to a chat opens it in a new tab.
    other = await context.new_page()
    await other.goto(first_url)
    await expect(other.get_by_test_id("message-user")).to_have_text(["Question one"])
    await context.close()


async def test_uploads_queue_up_refuse_too_big_files_early_and_the_list_goes_past_a_hundred(
    signed_in: SignIn,
    live_server: LiveServer,
) -> None:
    page, _ = await signed_in()
    posted: list[str] = []
    page.on(
        "request",
        lambda request: (
            posted.append(request.url)
            if request.method == "POST" and request.url.endswith("/api/v1/documents")
            else None
        ),
    )
    file_input = page.get_by_test_id("file-input")

    # Too big for the server (2 MB here): refused at once, with the reason; nothing is sent.
    await file_input.set_input_files(
        [{"name": "huge.txt", "mimeType": "text/plain", "buffer": b"x" * (3 * 1024 * 1024)}]
    )
    refused = page.get_by_test_id("upload").filter(has_text="huge.txt")
    await expect(refused).to_contain_text("huge.txt is 3 MB; the largest upload is 2 MB")
    assert posted == []
    await refused.get_by_role("button", name="Dismiss huge.txt").click()
    await expect(refused).to_have_count(0)

    # Several files: one is sent at a time, the others wait their turn, visibly.
    async def slow(route: Route) -> None:
        await asyncio.sleep(0.8)
        await route.continue_()

    await page.route("**/api/v1/documents", slow)
    await file_input.set_input_files(
        [
            {
                "name": f"note-{number}.txt",
                "mimeType": "text/plain",
                "buffer": f"A short note, number {number}.".encode(),
            }
            for number in range(3)
        ]
    )
    await expect(page.get_by_role("status")).to_contain_text("Uploading note-0.txt · 2 waiting")
    await expect(page.get_by_test_id("upload").filter(has_text="note-2.txt")).to_contain_text(
        "waiting to upload"
    )
    await page.screenshot(path=str(SCREENSHOTS / "uploads.png"))
    await expect(page.get_by_test_id("upload")).to_have_count(0, timeout=15_000)
    # (Documents an administrator shared with everyone are listed too: count only these.)
    await expect(page.get_by_test_id("document").filter(has_text="note-")).to_have_count(3)
    assert len(posted) == 3

    # The same file again is not a second document; the row says so until dismissed.
    await file_input.set_input_files(
        [
            {
                "name": "note-0 copy.txt",
                "mimeType": "text/plain",
                "buffer": b"A short note, number 0.",
            }
        ]
    )
    again = page.get_by_test_id("upload").filter(has_text="note-0 copy.txt")
    await expect(again).to_contain_text("Already uploaded as note-0.txt")
    await expect(page.get_by_test_id("document").filter(has_text="note-")).to_have_count(3)
    await again.get_by_role("button", name="Dismiss note-0 copy.txt").click()
    await expect(again).to_have_count(0)
    await page.unroute("**/api/v1/documents", slow)

    # Past a hundred documents, the list shows more on request.
    headers = {"Authorization": f"Bearer {await access_token(page)}"}
    async with httpx.AsyncClient(base_url=live_server.url, headers=headers, timeout=60) as api:
        for number in range(98):
            files = {
                "file": (f"bulk-{number:03}.txt", f"Bulk note {number}.".encode(), "text/plain")
            }
            assert (await api.post("/api/v1/documents", files=files)).status_code == 202
    await page.reload()
    await expect(page.get_by_test_id("document")).to_have_count(100)
    more = page.get_by_role("button", name=re.compile(r"^Show more \(100 of \d+ shown\)$"))
    label = await more.inner_text()
    total = int(label.split(" of ")[1].split()[0])
    assert total >= 101  # 101 of this user's own, and any shared with everyone
    await more.click()
    await expect(page.get_by_test_id("document")).to_have_count(total)
    await expect(page.get_by_test_id("document").filter(has_text="bulk-")).to_have_count(98)
    await expect(more).to_have_count(0)


async def test_office_files_are_uploaded_and_cited_with_where_the_passage_is(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in()
    manual = make_docx(
        [
            (1, "3 Installation", ["Install the gateway with the package manager."]),
            (2, "3.2 Proxy", ["Set HTTPS_PROXY when the gateway sits behind a proxy."]),
        ]
    )
    deck = make_pptx([("Goals", "Grow the team"), ("Launch plan", "The viewer ships in March")])
    mime = "application/vnd.openxmlformats-officedocument"
    await page.get_by_test_id("file-input").set_input_files(
        [
            {
                "name": "gateway.docx",
                "mimeType": f"{mime}.wordprocessingml.document",
                "buffer": manual,
            },
            {
                "name": "plans.pptx",
                "mimeType": f"{mime}.presentationml.presentation",
                "buffer": deck,
            },
        ]
    )
    for name in ("gateway.docx", "plans.pptx"):
        document = page.get_by_test_id("document").filter(has_text=name)
        await expect(document).to_have_attribute("data-status", "completed", timeout=60_000)
    await expect(page.get_by_test_id("document").filter(has_text="plans.pptx")).to_contain_text(
        "2 slides"
    )

    scripted_llm.script("Set HTTPS_PROXY [1].")
    await ask(page, "How do I set up the gateway behind a proxy with HTTPS_PROXY?")
    answer = page.get_by_test_id("message-assistant").last
    await answer.get_by_role("button", name="Show source 1").click()
    source = page.get_by_role("list", name="Sources").get_by_role("listitem").first
    await expect(source).to_contain_text("gateway.docx")
    await expect(source).to_contain_text("3 Installation > 3.2 Proxy")

    scripted_llm.script("In March [1].")
    await ask(page, "When does the viewer ship according to the launch plan?")
    # (`.last` is taken when clicking: wait for the second answer first.)
    await expect(page.get_by_test_id("message-assistant")).to_have_count(2)
    await (
        page.get_by_test_id("message-assistant")
        .last.get_by_role("button", name="Show source 1")
        .click()
    )
    await expect(source).to_contain_text("Slide 2: Launch plan")
    await page.screenshot(path=str(SCREENSHOTS / "office-sources.png"))


async def test_a_web_page_is_added_by_its_address_and_private_ones_are_refused(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    site = Site()
    try:
        page, _ = await signed_in()
        address = page.get_by_label("Web address of a page or file")
        await address.fill("http://169.254.169.254/latest/meta-data/")
        await page.get_by_role("button", name="Add", exact=True).click()
        await expect(page.get_by_role("alert")).to_contain_text("private, loopback or link-local")

        await address.fill(f"{site.base}/timetable")
        await page.get_by_role("button", name="Add", exact=True).click()
        document = page.get_by_test_id("document").filter(has_text="timetable.html")
        await expect(document).to_have_attribute("data-status", "completed", timeout=60_000)
        await expect(address).to_have_value("")

        scripted_llm.script("At 07:40 [1].")
        await ask(page, "When does the first ferry leave the harbour in winter?")
        await (
            page.get_by_test_id("message-assistant")
            .last.get_by_role("button", name="Show source 1")
            .click()
        )
        source = page.get_by_role("list", name="Sources").get_by_role("listitem").first
        await expect(source).to_contain_text("Ferry timetable > Winter")
    finally:
        site.stop()


async def test_an_answer_is_copied_and_rated_and_administrators_read_the_rating(
    signed_in: SignIn,
    browser: Browser,
    live_server: LiveServer,
    scripted_llm: ScriptedLLM,
) -> None:
    page, email = await signed_in(permissions=["clipboard-read", "clipboard-write"])
    await upload_texts(page, {"pier.txt": "The island ferry leaves from pier 4 at 07:40."})
    scripted_llm.script("The ferry leaves at 07:40 [1].")
    await ask(page, "When does the island ferry leave?")
    answer = page.get_by_test_id("message-assistant").last
    await expect(answer).to_contain_text("07:40")

    await answer.get_by_role("button", name="Copy answer").click()
    await expect(answer.get_by_role("button", name="Copy answer")).to_have_text("Copied")
    copied = await page.evaluate("navigator.clipboard.readText()")
    assert copied == "The ferry leaves at 07:40 [1]."

    await answer.get_by_role("button", name="Bad answer").click()
    await answer.get_by_label("What was wrong? (optional)").fill("It should name the pier")
    await answer.get_by_role("button", name="Save comment").click()
    await expect(answer.get_by_role("status")).to_contain_text("comment was saved")
    await page.reload()  # the rating is the server's, not this screen's
    answer = page.get_by_test_id("message-assistant").last
    await expect(answer.get_by_role("button", name="Bad answer")).to_have_attribute(
        "aria-pressed", "true"
    )
    await expect(answer.get_by_role("button", name="Good answer")).to_have_attribute(
        "aria-pressed", "false"
    )
    await page.screenshot(path=str(SCREENSHOTS / "answer-actions.png"))

    admin_context = await browser.new_context(viewport={"width": 1400, "height": 900})
    admin = await admin_context.new_page()
    await log_in(admin, live_server, ADMIN_EMAIL, ADMIN_PASSWORD)
    await admin.get_by_role("button", name="Admin", exact=True).click()
    entry = admin.get_by_test_id("feedback-entry").filter(has_text=email)
    await expect(entry).to_contain_text("When does the island ferry leave?")
    await expect(entry).to_contain_text("It should name the pier")
    await expect(entry).to_contain_text("pier.txt")
    await entry.screenshot(path=str(SCREENSHOTS / "feedback-review.png"))
    await admin_context.close()


async def test_chats_are_searched_and_saved_as_files(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in()
    await upload_texts(page, {"piers.txt": "The island ferries leave from pier 4."})
    scripted_llm.script("From pier 4 [1].")
    await ask(page, "Where do the island ferries leave from?")
    await expect(page.get_by_test_id("message-assistant")).to_contain_text("pier 4")
    await page.get_by_role("button", name="+ New chat").click()
    scripted_llm.script("Hello!")
    await ask(page, "Say hello to the team")
    await expect(page.get_by_test_id("message-assistant")).to_contain_text("Hello!")

    chats = page.get_by_role("complementary", name="Chats")
    titles = chats.locator(".chat-title")
    await expect(titles).to_have_count(2)
    await chats.get_by_label("Search chats").fill("ferry")  # finds "ferries" in a message
    await expect(titles.first).to_contain_text("Where do the island ferries leave from?")
    await expect(titles).to_have_count(1)
    # Where it matched: the words of the latest matching message.
    await expect(chats.get_by_test_id("chat-snippet")).to_contain_text("ferries")
    await page.screenshot(path=str(SCREENSHOTS / "chat-search.png"))
    await chats.get_by_label("Search chats").fill("submarine")
    await expect(chats).to_contain_text("No chat matches “submarine”")
    await chats.get_by_label("Search chats").fill("pier")
    await titles.first.click()

    async with page.expect_download() as saving:
        await page.get_by_role("button", name="Save this chat as Markdown").click()
    download = await saving.value
    assert download.suggested_filename == "Where do the island ferries leave from.md"
    saved = await asyncio.to_thread(Path(await download.path()).read_text)
    assert (
        "**docchat** · " in saved
        and '1. piers.txt: "The island ferries leave from pier 4."' in saved
    )


RICH_ANSWER = """Here is the timetable [1]:

| Ferry | Departs |
| --- | --- |
| Morning | 07:40 |
| Evening | 18:15 |

```python
def next_ferry(now):
    return "07:40"  # the first one
```

The crossing takes \\(t = d / v\\) hours, and \\[E = mc^2\\]"""


async def test_answers_render_tables_highlighted_code_and_math(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in(permissions=["clipboard-read", "clipboard-write"])
    refused: list[str] = []
    page.on(
        "console",
        lambda message: (
            refused.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    await upload_texts(page, {"ferries.txt": "Morning ferry 07:40, evening ferry 18:15."})
    scripted_llm.script(RICH_ANSWER)
    await ask(page, "Show me the ferry timetable")
    answer = page.get_by_test_id("message-assistant").last
    table = answer.get_by_role("table")
    await expect(table.get_by_role("columnheader")).to_have_text(["Ferry", "Departs"])
    await expect(table.get_by_role("row").nth(2)).to_contain_text("Evening18:15")
    await expect(answer.locator("pre code .hljs-keyword").first).to_have_text("def")
    await expect(answer.locator(".math-inline .katex")).to_have_count(1)
    await expect(answer.locator(".math-display .katex-display")).to_have_count(1)
    await expect(answer.get_by_role("button", name="Show source 1")).to_be_visible()
    # KaTeX's fonts load (some are data: URLs, which the policy refused: issue 40).
    await page.evaluate("document.fonts.ready")
    assert refused == [], refused

    await answer.get_by_role("button", name="Copy code").click()
    copied = await page.evaluate("navigator.clipboard.readText()")
    assert copied == 'def next_ferry(now):\n    return "07:40"  # the first one'
    await answer.screenshot(path=str(SCREENSHOTS / "rich-answer.png"))


async def test_a_cited_passage_opens_in_the_document_viewer_and_back(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in(bypass_csp=True)
    pages = [
        filler("harbour", 30),
        "The Northwind lighthouse stands on the north cape. The Northwind light can be seen "
        "22 nautical miles away. Its lamp was first lit in 1887.",
        filler("museum", 30),
    ]
    await upload(page, {"lighthouse.pdf": make_pdf(pages)})
    scripted_llm.script("22 nautical miles [1].")
    await ask(page, "How far away can the Northwind light be seen?")
    answer = page.get_by_test_id("message-assistant").last
    cite = answer.get_by_role("button", name="Show source 1")
    # The quote shows on hover and on keyboard focus, and Escape hides it.
    preview = answer.get_by_role("tooltip")
    await expect(preview).to_be_hidden()
    await cite.hover()
    await expect(preview).to_contain_text("lighthouse.pdf · page 2")
    await expect(preview).to_contain_text("22 nautical miles")
    await page.mouse.move(0, 0)
    await expect(preview).to_be_hidden()
    await cite.focus()
    await expect(preview).to_be_visible()
    await page.screenshot(path=str(SCREENSHOTS / "citation-preview.png"))
    await page.keyboard.press("Escape")
    await expect(preview).to_be_hidden()
    await cite.click()
    show = page.get_by_role("button", name="Show in the document (lighthouse.pdf)").first
    await show.click()

    viewer = page.get_by_role("dialog", name="lighthouse.pdf")
    await expect(viewer).to_be_visible()
    cited = viewer.get_by_test_id("cited-passage")
    await expect(cited).to_contain_text("22 nautical miles")
    await expect(cited).to_be_in_viewport()
    await expect(viewer.get_by_test_id("viewer-text")).to_contain_text("Page 2")
    await expect(viewer.get_by_role("button", name="Open the original at page 2")).to_be_visible()
    assert await serious_violations(page) == []
    await page.screenshot(path=str(SCREENSHOTS / "document-viewer.png"))

    # The page as it looks, drawn by pdf.js, the passage highlighted on it.
    await viewer.get_by_role("button", name="Page 2", exact=True).click()
    drawn = viewer.get_by_test_id("pdf-page")
    await expect(drawn).to_have_attribute("data-state", "shown", timeout=20_000)
    await expect(
        viewer.get_by_role("img", name=re.compile("^Page 2 of lighthouse.pdf, the cited"))
    ).to_be_visible()
    assert await viewer.get_by_test_id("pdf-highlight").count() >= 1
    await expect(cited).to_be_hidden()
    assert await serious_violations(page) == []
    await page.screenshot(path=str(SCREENSHOTS / "document-viewer-page.png"))
    await viewer.get_by_role("button", name="Text", exact=True).click()
    await expect(cited).to_be_visible()

    await viewer.focus()
    await page.keyboard.press("Escape")
    await expect(viewer).to_have_count(0)
    await expect(show).to_be_focused()  # back to the answer's sources, where the reader was


async def test_a_chat_has_its_own_model_and_strict_mode(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in()
    scripted_llm.script("Hello!")
    await ask(page, "Say hello")
    await expect(page.get_by_test_id("message-assistant")).to_contain_text("Hello!")

    settings = page.get_by_text("Answer settings")
    await settings.click()
    model = page.get_by_label("Chat model")
    await expect(model.locator("option").first).to_have_text(re.compile(r"^Default \(.+\)$"))
    await model.select_option("override")
    await expect(model).to_have_value("override")  # shown once the server has it
    answers = page.get_by_label("Chat answers", exact=True)
    await answers.select_option("strict")
    await expect(answers).to_have_value("strict")

    await ask(page, "What is the capital of France?")  # nothing in the documents: no answer
    await expect(page.get_by_test_id("message-assistant").last).to_contain_text("could not find")
    await answers.select_option("open")
    await expect(answers).to_have_value("open")
    scripted_llm.script("Paris.")
    await ask(page, "What is the capital of France, then?")
    await expect(page.get_by_test_id("message-assistant").last).to_contain_text("Paris.")
    assert scripted_llm.requests[-1]["model"] == "override"
    await page.reload()  # the chat keeps its settings
    await page.get_by_text("Answer settings").click()
    await expect(page.get_by_label("Chat model")).to_have_value("override")
    await page.screenshot(path=str(SCREENSHOTS / "chat-settings.png"))


async def test_a_chat_remembers_as_many_exchanges_as_chosen_and_shows_its_summary(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in(bypass_csp=True)
    scripted_llm.script("Ferries leave at seven.")
    await ask(page, "When do ferries leave?")
    await expect(page.get_by_test_id("message-assistant")).to_contain_text("seven")

    await page.get_by_text("Answer settings").click()
    remembers = page.get_by_label("Chat history")
    await expect(remembers.locator("option").first).to_have_text("Default (last 10 exchanges)")
    await remembers.select_option("1")
    await expect(remembers).to_have_value("1")  # shown once the server has it

    # The second answer pushes the first exchange out of the window: it is summarised after.
    scripted_llm.script("Tickets cost 5 euros.", "Asked when ferries leave: at seven.")
    await ask(page, "What do tickets cost?")
    await expect(page.get_by_test_id("message-assistant").last).to_contain_text("5 euros")
    summary = page.locator(".chat-summary")
    for _ in range(20):  # written in the background; the page reads it when it opens the chat
        await page.reload()
        await page.get_by_text("Answer settings").click()
        if await summary.count():
            break
        await page.wait_for_timeout(250)
    await expect(summary).to_contain_text("Asked when ferries leave: at seven.")
    await expect(page.get_by_label("Chat history")).to_have_value("1")
    assert await serious_violations(page) == []
    await page.screenshot(path=str(SCREENSHOTS / "chat-history-settings.png"))
    await page.set_viewport_size({"width": 390, "height": 844})
    await expect(summary).to_be_in_viewport()
    await page.screenshot(path=str(SCREENSHOTS / "chat-history-settings-phone.png"))


async def test_a_chat_is_renamed_in_place_and_a_deletion_undone(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in()
    scripted_llm.script("Hello!")
    await ask(page, "Say hello")
    await expect(page.get_by_test_id("message-assistant")).to_contain_text("Hello!")
    chats = page.get_by_role("complementary", name="Chats")
    titles = chats.locator(".chat-title")
    await expect(titles).to_have_text(["Say hello"])

    # The chat's own controls are in its header (issue 40: a chat opened by its address or
    # from a search, not in the loaded page of the list, had none).
    header = page.get_by_role("heading", level=1, name="Say hello")
    await expect(header).to_be_visible()
    await page.get_by_role("button", name="Rename", exact=True).click()
    title = page.get_by_label("New name of the chat")
    await expect(title).to_be_focused()
    await title.fill("Greetings")
    await title.press("Enter")
    await expect(titles).to_have_text(["Greetings"])
    await expect(page.get_by_role("heading", level=1, name="Greetings")).to_be_visible()
    await page.get_by_role("button", name="Rename", exact=True).click()
    await page.get_by_label("New name of the chat").fill("Never mind")
    await page.get_by_label("New name of the chat").press("Escape")
    await expect(titles).to_have_text(["Greetings"])

    # No question asked. The chat's detail is read again once it is deleted (404): Undo must
    # not open the chat from that reply (it said "not found" and opened a new chat).
    async with page.expect_response(
        lambda response: "/api/v1/chats/" in response.url and response.status == 404
    ):
        await page.get_by_role("button", name="Delete", exact=True).click()
    await expect(titles).to_have_count(0)
    await expect(page.get_by_test_id("message-assistant")).to_have_count(0)
    await page.get_by_role("status").get_by_role("button", name="Undo").click()
    await expect(titles).to_have_text(["Greetings"])
    await expect(page.get_by_test_id("message-assistant")).to_contain_text("Hello!")  # reopened


async def test_a_chat_is_pinned_to_the_top_and_archived_out_of_the_list(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in()
    chats = page.get_by_role("complementary", name="Chats")
    titles = chats.locator(".chat-title")
    for question in ("First question", "Second question", "Third question"):
        await page.get_by_role("button", name="+ New chat").click()
        scripted_llm.script("Noted.")
        await ask(page, question)
        await expect(page.get_by_test_id("message-assistant").last).to_contain_text("Noted.")
    await expect(titles).to_have_text(["Third question", "Second question", "First question"])

    await chats.get_by_role("link", name="First question").click()
    await page.get_by_role("button", name="Pin", exact=True).click()
    await expect(chats.get_by_role("heading", name="Pinned")).to_be_visible()
    await expect(titles).to_have_text(
        ["Pinned: First question", "Third question", "Second question"]
    )
    await expect(page.get_by_role("button", name="Unpin")).to_be_visible()

    await chats.get_by_role("link", name="Third question").click()
    await page.get_by_role("button", name="Archive", exact=True).click()
    await expect(titles).to_have_text(["Pinned: First question", "Second question"])
    # The archive lists it; a search finds it, marked as archived.
    await chats.get_by_role("button", name="Archived chats").click()
    await expect(chats.get_by_role("heading", name="Archived chats")).to_be_visible()
    await expect(titles).to_have_text(["Third question"])
    await chats.get_by_role("button", name="← All chats").click()
    await chats.get_by_label("Search chats").fill("third")
    await expect(titles).to_have_count(1)
    await expect(titles.locator(".chat-tag")).to_have_text("archived")
    await chats.get_by_label("Search chats").fill("")
    # Asking something in it brings it back.
    scripted_llm.script("Back.")
    await ask(page, "One more thing")
    await expect(page.get_by_role("button", name="Archive", exact=True)).to_be_visible()
    await expect(titles).to_have_text(
        ["Pinned: First question", "Third question", "Second question"]
    )
    await page.screenshot(path=SCREENSHOTS / "pinned-chats.png")

    # On a phone the chat's actions fold behind "⋯" beside its name, leaving the screen to the
    # conversation.
    await page.set_viewport_size({"width": 390, "height": 844})
    archive = page.get_by_role("button", name="Archive", exact=True)
    await expect(archive).to_be_hidden()
    await page.get_by_role("button", name="Chat actions").click()
    await expect(archive).to_be_visible()
    await page.screenshot(path=SCREENSHOTS / "phone-chat-actions.png")
    await page.get_by_role("button", name="Pin", exact=True).click()  # chosen: the menu folds
    await expect(archive).to_be_hidden()
    await page.get_by_role("button", name="Chat actions").click()
    await expect(page.get_by_role("button", name="Unpin")).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(archive).to_be_hidden()
    conversation = await page.locator(".messages").bounding_box()
    assert conversation is not None and conversation["height"] > 0.55 * 844


async def test_files_are_attached_in_the_composer_with_progress_cancel_and_drop(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in()
    composer = page.locator(".composer")

    # A slow upload shows its progress and can be cancelled: nothing is stored.
    async def hold(route: Route) -> None:
        await asyncio.sleep(1.5)
        with contextlib.suppress(PlaywrightError):  # cancelled: the browser dropped it
            await route.continue_()

    await page.route("**/api/v1/documents", hold)
    async with page.expect_file_chooser() as chooser:
        await composer.get_by_role("button", name="Attach files").click()
    await (await chooser.value).set_files(
        {"name": "draft.txt", "mimeType": "text/plain", "buffer": b"A draft nobody needs."}
    )
    await expect(composer.get_by_label("Uploading draft.txt")).to_be_visible()
    await page.get_by_role("textbox", name="Message").fill("Anything?")
    await expect(composer.get_by_role("button", name="Send")).to_be_disabled()
    await composer.get_by_role("button", name="Cancel draft.txt").click()
    await expect(composer.get_by_label("Files being attached")).to_have_count(0)
    await page.unroute("**/api/v1/documents")
    await page.wait_for_timeout(2_000)  # the held request would have landed by now
    await expect(page.get_by_test_id("document").filter(has_text="draft.txt")).to_have_count(0)

    # Dropped on the conversation: uploaded and picked for the next message.
    await page.evaluate(
        """() => {
            const data = new DataTransfer();
            data.items.add(new File(["The lighthouse keeper's cat is called Biscuit."],
                                    "lighthouse.txt", { type: "text/plain" }));
            const target = document.querySelector(".conversation");
            target.dispatchEvent(new DragEvent("dragover", { dataTransfer: data, bubbles: true }));
            target.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true }));
        }"""
    )
    picked = page.get_by_role("group", name="The next message asks about")
    await expect(picked.get_by_test_id("chip-next")).to_have_text(["lighthouse.txt×"])
    # A file the server does not read is refused with its reason, and can be dismissed.
    await page.get_by_test_id("attach-input").set_input_files(
        {"name": "tool.exe", "mimeType": "", "buffer": b"MZ\x90\x00" + bytes(200)}
    )
    refused = composer.get_by_role("alert").filter(has_text="tool.exe")
    await expect(refused).to_be_visible()
    await page.screenshot(path=SCREENSHOTS / "composer-attachments.png")
    await composer.get_by_role("button", name="Dismiss tool.exe").click()
    await expect(refused).to_have_count(0)

    scripted_llm.script("The cat is called Biscuit [1].")
    await page.get_by_role("textbox", name="Message").fill("What is the cat called?")
    await composer.get_by_role("button", name="Send").click()
    answer = page.get_by_test_id("message-assistant")
    await expect(answer).to_contain_text("Biscuit")
    await expect(answer.get_by_text("1 source")).to_be_visible()
    assert "lighthouse keeper" in str(scripted_llm.requests[-1]["messages"])


async def test_a_chat_is_shared_read_only_by_link_and_the_link_turned_off(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in()
    await upload_texts(page, {"ferries.txt": "The night ferry to Tallinn leaves at 22:30."})
    scripted_llm.script("It leaves at 22:30 [1].")
    await ask(page, "When does the night ferry leave?")
    await expect(page.get_by_test_id("message-assistant")).to_contain_text("22:30")

    await page.get_by_role("button", name="Share", exact=True).click()
    dialog = page.get_by_role("dialog", name="Share this chat")
    await dialog.get_by_role("button", name="Create link").click()
    link_box = dialog.get_by_role("textbox")
    await expect(link_box).to_have_value(re.compile(r"/shared/[0-9a-f-]{36}$"))
    link = await link_box.input_value()
    await page.screenshot(path=SCREENSHOTS / "share-chat.png")
    await dialog.get_by_role("button", name="Close").click()
    await expect(page.get_by_role("button", name="Share (a link is on)")).to_be_visible()

    # The owner reads it as others will, with every source.
    await page.goto(link)
    await expect(page.get_by_role("heading", level=1)).to_have_text(
        "When does the night ferry leave?"
    )
    await expect(page.get_by_text("Shared by you")).to_be_visible()
    await expect(page.get_by_test_id("shared-source")).to_contain_text(["ferries.txt"])

    # A colleague with the link reads the answer, not the source they may not read.
    reader, _ = await signed_in(viewport={"width": 390, "height": 844}, bypass_csp=True)
    await reader.goto(link)
    await expect(reader.get_by_test_id("shared-answer")).to_contain_text("It leaves at 22:30")
    await expect(reader.get_by_test_id("shared-source")).to_have_text(
        ["A document you may not read"]
    )
    await expect(reader.get_by_text("ferries.txt")).to_have_count(0)
    await expect(reader.get_by_role("button", name="Share", exact=True)).to_have_count(0)
    await reader.screenshot(path=SCREENSHOTS / "shared-chat-phone.png")
    assert await serious_violations(reader) == []

    # Turned off: the link says so.
    await page.go_back()
    await page.get_by_role("button", name="Share (a link is on)").click()
    await page.get_by_role("dialog").get_by_role("button", name="Stop sharing").click()
    await expect(
        page.get_by_role("dialog").get_by_role("button", name="Create link")
    ).to_be_visible()
    await reader.reload()
    await expect(reader.get_by_role("alert")).to_contain_text("turned off")


# Whether the first text after the answer's citation marker starts on the marker's line.
PUNCTUATION_ON_THE_MARKERS_LINE = """(answer) => {
    const marker = answer.querySelector(".cite");
    const walker = document.createTreeWalker(answer, NodeFilter.SHOW_TEXT);
    let node = null;
    while ((node = walker.nextNode())) {
        const after = marker.compareDocumentPosition(node) & Node.DOCUMENT_POSITION_FOLLOWING;
        if (after && !marker.contains(node) && !node.parentElement.closest("[role=tooltip]")
            && node.textContent.trim()) break;
    }
    const range = document.createRange();
    range.setStart(node, 0);
    range.setEnd(node, 1);
    const text = range.getBoundingClientRect(), button = marker.getBoundingClientRect();
    return text.top < button.bottom && text.bottom > button.top;
}"""


async def test_an_answer_is_regenerated_and_a_question_edited_in_place(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in()
    await upload_texts(page, {"pier.txt": "The island ferry leaves from pier 4 at 07:40."})
    scripted_llm.script("From pier 9 [1].", "At 07:40 [1].")
    await ask(page, "Which pier does the island ferry leave from?")
    await expect(page.get_by_test_id("message-assistant").last).to_contain_text("pier 9")
    await ask(page, "When does it leave?")
    await expect(page.get_by_test_id("message-assistant").last).to_contain_text("07:40")

    # Only the last answer offers Regenerate; it replaces that answer, nothing else.
    first_answer = page.get_by_test_id("message-assistant").first
    await expect(first_answer.get_by_role("button", name="Regenerate")).to_have_count(0)
    scripted_llm.script("It leaves at 07:40 in the morning [1].")
    await (
        page.get_by_test_id("message-assistant")
        .last.get_by_role("button", name="Regenerate")
        .click()
    )
    await expect(page.get_by_test_id("message-assistant").last).to_contain_text("in the morning")
    await expect(page.get_by_test_id("message-assistant")).to_have_count(2)
    await expect(page.get_by_test_id("message-user")).to_have_count(2)
    # The earlier answer is kept as a version: 2/2, the arrows go back to it and forth.
    versions = page.get_by_test_id("message-assistant").last.get_by_role(
        "group", name="Answer versions"
    )
    await expect(versions).to_contain_text("2/2")
    await expect(versions.get_by_role("button", name="Next version")).to_be_disabled()
    await versions.get_by_role("button", name="Previous version").click()
    await expect(versions).to_contain_text("1/2")
    await expect(page.get_by_test_id("message-assistant").last).to_contain_text("At 07:40")
    await expect(page.get_by_test_id("message-assistant").last).not_to_contain_text("morning")
    # An earlier version is read, not rated or regenerated (its rating would judge the answer
    # that replaced it).
    earlier = page.get_by_test_id("message-assistant").last
    await expect(earlier.get_by_role("button", name="Regenerate")).to_have_count(0)
    await page.screenshot(path=str(SCREENSHOTS / "answer-versions.png"))
    await page.reload()  # kept by the server
    await expect(versions).to_contain_text("2/2")
    await expect(page.get_by_test_id("message-assistant").last).to_contain_text("in the morning")

    # Editing the first question: the editor says what goes; Escape keeps everything.
    edit_first = page.get_by_role("button", name="Edit the question: Which pier does the island")
    await edit_first.click()
    editor = page.get_by_role("textbox", name="Edit your question")
    await expect(editor).to_be_focused()
    await expect(page.get_by_text("the 3 messages after it")).to_be_visible()
    await page.screenshot(path=str(SCREENSHOTS / "edit-question.png"))
    # On a phone the editor and what it says fit the screen.
    await page.set_viewport_size({"width": 390, "height": 844})
    await expect(editor).to_be_in_viewport()
    await expect(page.get_by_text("the 3 messages after it")).to_be_in_viewport()
    await page.screenshot(path=str(SCREENSHOTS / "edit-question-phone.png"))
    # A marker keeps the punctuation after it on its line ("[1]." never leaves "." alone).
    last_answer = page.get_by_test_id("message-assistant").last
    assert await last_answer.evaluate(PUNCTUATION_ON_THE_MARKERS_LINE)
    await page.set_viewport_size({"width": 1400, "height": 900})
    await editor.press("Escape")
    await expect(page.get_by_test_id("message-user")).to_have_count(2)

    await edit_first.click()
    scripted_llm.script("The island ferry leaves from pier 4 [1].")
    await editor.fill("Which pier, exactly, does the island ferry use?")
    await editor.press("Enter")
    await expect(page.get_by_test_id("message-assistant").last).to_contain_text("pier 4")
    await expect(page.get_by_test_id("message-user")).to_have_count(1)
    await expect(page.get_by_test_id("message-assistant")).to_have_count(1)
    # The model was not shown the replaced exchanges.
    assert "pier 9" not in scripted_llm.prompt_text()
    # The chat was named after its first question: the list shows the edited one.
    chats = page.get_by_role("complementary", name="Chats")
    await expect(
        chats.get_by_role(
            "link", name="Which pier, exactly, does the island ferry use?", exact=True
        )
    ).to_be_visible()

    # What the screen shows is what the server kept: a reload shows the same chat.
    await page.reload()
    await expect(page.get_by_test_id("message-user")).to_have_text(
        ["Which pier, exactly, does the island ferry use?"]
    )
    await expect(page.get_by_test_id("message-assistant")).to_have_count(1)
    await expect(page.get_by_test_id("message-assistant")).to_contain_text("pier 4")


async def test_a_question_left_without_an_answer_is_tried_again(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in()
    scripted_llm.script(Reply(status=500))
    await ask(page, "Tell me a short joke")
    await expect(page.get_by_role("alert")).to_be_visible()
    await page.reload()
    await expect(page.get_by_test_id("no-answer")).to_have_count(1)

    scripted_llm.script("Why did the ferry blush? It saw the pier.")
    await page.get_by_test_id("no-answer").get_by_role("button", name="Try again").click()
    await expect(page.get_by_test_id("message-assistant")).to_contain_text("blush")
    await expect(page.get_by_test_id("no-answer")).to_have_count(0)
    await expect(page.get_by_test_id("message-user")).to_have_count(1)


async def test_a_document_is_picked_for_the_next_message_by_typing_at_its_name(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in(bypass_csp=True)
    await upload_texts(
        page,
        {
            "pier-timetable.txt": "The island ferry leaves from pier 4 at 07:40.",
            "canteen-menu.txt": "The canteen serves fish soup on Fridays.",
        },
    )
    composer = page.get_by_role("textbox", name="Message")
    await composer.press_sequentially("When does @PIER")
    options = page.get_by_role("listbox", name="Documents to ask about").get_by_role("option")
    await expect(options).to_have_text(["pier-timetable.txt"])
    await page.screenshot(path=str(SCREENSHOTS / "mention.png"))
    assert await serious_violations(page) == []
    await composer.press("Enter")  # picks, does not send
    await expect(page.get_by_test_id("chip-next")).to_have_text(["pier-timetable.txt×"])
    await expect(composer).to_have_value("When does ")
    await expect(composer).to_be_focused()

    # A name nothing matches says so; Escape closes the list and Enter sends again.
    await composer.press_sequentially("@zzz")
    await expect(page.get_by_text("No document you can read is named like “zzz”")).to_be_visible()
    await composer.press("Escape")
    await expect(page.get_by_text("No document you can read is named like")).to_have_count(0)
    for _ in range(4):
        await composer.press("Backspace")
    scripted_llm.script("At 07:40 [1].")
    await composer.press_sequentially("the first ferry leave?")
    await composer.press("Enter")
    await expect(page.get_by_test_id("message-assistant").last).to_contain_text("07:40")
    prompt = scripted_llm.prompt_text()
    assert "pier 4" in prompt and "fish soup" not in prompt
    await expect(page.get_by_test_id("chip-next")).to_have_count(0)  # used, so cleared

    # On a phone the list opens above the composer, whole and readable.
    await page.set_viewport_size({"width": 390, "height": 844})
    await composer.press_sequentially("@can")
    await expect(options).to_have_text(["canteen-menu.txt"])
    await expect(options.first).to_be_in_viewport(ratio=1)
    await page.screenshot(path=str(SCREENSHOTS / "mention-phone.png"))
    assert await serious_violations(page) == []


async def test_the_next_account_in_the_same_tab_sees_nothing_of_the_last(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in()
    scripted_llm.script("Noted.")
    await ask(page, "Private question about the merger")
    chats = page.get_by_role("complementary", name="Chats")
    mine = chats.get_by_role("link", name="Private question about the merger", exact=True)
    await expect(mine).to_be_visible()
    # This account prefers another model: its chats' settings name it as their default.
    token = await access_token(page)
    await page.evaluate(
        """async (token) => { await fetch("/api/v1/users/me", { method: "PATCH",
            headers: { "Authorization": `Bearer ${token}`, "Content-Type": "application/json" },
            body: JSON.stringify({ preferred_model: "override" }) }); }""",
        token,
    )
    await page.reload()
    await page.get_by_text("Answer settings").click()
    model = page.get_by_role("combobox", name="Chat model")
    await expect(model.locator("option").first).to_have_text("Default (override)")

    # Log out and sign up as someone else in the same tab: no reload empties the page's memory.
    await page.get_by_role("button", name="Log out").click()
    await page.get_by_role("button", name="No account yet? Sign up").click()
    await page.get_by_label("Email").fill(f"e2e-next-{uuid.uuid4().hex[:8]}@example.com")
    await page.get_by_label("Password").fill("correct horse battery")
    await page.get_by_role("button", name="Sign up").click()
    await expect(page.get_by_role("textbox", name="Message")).to_be_visible()
    # Read at once, not awaited: the list the new account is first shown must not be the last's.
    assert await mine.count() == 0
    await expect(chats).to_contain_text("No chats yet")
    # The address still named the last account's chat: a new chat opens, saying so (sending
    # there said "Chat not found").
    await expect(page.get_by_role("status")).to_contain_text("That chat was not found")
    await expect(page).to_have_url(re.compile(r"/$"))
    # Nor the last account's defaults (they were kept outside the query cache).
    scripted_llm.script("Hello.")
    await ask(page, "Hello?")
    await expect(page.get_by_test_id("message-assistant")).to_contain_text("Hello.")
    await page.get_by_text("Answer settings").click()
    await expect(model.locator("option").first).not_to_have_text("Default (override)")
    await expect(model.locator("option").first).to_contain_text("Default (")


CONTRACTS = {
    "contract-a.md": b"# Supply contract A\n\n## Penalties\n\nA late delivery costs the supplier "
    b"a penalty of 500 euros per day.",
    "contract-b.txt": b"Service contract B. The penalty for late payment is 2 percent of the "
    b"invoice a month.",
}


def _tool_call(name: str, arguments: dict[str, object]) -> Reply:
    call = {"id": "call_1", "type": "function"}
    return Reply(
        tool_calls=[{**call, "function": {"name": name, "arguments": json.dumps(arguments)}}]
    )


async def test_research_steps_show_as_they_are_taken_and_open_under_the_answer(
    signed_in: SignIn, scripted_llm: ScriptedLLM
) -> None:
    page, _ = await signed_in()
    await upload(page, CONTRACTS)
    # Each step of the model's takes a moment, so the steps are seen coming.
    search = _tool_call(
        "search_documents", {"query": "late payment penalty", "filters": {"kind": "text"}}
    )
    scripted_llm.script(
        dataclasses.replace(search, delay_seconds=1.5),
        dataclasses.replace(_tool_call("finish", {}), delay_seconds=1.5),
        Reply(
            "Contract A charges 500 euros per day for a late delivery [1]; contract B charges 2 "
            "percent of the invoice a month for late payment [2].\nEvidence: answered",
            delay_seconds=0.5,
        ),
    )
    await page.get_by_role("button", name="Research").click()
    await ask(page, "Which contracts set a penalty, and what are the amounts?")
    live = page.get_by_test_id("research-steps-live")
    await expect(live.get_by_test_id("research-step").last).to_contain_text(
        "Searched 'late payment penalty' (text file): 1 passage"
    )
    await page.screenshot(path=str(SCREENSHOTS / "research-steps-live.png"))

    answer = page.get_by_test_id("message-assistant")
    await expect(answer.get_by_role("button", name="Show source 2")).to_be_visible()
    steps = answer.get_by_test_id("research-steps")
    await expect(steps).to_contain_text("Researched in")
    await steps.locator("summary").click()
    await expect(steps.get_by_test_id("research-step").last).to_contain_text("Finished")
    await expect(steps.get_by_role("button", name="contract-b.txt")).to_be_visible()
    cited = answer.get_by_test_id("cited-documents")
    await expect(cited).to_contain_text("contract-a.md")
    await expect(cited).to_contain_text("contract-b.txt")
    await page.screenshot(path=str(SCREENSHOTS / "research-steps.png"))
    await page.set_viewport_size({"width": 390, "height": 844})
    await steps.scroll_into_view_if_needed()
    await page.screenshot(path=str(SCREENSHOTS / "research-steps-phone.png"))
    await page.set_viewport_size(DESKTOP)

    # A plain question narrowed by the composer's filters: only the text file is searched.
    await page.get_by_role("button", name="Research").click()
    await page.get_by_role("button", name="Filters").click()
    await page.get_by_test_id("question-filters").get_by_label("Kind").select_option("text")
    await expect(page.get_by_role("button", name="Filters (1)")).to_be_visible()
    scripted_llm.script("The penalty is 2 percent of the invoice a month [1].\nEvidence: answered")
    async with page.expect_request("**/api/v1/messages/stream") as sent:
        await ask(page, "What is the penalty amount?")
    latest = page.get_by_test_id("message-assistant").last
    await expect(latest.get_by_role("button", name="1 source")).to_be_visible()
    await expect(latest.get_by_test_id("answer-filters")).to_have_text(
        " · narrowed to: text file (1 document)"
    )
    # (Chromium does not hand this request's body to Playwright: the saved answer says.)
    request = await sent.value
    chat = page.url.rstrip("/").rsplit("/", 1)[-1]
    async with httpx.AsyncClient(base_url=request.url.split("/api/")[0]) as api:
        listed = await api.get(
            f"/api/v1/chats/{chat}/messages",
            headers={"Authorization": request.headers["authorization"]},
        )
    answer_saved = listed.json()["items"][-1]
    assert answer_saved["meta"]["filters"] == "text file"
    assert [s["document_name"] for s in answer_saved["sources"]] == ["contract-b.txt"]
    await page.screenshot(path=str(SCREENSHOTS / "question-filters.png"))
