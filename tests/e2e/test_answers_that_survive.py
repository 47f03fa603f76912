"""Answers that survive the reader (issue 40): leaving a chat, reloading the page or losing the
model no longer loses the answer or the question."""

from __future__ import annotations

import re

from playwright.async_api import Page, expect

from tests.e2e.conftest import SCREENSHOTS
from tests.e2e.flows import SignIn, ask
from tests.support.llm_server import Reply, ScriptedLLM

CHAT_URL = re.compile(r"/chats/[0-9a-f-]{36}$")
WORDS = [f"word{number}" for number in range(50)]
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


def _slow() -> Reply:
    return Reply(content=" ".join(WORDS), piece_delay_seconds=0.15)


async def _answer_is_whole(page: Page) -> None:
    answer = page.get_by_test_id("message-assistant")
    await expect(answer).to_contain_text("word49", timeout=20_000)
    await expect(answer.get_by_text("Stopped", exact=True)).to_have_count(0)
    await expect(page.get_by_test_id("no-answer")).to_have_count(0)
    await expect(answer.get_by_role("button", name="Copy answer")).to_be_visible()


async def test_returning_to_a_chat_whose_answer_is_still_written_shows_it_as_it_goes(
    signed_in: SignIn, scripted_llm: ScriptedLLM
) -> None:
    """It showed "No answer ... Try again" and never updated."""
    page, _ = await signed_in()
    scripted_llm.script(_slow())
    await ask(page, "Tell me a slow story")
    await expect(page.get_by_test_id("message-streaming")).to_contain_text("word2")
    await expect(page).to_have_url(CHAT_URL)
    await page.get_by_role("button", name="+ New chat").click()
    await expect(page.get_by_role("heading", name="Ask about your documents")).to_be_visible()

    chats = page.get_by_role("complementary", name="Chats")
    await chats.get_by_role("link", name="Tell me a slow story", exact=True).click()
    streaming = page.get_by_test_id("message-streaming")
    await expect(streaming).to_contain_text("word0 word1 word2")
    await expect(page.get_by_test_id("no-answer")).to_have_count(0)
    await expect(page.get_by_test_id("message-assistant")).to_have_count(0)  # not twice
    await expect(page.get_by_role("button", name="Stop")).to_be_visible()
    await page.screenshot(path=str(SCREENSHOTS / "answer-resumed-desktop.png"))
    await _answer_is_whole(page)


async def test_reloading_during_a_new_chats_first_answer_keeps_it(
    signed_in: SignIn, scripted_llm: ScriptedLLM
) -> None:
    """The URL was still "/" and the reload stopped the answer."""
    page, _ = await signed_in(**PHONE)
    scripted_llm.script(_slow())
    await ask(page, "Tell me a slow story")
    await expect(page.get_by_test_id("message-streaming")).to_contain_text("word1")
    await expect(page).to_have_url(CHAT_URL)  # the chat has its address as soon as it exists
    await page.reload()
    await expect(page.get_by_test_id("message-user")).to_have_text(["Tell me a slow story"])
    await expect(page.get_by_test_id("message-streaming")).to_contain_text("word")
    await page.screenshot(path=str(SCREENSHOTS / "answer-resumed-phone.png"))
    await _answer_is_whole(page)


async def test_a_model_failure_says_so_in_words_and_gives_the_question_back(
    signed_in: SignIn, scripted_llm: ScriptedLLM
) -> None:
    page, _ = await signed_in()
    scripted_llm.script(Reply(status=500))
    await ask(page, "Is anyone there?")
    failed = page.get_by_test_id("answer-failed")
    await expect(failed).to_contain_text("The answer could not be written")
    await expect(failed).not_to_contain_text("Internal server error")
    composer = page.get_by_role("textbox", name="Message")
    await expect(composer).to_have_value("Is anyone there?")
    await page.screenshot(path=str(SCREENSHOTS / "answer-failed.png"))

    scripted_llm.script("Yes, here.")
    await failed.get_by_role("button", name="Try again").click()
    await expect(page.get_by_test_id("message-assistant")).to_contain_text("Yes, here.")
    await expect(page.get_by_test_id("message-user")).to_have_text(["Is anyone there?"])
    await expect(composer).to_have_value("")
    await expect(failed).to_have_count(0)

    # Failed again, and sent again with Send from the composer it went back to: asked once, in
    # the failed question's place (it was in the chat twice, and twice in the model's prompt).
    scripted_llm.script(Reply(status=500))
    await ask(page, "And now?")
    await expect(composer).to_have_value("And now?")
    scripted_llm.script("Still here.")
    await page.get_by_role("button", name="Send").click()
    await expect(page.get_by_test_id("message-assistant").last).to_contain_text("Still here.")
    questions = ["Is anyone there?", "And now?"]
    await expect(page.get_by_test_id("message-user")).to_have_text(questions)
    assert scripted_llm.prompt_text().count("And now?") == 1
    await page.reload()  # the server kept it once too
    await expect(page.get_by_test_id("message-assistant").last).to_contain_text("Still here.")
    await expect(page.get_by_test_id("message-user")).to_have_text(questions)
