"""A table drawn on a PDF page, through the API and the worker's sandboxed reader: its rows
are passages of their own, cited by page, table and row."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from docchat.main.components import Components
from tests.support.chat import ask
from tests.support.documents import upload_and_process
from tests.support.users import auth_headers

pytestmark = pytest.mark.usefixtures("fresh_llm")

HARBOUR_FEES = (
    Path(__file__).resolve().parents[1] / "fixtures" / "pdf" / "libreoffice-harbour-fees-table.pdf"
)


async def test_a_pdf_table_row_is_quoted_with_its_header_and_cited_by_page_and_row(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(
        client, components, headers, "harbour-fees.pdf", HARBOUR_FEES.read_bytes()
    )
    assert document["status"] == "completed", document

    response = await ask(
        client,
        headers,
        "What is the fee per night at the South quay?",
        options={"answer_mode": "extractive"},
    )
    assert response.status_code == 200, response.text
    answer = response.json()["assistant_message"]
    assert "Fee per night: EUR 42" in answer["content"], answer["content"]
    [source] = [s for s in answer["sources"] if s["location"]]
    assert source["page"] == 1 and source["location"] == "table 1, rows 2-5"
    assert source["highlight"]["row"] == 4 and "South quay" in source["highlight"]["text"]
