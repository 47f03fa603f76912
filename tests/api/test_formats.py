"""Each format through the same upload, worker and answer path: ingested, searched, and cited
with where the passage is (issue 18). Real third-party files, plus files built with the
libraries for content worth asking about, plus hostile ones that fail with a reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from docchat.ingestion.worker import IngestionWorker
from docchat.main.components import Components
from tests.support.chat import ask
from tests.support.documents import upload, upload_and_process
from tests.support.llm_server import ScriptedLLM
from tests.support.office_files import (
    make_docx,
    make_epub,
    make_pptx,
    make_xlsx,
    xlsx_with_a_far_row,
    zip_bomb_docx,
)
from tests.support.users import auth_headers

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "office"
PROXY = "Set HTTPS_PROXY to the proxy's address when the gateway machine sits behind a proxy."
HTML_PAGE = b"""<!doctype html><html><head><title>Runbook</title><script>var tracking = 1;</script>
</head><body><nav><a href="/">Home</a> | <a href="/docs">Docs</a></nav>
<h1>Runbook</h1><p>How the on-call team works.</p>
<h2>Escalation</h2><p>Page the duty manager after twenty minutes without a fix.</p>
<h2>Contacts</h2><table><tr><th>Role</th><th>Phone</th></tr>
<tr><td>Duty manager</td><td>+44 20 7946 0018</td></tr></table>
<footer>Copyright the team</footer></body></html>"""

CASES: list[tuple[str, bytes, str, str, str]] = [
    # (file name, content, question, expected passage fragment, expected location)
    (
        "install-guide.docx",
        make_docx(
            [
                (1, "3 Installation", ["Install the gateway with the package manager."]),
                (2, "3.1 Requirements", ["The gateway needs 2 GB of memory."]),
                (2, "3.2 Proxy", [PROXY]),
            ]
        ),
        "How do I configure the gateway behind a proxy with HTTPS_PROXY?",
        "Set HTTPS_PROXY",
        "3 Installation > 3.2 Proxy",
    ),
    (
        "roadmap.pptx",
        make_pptx([("Goals", "Grow the team"), ("Launch plan", "The viewer ships in March 2027")]),
        "When does the viewer ship according to the launch plan?",
        "The viewer ships in March 2027",
        "Slide 2: Launch plan",
    ),
    (
        "invoices.xlsx",
        make_xlsx(
            {
                "Summary": [["Quarter", "Total"], ["Q1", 1200]],
                "Invoices": [["Invoice", "Customer", "Amount"]]
                + [[f"INV-{n:04}", f"Customer {n}", n * 10] for n in range(1, 61)],
            }
        ),
        "What amount is on invoice INV-0042 for Customer 42?",
        "| INV-0042 | Customer 42 | 420 |",
        "Invoices, rows ",
    ),
    (
        "runbook.html",
        HTML_PAGE,
        "When should I page the duty manager during escalation?",
        "Page the duty manager after twenty minutes",
        "Runbook > Escalation",
    ),
    (
        "timetable.csv",
        b"Ferry,Departs\nMorning ferry,07:40\nEvening ferry,18:15\n",
        "When does the evening ferry depart?",
        "| Evening ferry | 18:15 |",
        "rows 2-3",
    ),
    (
        "handbook.md",
        b"# Handbook\n\n## Holidays\n\nEveryone gets twenty-eight days of leave a year.\n",
        "How many days of leave does everyone get?",
        "twenty-eight days of leave",
        "Handbook > Holidays",
    ),
]


async def _cited(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    fresh_llm: ScriptedLLM,
    question: str,
    document_id: str,
) -> dict[str, Any]:
    fresh_llm.script("Here is what the document says [1].")
    response = await ask(client, headers, question, document_ids=[document_id])
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()["assistant_message"]
    return answer


@pytest.mark.parametrize(("name", "content", "question", "fragment", "location"), CASES)
async def test_each_format_is_ingested_searched_and_cited_with_its_location(
    client: httpx.AsyncClient,
    components: Components,
    fresh_llm: ScriptedLLM,
    name: str,
    content: bytes,
    question: str,
    fragment: str,
    location: str,
) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(client, components, headers, name, content)
    assert document["status"] == "completed", document["error"]
    answer = await _cited(client, headers, fresh_llm, question, document["id"])
    [source] = answer["sources"]
    assert source["document_name"] == name
    assert source["location"].startswith(location), source
    assert fragment in fresh_llm.prompt_text()  # the passage reached the model
    # The preview is text to read: a table's rule line is markup (spreadsheet previews began
    # with "| --- |", issue 40).
    assert "| --- |" not in source["content_preview"], source["content_preview"]


@pytest.mark.parametrize(
    ("name", "content_type", "parts"),
    [
        ("mammoth-tables.docx", "wordprocessingml", 1),
        ("python-pptx-tables.pptx", "presentationml", 3),
        ("xlsx2csv-sheets.xlsx", "spreadsheetml", 2),
        ("xlsx2csv-test-file.csv", "text/csv", 1),
        ("rustdoc-what-is-rustdoc.html", "text/html", 1),
        ("odfpy-simpletable.odt", "opendocument.text", 1),
    ],
)
async def test_real_files_from_the_applications_people_use_are_ingested(
    client: httpx.AsyncClient, components: Components, name: str, content_type: str, parts: int
) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(
        client, components, headers, name, (FIXTURES / name).read_bytes()
    )
    assert document["status"] == "completed", document["error"]
    assert content_type in document["content_type"]
    assert document["page_count"] == parts and document["chunk_count"] >= 1


async def test_a_value_in_a_real_spreadsheet_row_is_answered_from_that_row(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    sheet = (FIXTURES / "xlsx2csv-sheets.xlsx").read_bytes()
    document = await upload_and_process(client, components, headers, "сценарий.xlsx", sheet)
    answer = await _cited(
        client, headers, fresh_llm, "Краткое описание сути сценария", document["id"]
    )
    assert answer["sources"][0]["location"].startswith("Вариант использования, rows 2-")
    assert "| № | Элемент | Описание |" in fresh_llm.prompt_text()  # the header came along


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("contract.docx", zip_bomb_docx(unpacked_mb=400), "zip bomb"),
        ("notes.docx", b"PK\x03\x04" + b"\x00" * 64, "ZIP archive that is not"),
        ("budget.xls", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 64, "old Office document"),
    ],
)
async def test_hostile_or_wrong_office_files_fail_with_a_reason(
    client: httpx.AsyncClient, components: Components, name: str, content: bytes, reason: str
) -> None:
    headers = await auth_headers(client)
    response = await upload(client, headers, name, content)
    if response.status_code == 415:  # refused at the door
        assert reason in response.json()["detail"]
        return
    assert response.status_code == 202
    await IngestionWorker(components).run_until_idle()
    url = f"/api/v1/documents/{response.json()['id']}"
    document = (await client.get(url, headers=headers)).json()
    assert document["status"] == "failed" and reason in document["error"]


async def test_a_million_empty_rows_do_not_stall_the_worker(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(
        client, components, headers, "far.xlsx", xlsx_with_a_far_row()
    )
    assert document["status"] == "completed" and document["chunk_count"] == 1


async def test_opendocument_and_epub_files_are_cited_by_section(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    """(The unit tests read a whole real manual and a whole real novel; here, files small
    enough for one test's worker run.)"""
    headers = await auth_headers(client)
    table = (FIXTURES / "odfpy-simpletable.odt").read_bytes()
    sheet = await upload_and_process(client, components, headers, "simpletable.odt", table)
    answer = await _cited(client, headers, fresh_llm, "Which cell is in italic?", sheet["id"])
    assert answer["sources"][0]["location"] == "table 1, row 2"

    book = make_epub(
        [
            ("Chapter 1 The Harbour", "The ferry leaves the harbour at dawn."),
            ("Chapter 2 The Storm", "The storm closed the lighthouse road for three days."),
        ]
    )
    epub = await upload_and_process(client, components, headers, "storm.epub", book)
    assert epub["status"] == "completed" and epub["page_count"] == 2
    answer = await _cited(
        client, headers, fresh_llm, "How long did the storm close the lighthouse road?", epub["id"]
    )
    assert answer["sources"][0]["location"] == "Chapter 2 The Storm"
