"""A person using the web app: sign up, upload, ask, follow citations; others see nothing."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
import zipfile
from pathlib import Path

import httpx
from playwright.async_api import Browser, Route, expect

from tests.e2e.conftest import ADMIN_EMAIL, ADMIN_PASSWORD, SCREENSHOTS
from tests.e2e.flows import PASSWORD, SignIn, ask, log_in, sign_up, upload
from tests.support.files import filler, make_pdf
from tests.support.live_server import LiveServer
from tests.support.llm_server import Reply, ScriptedLLM

LIGHTHOUSE_PAGES = [
    "Annual report of the Northwind Lighthouse Society. " + filler("membership", 6),
    "The Northwind lighthouse was built in 1887 on Gull Rock. Its light can be seen "
    "22 nautical miles away, and the keeper's cottage is now a small museum.",
    "Finances: membership fees rose to 40 euros per year.",
]


async def test_a_user_chats_with_a_document(
    browser: Browser, live_server: LiveServer, scripted_llm: ScriptedLLM, tmp_path: object
) -> None:
    scripted_llm.reset()
    context = await browser.new_context(viewport={"width": 1400, "height": 900})
    page = await context.new_page()
    await page.goto(live_server.url)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(SCREENSHOTS / "login.png"))
    await sign_up(page, live_server)

    # Upload a PDF and watch it finish processing (through flows.upload: a file picked right
    # after sign-up sometimes left no trace in CI, as it did here once).
    await upload(page, {"lighthouse.pdf": make_pdf(LIGHTHOUSE_PAGES)})
    document = page.get_by_test_id("document").filter(has_text="lighthouse.pdf")
    await expect(document).to_have_attribute("data-status", "completed", timeout=60_000)
    await expect(document).to_contain_text("3 pages")
    await page.screenshot(path=str(SCREENSHOTS / "documents.png"))

    # Ask; the answer streams in and cites page 2.
    scripted_llm.script(
        Reply(content="It was built in 1887 [1].", pieces=["It was ", "built in ", "1887 [1]."])
    )
    await ask(page, "When was the Northwind lighthouse built?")
    answer = page.get_by_test_id("message-assistant").last
    await expect(answer).to_contain_text("It was built in 1887")
    await expect(page.get_by_test_id("message-user")).to_have_text(
        ["When was the Northwind lighthouse built?"]
    )
    assert scripted_llm.last_request["stream"] is True
    await answer.get_by_role("button", name="Show source 1").click()
    source = page.get_by_role("list", name="Sources").get_by_role("listitem").first
    await expect(source).to_contain_text("lighthouse.pdf")
    await expect(source).to_contain_text("page 2")
    await expect(source).to_contain_text("built in 1887 on Gull Rock")
    await page.screenshot(path=str(SCREENSHOTS / "chat-with-sources.png"))

    # Opening the source shows the PDF at that page.
    async with context.expect_page() as popup_info:
        await source.get_by_role("button", name="Open document at page 2 (lighthouse.pdf)").click()
    popup = await popup_info.value
    await expect(popup).to_have_url(re.compile(r"^blob:.*#page=2$"))
    await popup.close()

    # From the keyboard, a citation keeps the focus after it opens its source (the page
    # re-renders: the panel switches from the documents tab back to the sources).
    await page.get_by_role("tab", name="Documents").click()
    citation = answer.get_by_role("button", name="Show source 1")
    await citation.focus()
    await page.keyboard.press("Enter")
    await expect(source).to_contain_text("page 2")
    await expect(citation).to_be_focused()

    # A follow-up that says "it" reaches the model with the conversation.
    scripted_llm.script("Its light reaches 22 nautical miles [1].")
    await ask(page, "How far away can it be seen?")
    await expect(page.get_by_test_id("message-assistant")).to_have_count(2)
    await expect(page.get_by_test_id("message-user")).to_have_count(2)
    history = [m["content"] for m in scripted_llm.last_request["messages"]]
    assert "When was the Northwind lighthouse built?" in history
    # ...and is still answered from the document the chat is about, with its source.
    follow_up = page.get_by_test_id("message-assistant").nth(1)
    await expect(follow_up.get_by_text("1 source")).to_be_visible()

    # An unrelated question gets a general answer, marked as such.
    scripted_llm.script("Paris is the capital of France.")
    await ask(page, "What is the capital of France?")
    general = page.get_by_test_id("message-assistant").last
    await expect(general).to_contain_text("Paris is the capital of France.")
    await expect(general.get_by_text("General answer")).to_be_visible()
    # ...and says why it is one.
    await expect(general.locator(".general-answer")).to_contain_text(
        re.compile(r"General answer · (no passage|the answer did not use)")
    )

    # Shift+Enter adds a line instead of sending.
    box = page.get_by_role("textbox", name="Message")
    await box.fill("first line")
    await box.press("Shift+Enter")
    await box.type("second line")
    assert await box.input_value() == "first line\nsecond line"
    await box.fill("")

    # A message the server refuses (too long) gives its text back to the composer.
    too_long = "x" * 20_001
    await box.fill(too_long)
    await box.press("Enter")
    await expect(page.get_by_role("alert")).to_be_visible()
    assert await box.input_value() == too_long
    await box.fill("")

    # The chat shows up in the list, titled after the first question.
    await expect(page.get_by_role("complementary", name="Chats")).to_contain_text(
        "When was the Northwind lighthouse"
    )

    # The composer's hint names the keys on a desktop; on a phone (no Shift+Enter on touch
    # keyboards) it is short enough to fit the box.
    composer = page.locator("#composer")
    hint = "Ask a question (@ picks a document)"
    await expect(composer).to_have_attribute(
        "placeholder", f"{hint[:-1]}; Enter sends, Shift+Enter adds a line)"
    )
    # On a phone-sized screen the panel folds away behind a button.
    await page.set_viewport_size({"width": 390, "height": 844})
    await expect(composer).to_have_attribute("placeholder", hint)
    panel = page.get_by_role("complementary", name="Documents and sources")
    await expect(panel).to_be_visible()  # still open from the citation click
    await page.get_by_role("button", name="Hide panel").click()
    await expect(panel).to_be_hidden()
    await expect(page.get_by_role("button", name="Documents & sources")).to_be_visible()
    await page.screenshot(path=str(SCREENSHOTS / "phone.png"))
    # ... and the chat list is a drawer: closed, opened by "Chats", closed by choosing a chat
    # or by Escape.
    chats = page.get_by_role("complementary", name="Chats")
    await expect(chats).to_be_hidden()
    await page.get_by_role("button", name="Chats", exact=True).click()
    await expect(chats).to_be_visible()
    await page.screenshot(path=str(SCREENSHOTS / "phone-chats.png"))
    await chats.get_by_role("button", name="+ New chat").click()
    await expect(chats).to_be_hidden()
    await expect(page.get_by_test_id("message-assistant")).to_have_count(0)
    await page.get_by_role("button", name="Chats", exact=True).click()
    await chats.get_by_label("Search chats").press("Escape")
    await expect(chats).to_be_hidden()
    await context.close()

    # Someone else sees none of it, and the model never gets the first user's passages.
    other = await browser.new_context()
    stranger = await other.new_page()
    await sign_up(stranger, live_server)
    await expect(stranger.get_by_text("No documents yet.")).to_be_visible()
    scripted_llm.script("I do not know.")
    await ask(stranger, "When was the Northwind lighthouse built?")
    await expect(stranger.get_by_test_id("message-assistant")).to_contain_text("I do not know.")
    assert "Gull Rock" not in str(scripted_llm.last_request)
    await other.close()


async def test_stop_keeps_what_was_shown_marked_stopped(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in()
    words = " ".join(f"word{number}" for number in range(60))
    scripted_llm.script(Reply(content=words, piece_delay_seconds=0.2))
    await ask(page, "A slow question")
    await expect(page.get_by_test_id("message-streaming")).to_contain_text("word2")
    await page.get_by_role("button", name="Stop").click()
    await expect(page.get_by_role("button", name="Send")).to_be_visible()
    answer = page.get_by_test_id("message-assistant")
    await expect(answer).to_contain_text("word0 word1 word2")
    await expect(answer.get_by_text("Stopped", exact=True)).to_be_visible()
    await expect(answer).not_to_contain_text("word59")
    # The saved answer, with its actions at once (they came only after a reload).
    await expect(answer.get_by_role("button", name="Copy answer")).to_be_visible()
    await expect(answer.get_by_role("button", name="Regenerate")).to_be_visible()
    await expect(answer.get_by_role("button", name="Good answer")).to_be_visible()

    # Stopped before the first word: the question stays, and says it has no answer.
    scripted_llm.script(Reply(content="This answer comes too late.", delay_seconds=3))
    await ask(page, "Another slow question")
    # (Stopped before the server has the question, the text goes back to the composer.)
    await expect(page.get_by_test_id("message-pending")).to_have_attribute("data-saved", "true")
    await page.get_by_role("button", name="Stop").click()
    await expect(page.get_by_test_id("no-answer")).to_have_count(1)

    # The server kept the same: after a reload, the same chat, the partial answer, the marks.
    await page.reload()
    await expect(page.get_by_test_id("message-user")).to_have_text(
        ["A slow question", "Another slow question"]
    )
    await expect(answer).to_have_count(1)
    await expect(answer).to_contain_text("word0 word1 word2")
    await expect(answer.get_by_text("Stopped", exact=True)).to_be_visible()
    await expect(page.get_by_test_id("no-answer")).to_have_count(1)
    await page.screenshot(path=str(SCREENSHOTS / "stopped.png"))


async def test_chats_are_filed_under_categories_and_a_duplicate_name_says_why(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in()
    scripted_llm.script("Noted.")
    await ask(page, "Plan the quarterly review")
    await expect(page.get_by_test_id("message-assistant")).to_contain_text("Noted.")
    chats = page.get_by_role("complementary", name="Chats")
    # Categories are added in a dialog of their own (it was the browser's prompt()).
    await chats.get_by_role("button", name="Categories").click()
    manager = page.get_by_role("dialog", name="Categories")
    for name in ("Work", "Home"):
        await manager.get_by_placeholder("New category").fill(name)
        await manager.get_by_role("button", name="Add").click()
        await expect(manager.get_by_role("listitem").filter(has_text=name)).to_be_visible()
    await manager.get_by_role("button", name="Done").click()
    category = page.get_by_label("Category of this chat")

    # The move is slow; meanwhile the user filters by another category. When the move ends,
    # its refresh must list that filter, not every chat.
    async def slow_move(route: Route) -> None:
        if route.request.method == "PATCH":
            await asyncio.sleep(1.5)
        await route.continue_()

    await page.route("**/api/v1/chats/*", slow_move)
    await category.select_option(label="Work")
    await chats.get_by_label("Filter by category").select_option(label="Home")
    await expect(chats).to_contain_text("No chats yet")
    await page.wait_for_timeout(2_500)
    await expect(chats).to_contain_text("No chats yet")
    await page.unroute("**/api/v1/chats/*", slow_move)

    await chats.get_by_label("Filter by category").select_option(label="Work")
    await expect(
        chats.get_by_role("link", name="Plan the quarterly review", exact=True)
    ).to_be_visible()
    await chats.get_by_label("Filter by category").select_option(label="Home")
    await expect(chats).to_contain_text("No chats yet")
    await chats.get_by_label("Filter by category").select_option(label="All chats")
    await expect(category).to_have_value(re.compile(r"^[0-9a-f-]{36}$"))
    await page.screenshot(path=str(SCREENSHOTS / "categories.png"))

    # The same name again is refused, and the dialog says so.
    await chats.get_by_role("button", name="Categories").click()
    await manager.get_by_placeholder("New category").fill("Work")
    await manager.get_by_role("button", name="Add").click()
    await expect(manager.get_by_role("alert")).to_contain_text("already have a category")
    # Renamed in place, and deleted: its chat stays, in no category.
    await manager.get_by_role("button", name="Rename Work").click()
    await manager.get_by_label("New name for Work").fill("Office")
    await manager.get_by_label("New name for Work").press("Enter")
    await expect(manager.get_by_role("listitem").filter(has_text="Office")).to_be_visible()
    await page.screenshot(path=str(SCREENSHOTS / "categories-dialog.png"))
    await manager.get_by_role("button", name="Delete Office").click()
    await expect(manager.get_by_role("listitem").filter(has_text="Office")).to_have_count(0)
    await manager.get_by_role("button", name="Done").click()
    await expect(category).to_have_value("")
    await expect(
        chats.get_by_role("link", name="Plan the quarterly review", exact=True)
    ).to_be_visible()


async def test_expired_session_goes_back_to_login(
    browser: Browser, live_server: LiveServer
) -> None:
    context = await browser.new_context()
    page = await context.new_page()
    email = await sign_up(page, live_server)
    # Both tokens become useless: the next call fails to refresh and the app asks to log in
    # again, says why, and keeps the message that could not be sent.
    forged = "JSON.stringify({access_token: 'x', refresh_token: 'y'})"
    await page.evaluate(f"localStorage.setItem('docchat.tokens', {forged})")
    await page.get_by_role("button", name="+ New chat").click()
    await page.get_by_role("textbox", name="Message").fill("hello?")
    await page.get_by_role("textbox", name="Message").press("Enter")
    await expect(page.get_by_role("heading", name="Log in to docchat")).to_be_visible()
    await expect(page.get_by_role("status")).to_contain_text("Your session ended")
    await log_in(page, live_server, email, PASSWORD)
    await expect(page.get_by_role("textbox", name="Message")).to_have_value("hello?")

    # Logged out in another tab (or the storage cleared): this tab follows at once.
    other = await context.new_page()
    await other.goto(live_server.url)
    await expect(other.get_by_role("button", name="+ New chat")).to_be_visible()
    await other.get_by_role("button", name="Log out").click()
    await expect(page.get_by_role("heading", name="Log in to docchat")).to_be_visible()
    await expect(page.get_by_role("status")).to_contain_text("Your session ended")
    # Logging out on purpose shows no such message.
    await expect(other.get_by_role("heading", name="Log in to docchat")).to_be_visible()
    await expect(other.get_by_role("status")).to_have_count(0)
    await context.close()


async def test_admin_shares_a_document_with_everyone(
    browser: Browser, live_server: LiveServer
) -> None:
    context = await browser.new_context(viewport={"width": 1400, "height": 900})
    admin = await context.new_page()
    await admin.goto(live_server.url)
    await admin.get_by_label("Email").fill(ADMIN_EMAIL)
    await admin.get_by_label("Password").fill(ADMIN_PASSWORD)
    await admin.get_by_role("button", name="Log in").click()
    # The admin's own private file, uploaded in the chat page, is not "shared". (Picked through
    # `upload`, as a file picked the instant the page opens was, about once in three CI runs,
    # left without a trace: see flows.upload.)
    await upload(admin, {"admin-private.md": b"# Mine only\n\nA note for the administrator alone."})
    await admin.get_by_role("button", name="Admin", exact=True).click()
    await expect(admin).to_have_url(f"{live_server.url}/admin")
    await expect(admin.get_by_role("heading", name="Usage")).to_be_visible()
    # Found by a search: the list shows 20 a page, newest first, and the browser tests that ran
    # earlier in this process (their order depends on how many run at once) add their users.
    await admin.get_by_label("Search users").fill(ADMIN_EMAIL)
    await expect(admin.get_by_role("table", name="Users")).to_contain_text(ADMIN_EMAIL)
    await upload(admin, {"handbook.md": b"# Handbook\n\nThe office opens at nine."})
    shared = admin.get_by_test_id("document").filter(has_text="handbook.md")
    await expect(shared).to_contain_text("shared")
    shared_card = admin.locator(
        "section", has=admin.get_by_role("heading", name="Shared documents")
    )
    await expect(shared_card.get_by_test_id("document")).to_have_count(1)
    await expect(shared_card).not_to_contain_text("admin-private.md")
    # Nothing to pick here: no checkboxes that do nothing.
    await expect(shared_card.get_by_role("checkbox")).to_have_count(0)
    await admin.screenshot(path=str(SCREENSHOTS / "admin.png"))
    await context.close()

    # Any user sees it, marked as shared, and is offered no action that would be refused.
    other = await browser.new_context()
    user = await other.new_page()
    await sign_up(user, live_server)
    document = user.get_by_test_id("document").filter(has_text="handbook.md")
    await expect(document).to_contain_text("shared")
    await expect(document.get_by_role("button", name="Delete")).to_have_count(0)
    await expect(document.get_by_role("button", name="Reprocess")).to_have_count(0)
    await other.close()


async def test_admin_adds_a_colleague_who_chooses_a_password_and_makes_an_api_key(
    browser: Browser, live_server: LiveServer
) -> None:
    context = await browser.new_context(viewport={"width": 1400, "height": 900})
    admin = await context.new_page()
    await log_in(admin, live_server, ADMIN_EMAIL, ADMIN_PASSWORD)
    await admin.get_by_role("button", name="Admin", exact=True).click()
    colleague = f"colleague-{uuid.uuid4().hex[:8]}@example.com"
    await admin.get_by_label("Email of the new user").fill(colleague)
    await admin.get_by_role("button", name="Add user").click()
    temporary = (await admin.get_by_test_id("temporary-password").inner_text()).strip()
    assert len(temporary) >= 12
    users = admin.get_by_role("table", name="Users")
    await expect(users).to_contain_text(f"{colleague} (temporary password)")
    await expect(admin.get_by_role("table", name="Audit log")).to_contain_text("user.created")
    await admin.screenshot(path=str(SCREENSHOTS / "admin-users.png"), full_page=True)
    await context.close()

    phone = await browser.new_context(viewport={"width": 390, "height": 844})
    page = await phone.new_page()
    await log_in(page, live_server, colleague, temporary)
    await expect(page.get_by_role("heading", name="Choose your password")).to_be_visible()
    await page.get_by_label("Password you were given").fill(temporary)
    await page.get_by_label("New password").fill("violet harbour lantern")
    await page.get_by_role("button", name="Change password").click()
    await expect(page.get_by_role("textbox", name="Message")).to_be_visible()

    await page.get_by_role("button", name=f"Account: {colleague}").click()
    await expect(page.get_by_role("heading", name="API keys")).to_be_visible()
    await page.get_by_label("Name").fill("phone script")
    await page.get_by_role("button", name="Create key").click()
    secret = (await page.get_by_test_id("new-key").inner_text()).strip()
    assert secret.startswith("dck_")
    await page.screenshot(path=str(SCREENSHOTS / "account-phone.png"), full_page=True)
    async with httpx.AsyncClient(base_url=live_server.url) as http:
        me = await http.get("/api/v1/users/me", headers={"Authorization": f"Bearer {secret}"})
        assert me.status_code == 200 and me.json()["email"] == colleague
        page.once("dialog", lambda dialog: dialog.accept())
        await page.get_by_role("button", name="Revoke phone script").click()
        await expect(page.get_by_role("table", name="Your API keys")).to_contain_text("revoked")
        gone = await http.get("/api/v1/users/me", headers={"Authorization": f"Bearer {secret}"})
        assert gone.status_code == 401

    # Everything of theirs, as one zip file.
    async with page.expect_download() as saving:
        await page.get_by_role("button", name="Download everything").click()
    download = await saving.value
    assert download.suggested_filename.startswith("docchat-")
    assert download.suggested_filename.endswith(".zip")
    archive = zipfile.ZipFile(await download.path())
    account = json.loads(archive.read("account.json"))
    assert account["email"] == colleague
    assert [key["name"] for key in account["api_keys"]] == ["phone script"]
    await expect(page.get_by_role("button", name="Download everything")).to_be_enabled()
    await page.get_by_role("heading", name="Your data").scroll_into_view_if_needed()
    await page.screenshot(path=str(SCREENSHOTS / "account-data-phone.png"))

    # Then they leave: nothing of theirs is read by others, so it goes at once.
    await page.get_by_role("button", name="Delete account…").click()
    confirm = page.get_by_role("dialog", name="Delete your account?")
    await confirm.get_by_label("Type your email").fill(colleague)
    await confirm.get_by_label("Password").fill("wrong password here")
    await confirm.get_by_role("button", name="Delete my account").click()
    await expect(confirm.get_by_role("alert")).to_contain_text("password is not correct")
    await confirm.get_by_label("Password").fill("violet harbour lantern")
    await page.screenshot(path=str(SCREENSHOTS / "account-delete-phone.png"))
    await confirm.get_by_role("button", name="Delete my account").click()
    await expect(page.get_by_role("button", name="Log in")).to_be_visible()
    await log_in(page, live_server, colleague, "violet harbour lantern")
    await expect(page.get_by_role("alert")).to_be_visible()
    await phone.close()


async def test_an_administrator_hands_a_leavers_shared_documents_to_a_colleague(
    browser: Browser, live_server: LiveServer
) -> None:
    leaver, heir = (f"{name}-{uuid.uuid4().hex[:8]}@example.com" for name in ("leaver", "heir"))
    async with httpx.AsyncClient(base_url=live_server.url) as http:
        tokens = {}
        for email in (leaver, heir):
            await http.post("/api/v1/auth/register", json={"email": email, "password": PASSWORD})
            login = await http.post(
                "/api/v1/auth/login", data={"username": email, "password": PASSWORD}
            )
            tokens[email] = {"Authorization": f"Bearer {login.json()['access_token']}"}
        files = {"file": ("handbook.md", b"# Handbook\n\nThe office opens at eight.", "")}
        uploaded = await http.post("/api/v1/documents", headers=tokens[leaver], files=files)
        document = uploaded.json()["id"]
        made = await http.post(
            "/api/v1/collections", headers=tokens[leaver], json={"name": "Office"}
        )
        collection = made.json()["id"]
        await http.put(
            f"/api/v1/collections/{collection}/documents/{document}", headers=tokens[leaver]
        )
        await http.post(
            f"/api/v1/collections/{collection}/members",
            headers=tokens[leaver],
            json={"email": heir, "role": "viewer"},
        )
        await http.post(f"/api/v1/collections/{collection}/invitation/accept", headers=tokens[heir])
        asked = await http.post(
            "/api/v1/users/me/deletion",
            headers=tokens[leaver],
            json={"confirm_email": leaver, "password": PASSWORD},
        )
        assert asked.status_code == 202, asked.text

    context = await browser.new_context(viewport={"width": 1400, "height": 900})
    admin = await context.new_page()
    await log_in(admin, live_server, ADMIN_EMAIL, ADMIN_PASSWORD)
    await admin.get_by_role("button", name="Admin", exact=True).click()
    await admin.get_by_label("Search users").fill(leaver)
    users = admin.get_by_role("table", name="Users")
    await expect(users).to_contain_text("deletion requested")
    await admin.get_by_role("button", name=f"Delete {leaver}").click()
    dialog = admin.get_by_role("dialog", name=f"Delete {leaver}?")
    await expect(dialog).to_contain_text("handbook.md")
    await dialog.get_by_label("Email of the account that takes them over").fill(heir)
    await admin.screenshot(path=str(SCREENSHOTS / "admin-delete-user.png"))
    await dialog.get_by_role("button", name="Delete account").click()
    await expect(dialog).to_be_hidden()
    await expect(users).not_to_contain_text(leaver)
    await context.close()
    async with httpx.AsyncClient(base_url=live_server.url) as http:
        owned = await http.get(f"/api/v1/documents/{document}", headers=tokens[heir])
        assert owned.status_code == 200 and owned.json()["filename"] == "handbook.md"
        me = await http.get("/api/v1/users/me", headers=tokens[heir])
        assert owned.json()["owner_id"] == me.json()["id"]


async def test_a_team_shares_a_collection_and_asks_within_it(
    browser: Browser, live_server: LiveServer, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.reset()
    owner_context = await browser.new_context(viewport={"width": 1400, "height": 900})
    owner = await owner_context.new_page()
    await sign_up(owner, live_server)
    await owner.get_by_test_id("file-input").set_input_files(
        [
            {
                "name": "runbook.md",
                "mimeType": "text/markdown",
                "buffer": b"# Runbook\n\nThe Orion release train leaves every Thursday at 14:00.",
            },
            {
                "name": "rota.md",
                "mimeType": "text/markdown",
                "buffer": b"# Rota\n\nThe on-call rota changes hands on Mondays.",
            },
        ]
    )
    for name in ("runbook.md", "rota.md"):
        uploaded = owner.get_by_test_id("document").filter(has_text=name)
        await expect(uploaded).to_have_attribute("data-status", "completed", timeout=60_000)

    colleague_context = await browser.new_context(viewport={"width": 390, "height": 844})
    colleague = await colleague_context.new_page()
    colleague_email = await sign_up(colleague, live_server)

    await owner.get_by_role("button", name="Collections", exact=True).click()
    await owner.get_by_label("Name of the new collection").fill("Orion")
    await owner.get_by_role("button", name="Create").click()
    await expect(owner.get_by_role("heading", name="Orion")).to_be_visible()
    # Several documents at once (it took one choice each).
    adding = owner.get_by_role("group", name="Add your documents")
    await adding.get_by_role("checkbox", name="runbook.md").check()
    await adding.get_by_role("checkbox", name="rota.md").check()
    await adding.get_by_role("button", name="Add 2 documents").click()
    documents = owner.get_by_role("list", name="Documents in the collection")
    await expect(documents).to_contain_text("runbook.md")
    await expect(documents).to_contain_text("rota.md")
    await expect(adding).to_have_count(0)  # nothing of the owner's is left to add
    await owner.get_by_label("Email or group to share with").fill(colleague_email)
    await owner.get_by_role("button", name="Share").click()
    await expect(owner.get_by_role("list", name="Members")).to_contain_text(colleague_email)
    await owner.screenshot(path=str(SCREENSHOTS / "collections.png"))

    await expect(owner.get_by_role("list", name="Members")).to_contain_text(
        "invited, not yet accepted"
    )

    # The colleague is invited, not yet in: she accepts from the Collections page.
    await colleague.reload()
    await colleague.get_by_role("button", name="Collections, 1 invitation waiting").click()
    invitation = colleague.get_by_role("list", name="Invitations")
    await expect(invitation).to_contain_text("Orion")
    await colleague.screenshot(path=str(SCREENSHOTS / "collection-invitation-phone.png"))
    await colleague.get_by_role("button", name="Accept Orion").click()
    await expect(colleague.get_by_role("heading", name="Orion")).to_be_visible()
    await expect(colleague.get_by_role("list", name="Invitations")).to_have_count(0)
    await colleague.get_by_role("button", name="Back to chats").click()

    # She sees the document as shared with her and asks within the collection.
    await colleague.get_by_role("button", name="Documents & sources").click()
    shared = colleague.get_by_test_id("document").filter(has_text="runbook.md")
    await expect(shared).to_contain_text("shared with you")
    await expect(shared.get_by_role("button", name="Delete")).to_have_count(0)
    await colleague.get_by_role("button", name="Hide panel").click()
    await colleague.get_by_label("Ask within").select_option(label="the collection Orion")
    scripted_llm.script("Every Thursday at 14:00 [1].")
    await ask(colleague, "When does the Orion release train leave?")
    answer = colleague.get_by_test_id("message-assistant").last
    await expect(answer).to_contain_text("Every Thursday at 14:00")
    await expect(answer.get_by_role("button", name="Show source 1")).to_be_visible()
    assert "release train" in str(scripted_llm.last_request["messages"])
    # On a phone the answer stays in view: the panel opens when a source is asked for.
    panel = colleague.get_by_role("complementary", name="Documents and sources")
    await expect(panel).to_be_hidden()
    await expect(colleague.get_by_role("button", name="Documents & sources")).to_be_visible()
    await colleague.screenshot(path=str(SCREENSHOTS / "collection-answer-phone.png"))
    await answer.get_by_role("button", name="Show source 1").click()
    await expect(panel).to_be_visible()
    await expect(panel).to_contain_text("runbook.md")
    await owner_context.close()
    await colleague_context.close()


async def test_api_docs_render_without_internet(browser: Browser, live_server: LiveServer) -> None:
    context = await browser.new_context()
    page = await context.new_page()
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    await page.goto(f"{live_server.url}/docs")
    await expect(page.get_by_text("/api/v1/auth/login").first).to_be_visible()
    await expect(page.get_by_text("/v1/chat/completions").first).to_be_visible()
    assert all(url.startswith(live_server.url) for url in requests), requests
    await context.close()


async def test_admin_edits_a_users_quotas_and_sees_when_they_were_last_active(
    browser: Browser, live_server: LiveServer
) -> None:
    async with httpx.AsyncClient(base_url=live_server.url) as http:
        email = f"quota-{uuid.uuid4().hex[:8]}@example.com"
        await http.post("/api/v1/auth/register", json={"email": email, "password": PASSWORD})
        await http.post("/api/v1/auth/login", data={"username": email, "password": PASSWORD})
    context = await browser.new_context(viewport={"width": 1400, "height": 900})
    admin = await context.new_page()
    await log_in(admin, live_server, ADMIN_EMAIL, ADMIN_PASSWORD)
    await admin.get_by_role("button", name="Admin", exact=True).click()
    await admin.get_by_placeholder("Search by email or name").fill(email)
    users = admin.get_by_role("table", name="Users")
    row = users.get_by_role("row").filter(has_text=email)
    await expect(row).to_contain_text("default · default")
    await expect(row).not_to_contain_text("never")  # they logged in a moment ago
    await row.get_by_role("button", name=f"Edit the quotas of {email}").click()
    editor = row.get_by_role("form", name=f"Quotas of {email}")
    await editor.get_by_label("Tokens a day").fill("5000")
    await editor.get_by_label("Storage (MB)").fill("0")
    await editor.get_by_role("button", name="Save").click()
    await expect(row).to_contain_text("5,000 tokens/day · no limit")
    await admin.screenshot(path=str(SCREENSHOTS / "admin-quotas.png"), full_page=True)
    await context.close()


async def test_an_administrator_feeds_a_collection_from_a_server_folder(
    browser: Browser, live_server: LiveServer, shared_folders: Path
) -> None:
    folder = shared_folders / f"handbooks-{uuid.uuid4().hex[:6]}"
    (folder / "travel").mkdir(parents=True)
    (folder / "handbook.md").write_bytes(b"# Handbook\n\nEvery employee has 25 days of holiday.")
    (folder / "travel" / "ferry.txt").write_bytes(b"The island ferry leaves at nine.")
    context = await browser.new_context(viewport={"width": 1400, "height": 900})
    admin = await context.new_page()
    await log_in(admin, live_server, ADMIN_EMAIL, ADMIN_PASSWORD)
    await admin.get_by_role("button", name="Collections", exact=True).click()
    name = f"Handbooks {uuid.uuid4().hex[:4]}"
    await admin.get_by_label("Name of the new collection").fill(name)
    await admin.get_by_role("button", name="Create").click()
    await expect(admin.get_by_role("heading", name=name)).to_be_visible()

    await admin.get_by_role("button", name="Add a source…").click()
    form = admin.get_by_role("form", name="Add a source")
    # The form is drawn from the kinds the server declares: a Git repository's address is a
    # required URL, its token a password field.
    await form.get_by_label("Kind").select_option("git")
    await expect(form.get_by_role("textbox", name="Repository address")).to_have_attribute(
        "type", "url"
    )
    await expect(form.get_by_label("Access token")).to_have_attribute("type", "password")
    await form.screenshot(path=str(SCREENSHOTS / "collection-sources-form.png"))
    await admin.set_viewport_size({"width": 390, "height": 844})
    await form.screenshot(path=str(SCREENSHOTS / "collection-sources-form-phone.png"))
    await admin.set_viewport_size({"width": 1400, "height": 900})
    await form.get_by_label("Kind").select_option("folder")
    await form.get_by_role("textbox", name="Name").fill("HR share")
    await form.get_by_role("textbox", name="Folder").fill(str(folder))
    await form.get_by_role("button", name="Add source").click()
    sources = admin.get_by_role("list", name="Sources")
    await expect(sources).to_contain_text("2 added", timeout=60_000)
    documents = admin.get_by_role("list", name="Documents in the collection")
    await expect(documents).to_contain_text("ferry.txt")
    await expect(documents).to_contain_text("handbook.md")
    await admin.screenshot(path=str(SCREENSHOTS / "collection-sources.png"), full_page=True)

    # A file gone from the folder leaves the collection at the next sync.
    (folder / "travel" / "ferry.txt").unlink()
    await sources.get_by_role("button", name="Sync now").click()
    await expect(sources).to_contain_text("1 removed", timeout=60_000)
    await expect(documents).not_to_contain_text("ferry.txt")
    await admin.set_viewport_size({"width": 390, "height": 844})
    await sources.scroll_into_view_if_needed()
    await admin.screenshot(path=str(SCREENSHOTS / "collection-sources-phone.png"))
    await context.close()
