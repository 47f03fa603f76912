"""What a message costs the database: the statements of a follow-up question in a chat over
the user's documents, counted, so that a change that adds round trips to every message (a
ping per checkout, a query for an empty list) shows up here and not only in a benchmark."""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx
import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncConnection

from docchat.main.components import Components
from tests.support.chat import ask
from tests.support.documents import upload_and_process
from tests.support.llm_server import ScriptedLLM
from tests.support.users import auth_headers

pytestmark = pytest.mark.usefixtures("fresh_llm")

NOTES = "The Zephyr suspension bridge over the Elbe was completed in 1932 by Marta Lindqvist."
# Each statement a follow-up message needs, by the table (or function) it starts from.
EXPECTED = Counter(
    {
        "SELECT users": 1,  # the caller (access token)
        "SELECT chats": 1,  # the chat, locked for numbering, with its linked documents
        "INSERT messages": 1,  # the question and the answer's row (streaming), one statement
        "UPDATE messages": 1,  # the finished answer over its row, the chat's activity with it
        "UPDATE chats": 1,  # the chat's last activity, with the question
        "SELECT memberships": 1,  # the collections the caller reads (directly or by group)
        "SELECT scope": 1,  # a small scope's documents and totals (a wide one: its owners)
        "INSERT events": 2,  # query_submitted, response_generated
        "SELECT messages": 1,  # the history
        # BM25: the question's words and the ranking (the scope's totals came with it)
        "SELECT tsvector_to_array": 1,
        "SELECT bm25": 1,
        # The passages' headers: their documents' dates and the collections the caller sees
        # them in, one statement for all of them
        "SELECT identities": 1,
        # (A question that speaks of documents, "what does the report say", also looks up
        # the documents it names: one statement. These questions do not.)
    }
)


def _kind(statement: str) -> str:
    words = statement.split()
    verb = words[0].upper()
    if verb == "WITH":
        return "UPDATE messages" if "UPDATE messages" in statement else "SELECT bm25"
    if verb == "SELECT":
        text = " ".join(words)
        function = words[1].split("(")[0]
        if function in ("array_agg", "tsvector_to_array"):
            return f"SELECT {function}"
        if text.startswith("SELECT id, owner_id, version, chunk_count, token_count FROM ("):
            return "SELECT scope"
        if text.startswith("SELECT documents.id, documents.document_date"):
            return "SELECT identities"  # its collections are a subquery of it
        if text.startswith("SELECT chats."):
            return "SELECT chats"  # its links are subqueries of it
        if " FROM collection_members" in text:
            return "SELECT memberships"
        table = text.split(" FROM ", 1)[1].split()[0] if " FROM " in text else "?"
        return f"SELECT {table}"
    table = words[2] if verb == "INSERT" else words[1]
    return f"{verb} {table}"


async def test_a_follow_up_message_runs_only_the_statements_it_needs(
    client: httpx.AsyncClient,
    components: Components,
    connection: AsyncConnection,
    fresh_llm: ScriptedLLM,
) -> None:
    headers = await auth_headers(client)
    await upload_and_process(client, components, headers, "notes.md", NOTES.encode())
    fresh_llm.script("It was completed in 1932 [1].")
    first = await ask(client, headers, "When was the Zephyr bridge completed?")
    chat_id = first.json()["chat_id"]
    statements: list[str] = []

    def record(*args: Any) -> None:
        statement = args[2].strip()
        if statement.split()[0].upper() in ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH"):
            statements.append(statement)

    event.listen(connection.sync_connection, "before_cursor_execute", record)
    try:
        fresh_llm.script("Marta Lindqvist built it [1].")
        second = await ask(client, headers, "Who built the Zephyr bridge?", chat_id=chat_id)
    finally:
        event.remove(connection.sync_connection, "before_cursor_execute", record)
    assert second.status_code == 200 and second.json()["assistant_message"]["sources"]
    assert Counter(_kind(statement) for statement in statements) == EXPECTED, statements
    # The question and its answer's row go in one INSERT: the question is still numbered first.
    listed = await client.get(f"/api/v1/chats/{chat_id}/messages", headers=headers)
    assert [m["role"] for m in listed.json()["items"]] == ["user", "assistant"] * 2
