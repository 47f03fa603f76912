"""Every kind of file in the browser (issue 18): each uploaded, asked about, and cited with
where the passage is (scans marked as OCR text); a document replaced by a new version."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.async_api import Page, expect

from tests.e2e.conftest import SCREENSHOTS
from tests.e2e.flows import SignIn, ask, upload
from tests.support.files import make_pdf
from tests.support.llm_server import ScriptedLLM
from tests.support.office_files import make_epub, make_xlsx

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SCAN = FIXTURES / "ocr" / "google-doc-document-scanned"

# (file name, content, a question only that file answers, where its source is)
FILES: list[tuple[str, bytes, str, str]] = [
    (
        "fares.xlsx",
        make_xlsx({"Fares": [["Route", "Fare"], ["Harbour to Island", "4.20"]]}),
        "What is the fare from the harbour to the island?",
        "Fares, row 2",
    ),
    (
        "timetable.csv",
        b"Ferry,Departs\nMorning ferry,07:40\nEvening ferry,18:15\n",
        "When does the evening ferry depart?",
        "rows ",
    ),
    (
        "simpletable.odt",
        (FIXTURES / "office" / "odfpy-simpletable.odt").read_bytes(),
        "Which cell is in italic?",
        "table 1, row 2",
    ),
    (
        "logbook.epub",
        make_epub([("Chapter 1 The Harbour", "The ferry leaves the harbour at dawn.")]),
        "When does the ferry leave the harbour?",
        "Chapter 1 The Harbour",
    ),
    (
        "staff-handbook.md",
        b"# Handbook\n\n## Holidays\n\nEveryone gets twenty-eight days of leave a year.\n",
        "How many days of leave does everyone get?",
        "Handbook > Holidays",
    ),
    (
        "zen-scan.pdf",
        SCAN.with_suffix(".pdf").read_bytes(),
        "Is sparse better than dense?",
        "Scanned page, text by OCR",
    ),
    (
        "zen-photo.jpg",
        SCAN.with_suffix(".jpg").read_bytes(),
        "Is flat better than nested?",
        "Image, text by OCR",
    ),
]


# What the cited sentence or row of each file says (as a pattern: OCR may change case).
FACTS = {
    "fares.xlsx": r"Harbour to Island · 4\.20",
    "timetable.csv": r"Evening ferry · 18:15",
    "logbook.epub": r"leaves the harbour at dawn",
    "staff-handbook.md": r"twenty-eight days of leave",
    "zen-scan.pdf": r"sparse is better than dense",
    "zen-photo.jpg": r"flat is better than nested",
}

HARBOUR_PAGE = (
    "The harbour authority keeps the quays in repair and collects the mooring fees. "
    "Boats longer than twelve metres moor at the outer pier. "
    "The harbour master, Ellen Varga, assigns berths every morning at seven. "
    "Fuel is sold at the north quay until sunset. "
    "In winter the inner basin freezes and the ferries use the outer pier instead."
)


async def _cited(page: Page, llm: ScriptedLLM, name: str, question: str) -> None:
    """Ask about one file only (picked for the next message) and open the answer's source."""
    await page.get_by_role("tab", name="Documents").click()  # an answer shows its sources
    await page.get_by_label(f"Use {name} for the next message").check()
    llm.script("It says so [1].")
    answers = page.get_by_test_id("message-assistant")
    before = await answers.count()
    await ask(page, question)
    await expect(answers).to_have_count(before + 1)
    await answers.last.get_by_role("button", name="Show source 1").click()


