"""Bugs seen by people trying the web app (issue 40), each shown in a real browser; every test
here failed before its fix."""

from __future__ import annotations

from playwright.async_api import expect

from tests.e2e.conftest import SCREENSHOTS
from tests.e2e.flows import SignIn, ask, upload
from tests.support.files import filler, make_pdf
from tests.support.llm_server import ScriptedLLM

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

    await answer.get_by_role("button", name="Show source 1").click()
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
          const waiting = document.querySelector("[data-testid=document][data-status=queued]");
          if (!waiting) return null;
          const buttons = [...waiting.querySelectorAll("button")].map((b) => b.textContent.trim());
          return { text: waiting.textContent, buttons };
        }""",
        timeout=30_000,
    )
    waiting = await seen.json_value()
    assert "in line" in waiting["text"]
    assert "Delete" in waiting["buttons"] and "Reprocess" not in waiting["buttons"]
    done = page.locator("[data-testid=document][data-status=completed]")
    await expect(done).to_have_count(3, timeout=120_000)
    await expect(done.first.get_by_role("button", name="Reprocess")).to_be_visible()
