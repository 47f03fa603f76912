"""Passages reach the model with their identity: each after a header line naming its document,
its place in it, the document's own date, its upload date and the collections the asker sees it
in; through the whole stack (upload, the worker, a question), read off the requests the
scripted model server received. Citations stay `[n]`."""

from __future__ import annotations

import io
import json
import time
from typing import Any

import httpx
import openai
import pytest
from pypdf import PdfReader, PdfWriter
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.documents import scopes
from docchat.llm import prompts
from docchat.main.components import Components
from docchat.retrieval.passage_identity import DocumentIdentity
from tests.support.chat import ask
from tests.support.documents import upload, upload_and_process
from tests.support.files import filler, make_pdf
from tests.support.llm_server import Reply, ScriptedLLM
from tests.support.openai_sdk import sdk_for
from tests.support.users import admin_headers, auth_headers

FERRY = (
    "The Kellport harbour ferry to Duskmoor island leaves at nine every morning and returns "
    "at six in the evening."
)
QUESTION = "When does the Kellport ferry to Duskmoor leave?"
BRIDGE = "The Zephyr suspension bridge over the Elbe was completed in 1932 by Marta Lindqvist."

pytestmark = pytest.mark.usefixtures("fresh_llm")


@pytest.fixture(autouse=True, params=["listed", "wide"])
def scope_shape(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test twice: scopes listed, and as a condition over the library (the identities
    are looked up by the passages' documents either way)."""
    if request.param == "wide":
        monkeypatch.setattr(scopes, "LISTED_UP_TO", 0)
        monkeypatch.setattr(scopes, "_everyones", {})
    return str(request.param)


def dated_pdf(pages: list[str], modified: str) -> bytes:
    """A PDF whose information dictionary holds `modified` as its modification date."""
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(pages))))
    writer.metadata = {"/ModDate": modified, "/Title": "Harbour guide"}
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def system_prompt(llm: ScriptedLLM) -> str:
    content: str = llm.last_request["messages"][0]["content"]
    return content


async def collection(client: httpx.AsyncClient, headers: dict[str, str], name: str) -> str:
    created = await client.post("/api/v1/collections", headers=headers, json={"name": name})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


async def add_to(
    client: httpx.AsyncClient, headers: dict[str, str], collection_id: str, document_id: str
) -> None:
    added = await client.put(
        f"/api/v1/collections/{collection_id}/documents/{document_id}", headers=headers
    )
    assert added.status_code == 204, added.text


async def join(
    client: httpx.AsyncClient, owner: dict[str, str], member: dict[str, str], collection_id: str
) -> None:
    email = (await client.get("/api/v1/users/me", headers=member)).json()["email"]
    invited = await client.post(
        f"/api/v1/collections/{collection_id}/members",
        headers=owner,
        json={"email": email, "role": "viewer"},
    )
    assert invited.status_code == 201, invited.text
    accepted = await client.post(
        f"/api/v1/collections/{collection_id}/invitation/accept", headers=member
    )
    assert accepted.status_code == 200, accepted.text