async def test_each_kind_of_file_is_uploaded_asked_and_cited_with_its_place(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in()
    await upload(page, {name: content for name, content, _, _ in FILES}, wait_ms=90_000)

    source = page.get_by_role("list", name="Sources").get_by_role("listitem").first
    for name, _, question, place in FILES:
        await _cited(page, scripted_llm, name, question)
        await expect(source).to_contain_text(name)
        await expect(source).to_contain_text(place)
        if fact := FACTS.get(name):
            # The card quotes the sentence or row that holds the fact, marked.
            highlight = source.get_by_test_id("source-highlight")
            await expect(highlight).to_contain_text(re.compile(fact, re.IGNORECASE))
    await page.screenshot(path=str(SCREENSHOTS / "ocr-source.png"))


async def test_a_new_version_replaces_a_document_and_its_answers(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    page, _ = await signed_in()
    old = b"Gateway guide.\n\nThe gateway listens on port 8080 for the admin console."
    await upload(page, {"gateway.txt": old})
    row = page.get_by_test_id("document").filter(has_text="gateway")
    await expect(row.get_by_test_id("document-version")).to_have_count(0)

    new = b"Gateway guide, revised.\n\nThe gateway listens on port 9443 for the admin console."
    await row.get_by_label("Upload a new version of gateway.txt").set_input_files(
        [{"name": "gateway-2027.txt", "mimeType": "text/plain", "buffer": new}]
    )
    await expect(row.get_by_test_id("document-version")).to_contain_text(
        "version 2", timeout=60_000
    )
    await expect(row).to_contain_text("gateway-2027.txt")
    await expect(row.get_by_test_id("new-version")).to_have_count(0)

    scripted_llm.script("Port 9443 [1].")
    await ask(page, "Which port does the gateway listen on for the admin console?")
    await expect(page.get_by_test_id("message-assistant").last).to_contain_text("9443")
    assert "port 9443" in scripted_llm.prompt_text()
    assert "port 8080" not in scripted_llm.prompt_text()

    # The same file again changes nothing, and says so.
    await page.get_by_role("tab", name="Documents").click()
    await row.get_by_label("Upload a new version of gateway-2027.txt").set_input_files(
        [{"name": "gateway-2027.txt", "mimeType": "text/plain", "buffer": new}]
    )
    await expect(page.get_by_role("status").filter(has_text="same file")).to_be_visible()
    await page.screenshot(path=str(SCREENSHOTS / "new-version.png"))


async def test_the_cited_sentence_is_marked_in_the_viewer_and_on_the_pdf_page(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    for size, viewport in (("desktop", None), ("phone", {"width": 390, "height": 844})):
        page, _ = await signed_in(**({"viewport": viewport} if viewport else {}))
        await upload(page, {"harbour.pdf": make_pdf([HARBOUR_PAGE])})
        # An answer that cites nothing: auto mode quotes the documents instead (and says so).
        scripted_llm.script("Somebody assigns them, I suppose.")
        await ask(page, "Who assigns the berths in the harbour?")
        answer = page.get_by_test_id("message-assistant").last
        await expect(answer).to_contain_text("Ellen Varga")
        await expect(answer).to_contain_text("Quoted from the documents")
        await page.screenshot(path=str(SCREENSHOTS / f"extractive-answer-{size}.png"))

        await answer.get_by_role("button", name=re.compile("1 source")).click()
        card = page.get_by_role("list", name="Sources").get_by_role("listitem").first
        await expect(card.get_by_test_id("source-highlight")).to_contain_text(
            "The harbour master, Ellen Varga, assigns berths every morning at seven."
        )
        await card.get_by_role("button", name=re.compile("Show in the document")).click()
        sentence = page.get_by_test_id("cited-sentence")
        # The sentence (with a short neighbour of its paragraph), not the passage's start.
        await expect(sentence).to_contain_text(
            "The harbour master, Ellen Varga, assigns berths every morning at seven."
        )
        await expect(sentence).not_to_contain_text("The harbour authority keeps")
        await expect(sentence).to_be_in_viewport()
        await page.screenshot(path=str(SCREENSHOTS / f"viewer-cited-sentence-{size}.png"))

        await page.get_by_role("button", name="Page 1", exact=True).click()
        await expect(page.get_by_test_id("pdf-page")).to_have_attribute("data-state", "shown")
        boxes = page.get_by_test_id("pdf-highlight")
        # The sentence, not the whole passage: a line or two of the page's five.
        assert 1 <= await boxes.count() <= 3
        await page.screenshot(path=str(SCREENSHOTS / f"pdf-cited-sentence-{size}.png"))


async def test_a_cited_table_row_is_marked_on_the_drawn_pdf_page(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    """A table row read from a PDF (LibreOffice's) is cited as its row, and the page view
    marks its cells on their line, not the whole table."""
    fees = (FIXTURES / "pdf" / "libreoffice-harbour-fees-table.pdf").read_bytes()
    for size, viewport in (("desktop", None), ("phone", {"width": 390, "height": 844})):
        page, _ = await signed_in(**({"viewport": viewport} if viewport else {}))
        await upload(page, {"harbour-fees.pdf": fees})
        scripted_llm.script("It depends on the berth, I suppose.")
        await ask(page, "What is the fee per night at the South quay?")
        answer = page.get_by_test_id("message-assistant").last
        await expect(answer).to_contain_text("EUR 42")
        await answer.get_by_role("button", name=re.compile("1 source")).click()
        card = page.get_by_role("list", name="Sources").get_by_role("listitem").first
        await expect(card).to_contain_text("table 1, row")
        await expect(card.get_by_test_id("source-highlight")).to_contain_text("South quay")
        await card.get_by_role("button", name=re.compile("Show in the document")).click()
        await page.get_by_role("button", name="Page 1", exact=True).click()
        await expect(page.get_by_test_id("pdf-page")).to_have_attribute("data-state", "shown")
        boxes = page.get_by_test_id("pdf-highlight")
        await expect(boxes.first).to_be_visible()
        tops = [
            (await boxes.nth(index).bounding_box() or {"y": -1.0})["y"]
            for index in range(await boxes.count())
        ]
        # Its four cells, on one line of the drawn table.
        assert len(tops) >= 3 and max(tops) - min(tops) < 4, tops
        await page.screenshot(path=str(SCREENSHOTS / f"pdf-cited-table-row-{size}.png"))


async def test_sources_that_disagree_are_shown_with_both_sides(
    signed_in: SignIn,
    scripted_llm: ScriptedLLM,
) -> None:
    reports = {
        "report-2023.txt": b"Annual report 2023. The Larkspur bakery employed 12 bakers at the "
        b"end of the year, in its two shops.",
        "report-2024.txt": b"Annual report 2024. The Larkspur bakery employed 19 bakers at the "
        b"end of the year, in its two shops.",
    }
    for size, viewport in (("desktop", None), ("phone", {"width": 390, "height": 844})):
        page, _ = await signed_in(**({"viewport": viewport} if viewport else {}))
        await upload(page, reports)
        # The model cites one report only: the answer is told the other one disagrees.
        scripted_llm.script("The annual report gives the number of Larkspur bakers [1].")
        await ask(page, "How many bakers does the Larkspur bakery employ?")
        answer = page.get_by_test_id("message-assistant").last
        note = answer.get_by_role("note", name="Sources disagree")
        await expect(note).to_contain_text("12")
        await expect(note).to_contain_text("19")
        await expect(answer).to_contain_text("Answered from the documents")
        await page.screenshot(path=str(SCREENSHOTS / f"sources-disagree-{size}.png"))
