"""A document's failure reason is for its owner (security issue, item B): it says what is wrong
with the file in plain words and never carries a server path, a storage key, a stack trace or
a reader library's own message."""

from __future__ import annotations

import io
import re
import uuid
import zipfile

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.documents.models import Document
from docchat.ingestion.worker import IngestionWorker
from docchat.main.components import Components
from tests.support.documents import upload
from tests.support.office_files import make_docx, make_pptx, make_xlsx, replace_part
from tests.support.users import auth_headers

SHEET = "xl/worksheets/sheet1.xml"
WORD_MAIN = b"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
SLIDES_MAIN = b"application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"
INTERNALS = re.compile(
    r"Traceback|File \"|\w+(Error|Exception)\b|openpyxl|docx|pptx|lxml|zipfile|pypdf|<string>"
)


def _workbook() -> bytes:
    return make_xlsx({"Data": [["name", "amount"], ["alpha", 1]]})


def _with_sheet_row(row: bytes) -> bytes:
    """The workbook with one more row in its sheet (XML as written)."""
    built = _workbook()
    sheet = zipfile.ZipFile(io.BytesIO(built)).read(SHEET)
    return replace_part(built, SHEET, sheet.replace(b"</sheetData>", row + b"</sheetData>"))


def _retyped(package: bytes, main_type: bytes) -> bytes:
    """The package with its main part declared as plain XML, which the reader refuses."""
    types = zipfile.ZipFile(io.BytesIO(package)).read("[Content_Types].xml")
    return replace_part(
        package, "[Content_Types].xml", types.replace(main_type, b"application/xml")
    )


HOSTILE = [
    # A shared-string index past the table (was "(IndexError: list index out of range)").
    ("strings.xlsx", _with_sheet_row(b'<row r="3"><c r="A3" t="s"><v>99</v></c></row>'), "Excel"),
    # Styles that are not XML (was the parser's message, "(<string>, line 1)").
    ("styles.xlsx", replace_part(_workbook(), "xl/styles.xml", b"<x"), "Excel"),
    # A date cell that is no date (was "(ValueError: Invalid datetime value ...)").
    ("dates.xlsx", _with_sheet_row(b'<row r="3"><c r="A3" t="d"><v>soon</v></c></row>'), "Excel"),
    # A main part of the wrong type (was "file '<data dir>/files/ab/...' is not a Word file").
    ("letter.docx", _retyped(make_docx([(1, "Letter", ["Dear all"])]), WORD_MAIN), "Word"),
    ("deck.pptx", _retyped(make_pptx([("Plan", "Ship it")]), SLIDES_MAIN), "PowerPoint"),
]


@pytest.mark.parametrize(("name", "content", "kind"), HOSTILE, ids=[h[0] for h in HOSTILE])
async def test_a_reader_failure_is_described_without_server_details(
    client: httpx.AsyncClient,
    components: Components,
    session: AsyncSession,
    name: str,
    content: bytes,
    kind: str,
) -> None:
    headers = await auth_headers(client)
    response = await upload(client, headers, name, content)
    assert response.status_code == 202, response.text
    await IngestionWorker(components).run_until_idle()
    document = (
        await client.get(f"/api/v1/documents/{response.json()['id']}", headers=headers)
    ).json()
    stored = await session.get(Document, uuid.UUID(document["id"]))
    assert stored is not None

    reason = document["error"]
    assert document["status"] == "failed"
    assert reason == f"The {kind} file could not be read; it looks damaged"
    assert str(components.settings.data_dir) not in reason
    assert stored.storage_key not in reason and stored.sha256[:12] not in reason
    assert "/" not in reason and "\\" not in reason
    assert not INTERNALS.search(reason), reason
