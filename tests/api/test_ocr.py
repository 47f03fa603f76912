"""Scans and images through the upload, worker and answer path (issue 18): their OCR text is
searched and cited, and sources say the text was read by OCR."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from docchat.extraction.ocr import OCR_IMAGE_LOCATION, OCR_PAGE_LOCATION
from docchat.main.components import Components
from tests.support.chat import ask
from tests.support.documents import upload_and_process
from tests.support.llm_server import ScriptedLLM
from tests.support.users import auth_headers

SCANS = Path(__file__).resolve().parents[1] / "fixtures" / "ocr"


@pytest.mark.parametrize(
    ("name", "content_type", "page", "location"),
    [
        ("google-doc-document-scanned.pdf", "application/pdf", 1, OCR_PAGE_LOCATION),
        ("google-doc-document-scanned.jpg", "image/jpeg", None, OCR_IMAGE_LOCATION),
    ],
)
async def test_a_scan_is_answered_from_its_ocr_text_and_the_source_says_so(
    client: httpx.AsyncClient,
    components: Components,
    fresh_llm: ScriptedLLM,
    name: str,
    content_type: str,
    page: int | None,
    location: str,
) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(
        client, components, headers, name, (SCANS / name).read_bytes()
    )
    assert document["status"] == "completed", document["error"]
    assert document["content_type"] == content_type and document["page_count"] == 1

    fresh_llm.script("Sparse beats dense [1].")
    response = await ask(client, headers, "Is sparse better than dense?")
    assert response.status_code == 200, response.text
    [source] = response.json()["assistant_message"]["sources"]
    assert source["document_id"] == document["id"]
    assert source["page"] == page and source["location"] == location
    assert "Sparse is better than dense" in fresh_llm.prompt_text()


async def test_an_image_that_is_not_what_its_name_says_is_still_read(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    jpeg = (SCANS / "google-doc-document-scanned.jpg").read_bytes()
    document = await upload_and_process(client, components, headers, "notes.txt", jpeg)
    assert document["status"] == "completed" and document["content_type"] == "image/jpeg"
