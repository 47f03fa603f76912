"""A chart pasted into a Word file, through the API and the worker's sandboxed reader: its text
is read by OCR, answers questions and is cited as the picture."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from docchat.main.components import Components
from tests.support.chat import ask
from tests.support.documents import upload_and_process
from tests.support.users import auth_headers

pytestmark = pytest.mark.usefixtures("fresh_llm")

REPORT = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "office"
    / "pandoc-harbour-report-with-chart.docx"
)


async def test_a_chart_s_text_in_a_word_file_is_quoted_and_cited_as_the_picture(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(
        client, components, headers, "harbour-report.docx", REPORT.read_bytes()
    )
    assert document["status"] == "completed", document

    response = await ask(
        client,
        headers,
        "What was the occupancy of the North pontoon in July 2026?",
        options={"answer_mode": "extractive"},
    )
    assert response.status_code == 200, response.text
    answer = response.json()["assistant_message"]
    assert "87 percent" in answer["content"], answer["content"]
    [source] = [s for s in answer["sources"] if "87 percent" in s["highlight"]["text"]]
    assert source["location"] == "Image 2, text by OCR"
