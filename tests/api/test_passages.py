"""A document's text chunk by chunk (issue 19's viewer): in reading order, paged by chunk
index, with each chunk's page; only for those who may read the document."""

from __future__ import annotations

import httpx

from docchat.main.components import Components
from tests.support.documents import upload_and_process
from tests.support.files import filler, make_pdf
from tests.support.users import auth_headers


async def test_passages_come_in_reading_order_with_their_pages(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    pdf = make_pdf([filler("harbour", 40), filler("lighthouse", 40), filler("ferry", 40)])
    document = await upload_and_process(client, components, headers, "guide.pdf", pdf)
    assert document["status"] == "completed" and document["chunk_count"] > 3
    url = f"/api/v1/documents/{document['id']}/passages"

    everything = (await client.get(url, headers=headers, params={"limit": 100})).json()
    assert everything["total"] == document["chunk_count"]
    indexes = [passage["chunk_index"] for passage in everything["items"]]
    assert indexes == list(range(document["chunk_count"]))
    pages = [passage["page"] for passage in everything["items"]]
    assert pages == sorted(pages) and pages[0] == 1 and pages[-1] == 3

    assert everything["markdown"] is False  # a PDF's text is plain

    window = (await client.get(url, headers=headers, params={"skip": 2, "limit": 2})).json()
    assert [p["chunk_index"] for p in window["items"]] == [2, 3]
    assert window["items"][0]["text"] == everything["items"][2]["text"]

    stranger = await auth_headers(client)
    assert (await client.get(url, headers=stranger)).status_code == 404


async def test_passages_say_when_their_text_is_markdown(
    client: httpx.AsyncClient, components: Components
) -> None:
    """The viewer showed Markdown's `#` and `| --- |` as they are: it is told to render them."""
    headers = await auth_headers(client)
    notes = b"# Tides\n\n| Day | High tide |\n| --- | --- |\n| Monday | 06:10 |\n"
    plain = notes + b"Kept as written.\n"  # (the same bytes again would be a duplicate)
    for name, content, markdown in (("tides.md", notes, True), ("tides.txt", plain, False)):
        document = await upload_and_process(client, components, headers, name, content)
        url = f"/api/v1/documents/{document['id']}/passages"
        listed = (await client.get(url, headers=headers)).json()
        assert listed["markdown"] is markdown, name
        assert "| --- |" in listed["items"][0]["text"]