async def test_each_passage_reaches_the_model_after_a_line_naming_its_source(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    """A PDF dated by its metadata, in a collection: its passage's header names the file, the
    page, the date, the upload day and the collection; the answer cites `[1]` alone."""
    headers = await auth_headers(client)
    pdf = dated_pdf([filler("lighthouses", 20), FERRY], "D:20230401093000+02'00'")
    document = await upload_and_process(client, components, headers, "Harbour guide.pdf", pdf)
    assert document["status"] == "completed" and document["document_date"] == "2023-04-01"
    port_docs = await collection(client, headers, "Port docs")
    await add_to(client, headers, port_docs, document["id"])
    uploaded = document["created_at"][:10]

    fresh_llm.script("The ferry leaves at nine [1].")
    answer = (await ask(client, headers, QUESTION)).json()["assistant_message"]
    assert answer["content"] == "The ferry leaves at nine [1]."
    assert answer["meta"]["grounded"] is True and answer["sources"][0]["page"] == 2

    system = system_prompt(fresh_llm)
    assert system.startswith(prompts.GROUNDED_SYSTEM) and prompts.PASSAGE_HEADERS in system
    expected = (
        f'[1] "Harbour guide.pdf", page 2 · dated 2023-04-01 · uploaded {uploaded} · '
        f"collection Port docs\n{FERRY}"
    )
    assert f"Passages:\n{expected}" in system


async def test_headers_give_places_without_pages_and_leave_out_what_is_unknown(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    """A Markdown section is placed by its heading path; an HTML page is dated by its meta
    tags; a file with no date of its own and no collection says neither."""
    headers = await auth_headers(client)
    guide = f"# Harbour\n\nAbout the port.\n\n## Ferries\n\n{FERRY}\n"
    markdown = await upload_and_process(client, components, headers, "guide.md", guide.encode())
    page = (
        '<html><head><meta property="article:published_time" content="2024-02-29T10:00:00Z">'
        f"</head><body><h1>Bridges</h1><p>{BRIDGE}</p></body></html>"
    )
    html = await upload_and_process(client, components, headers, "bridges.html", page.encode())
    assert markdown["document_date"] is None and html["document_date"] == "2024-02-29"

    fresh_llm.script("At nine [1].", "In 1932 [1].")
    await ask(client, headers, QUESTION)
    system = system_prompt(fresh_llm)
    uploaded = markdown["created_at"][:10]
    assert f'[1] "guide.md", Harbour > Ferries · uploaded {uploaded}\n' in system
    assert "dated" not in system and "collection" not in system.split("Passages:")[1]

    await ask(client, headers, "When was the Zephyr bridge completed?")
    system = system_prompt(fresh_llm)
    assert f'[1] "bridges.html", Bridges · dated 2024-02-29 · uploaded {uploaded}\n' in system


async def test_a_reader_sees_only_the_collections_they_belong_to(
    client: httpx.AsyncClient,
    components: Components,
    session: AsyncSession,
    fresh_llm: ScriptedLLM,
) -> None:
    """Olga's guide is in "Port docs" (Vera is a member) and in "Olga's drafts" (she is not):
    Vera's prompt names the one she belongs to, never the other; a document an administrator
    shares with everyone is in "Everyone"."""
    olga, vera = await auth_headers(client), await auth_headers(client)
    guide = await upload_and_process(client, components, olga, "guide.md", FERRY.encode())
    port_docs = await collection(client, olga, "Port docs")
    drafts = await collection(client, olga, "Olga's drafts")
    for collection_id in (port_docs, drafts):
        await add_to(client, olga, collection_id, guide["id"])
    await join(client, olga, vera, port_docs)
    admin = await admin_headers(client, session)
    await upload_and_process(
        client, components, admin, "bridges.md", BRIDGE.encode(), url="/api/v1/admin/documents"
    )

    fresh_llm.script("At nine [1].", "At nine [1].", "In 1932 [1].")
    await ask(client, olga, QUESTION)
    assert "collections Olga's drafts, Port docs\n" in system_prompt(fresh_llm)
    await ask(client, vera, QUESTION)
    system = system_prompt(fresh_llm)
    assert "· collection Port docs\n" in system and "drafts" not in system
    await ask(client, vera, "When was the Zephyr bridge completed?")
    assert '"bridges.md" · uploaded ' in system_prompt(fresh_llm)
    assert "· collection Everyone\n" in system_prompt(fresh_llm)


async def test_tool_results_carry_the_same_headers(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    pdf = dated_pdf([FERRY], "D:20230401")
    document = await upload_and_process(client, components, headers, "guide.pdf", pdf)
    call = Reply(
        tool_calls=[
            {
                "id": "call_1",
                "type": "function",
                "function": {
                    "name": "semantic_search",
                    "arguments": json.dumps({"query": "Kellport ferry Duskmoor"}),
                },
            }
        ]
    )
    fresh_llm.script(call, "At nine [1].")
    answer = (await ask(client, headers, QUESTION, options={"retrieval": "tool"})).json()
    assert answer["assistant_message"]["content"] == "At nine [1]."
    first, second = fresh_llm.requests[-2], fresh_llm.requests[-1]
    assert prompts.PASSAGE_HEADERS in first["messages"][0]["content"]
    [result] = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    uploaded = document["created_at"][:10]
    assert result == f'[1] "guide.pdf", page 1 · dated 2023-04-01 · uploaded {uploaded}\n{FERRY}'


async def test_passages_of_a_document_still_processing_carry_their_header(
    client: httpx.AsyncClient, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    pdf = dated_pdf(["Cover page of the guide.", FERRY], "D:20230401")
    document = (await upload(client, headers, "guide.pdf", pdf)).json()
    assert document["status"] == "queued" and document["document_date"] is None
    fresh_llm.script("At nine [2].")
    answer = (await ask(client, headers, QUESTION, document_ids=[document["id"]])).json()
    assert answer["assistant_message"]["meta"]["inline_documents"] == 1
    uploaded = document["created_at"][:10]
    # Not read yet: no date of its own so far, the upload's only.
    assert f'[2] "guide.pdf", page 2 · uploaded {uploaded}\n{FERRY}' in system_prompt(fresh_llm)


async def test_the_openai_compatible_endpoint_shows_the_same_headers(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM, app: Any
) -> None:
    headers = await auth_headers(client)
    pdf = dated_pdf([FERRY], "D:20230401")
    document = await upload_and_process(client, components, headers, "guide.pdf", pdf)
    sdk = sdk_for(app, headers["Authorization"].removeprefix("Bearer "))
    fresh_llm.script("At nine [1].")
    try:
        completion = await sdk.chat.completions.create(
            model="scripted-model",
            messages=[{"role": "user", "content": QUESTION}],
            extra_body={"index_name": "all"},
        )
    finally:
        await sdk.close()
    assert isinstance(completion, openai.types.chat.ChatCompletion)
    uploaded = document["created_at"][:10]
    header = f'[1] "guide.pdf", page 1 · dated 2023-04-01 · uploaded {uploaded}\n{FERRY}'
    assert header in system_prompt(fresh_llm)


async def test_a_hostile_pdf_date_is_ignored_and_the_upload_still_works(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    pdf = dated_pdf([FERRY], "D:2023-13-45T99\x00\xff(((")
    document = await upload_and_process(client, components, headers, "odd.pdf", pdf)
    assert document["status"] == "completed" and document["document_date"] is None
    fresh_llm.script("At nine [1].")
    answer = (await ask(client, headers, QUESTION)).json()["assistant_message"]
    assert answer["meta"]["grounded"] is True
    assert '[1] "odd.pdf", page 1 · uploaded ' in system_prompt(fresh_llm)


async def test_one_lookup_per_answer(
    client: httpx.AsyncClient,
    components: Components,
    fresh_llm: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """However many passages and documents, their identities are read in one query."""
    headers = await auth_headers(client)
    for n in range(3):
        text = f"Ferry note {n}. {FERRY}"
        await upload_and_process(client, components, headers, f"note-{n}.md", text.encode())
    asked: list[list[Any]] = []
    lookup = components.engine.identities
    original = lookup.identities

    async def counted(documents: Any, reader: Any) -> dict[Any, DocumentIdentity]:
        asked.append(list(documents))
        started = time.perf_counter()
        found = dict(await original(documents, reader))
        assert time.perf_counter() - started < 5
        return found

    monkeypatch.setattr(lookup, "identities", counted)
    fresh_llm.script("At nine [1][2][3].")
    await ask(client, headers, QUESTION)
    assert len(asked) == 1 and len(asked[0]) == 3
