"""A follow-up that points back ("When was it built?") is searched with the question before it,
without a model call (issue 41): over all documents, it finds the passage the conversation is
about, not another that only shares its words."""

from __future__ import annotations

import httpx

from docchat.main.components import Components
from tests.support.chat import ask
from tests.support.documents import upload_and_process
from tests.support.llm_server import ScriptedLLM
from tests.support.users import auth_headers

LIGHTHOUSE = (
    "The Northwind lighthouse stands on the cliffs of Duskmoor. Its light reaches 22 nautical "
    "miles. It was built in 1874 by the harbour trust."
)
BRIDGE = (
    "The harbour bridge crosses the river at its mouth. It was built in 1932 and opened to "
    "traffic the same year. When was it built? In 1932."
)


async def test_a_follow_up_is_searched_with_the_question_before_it(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    lighthouse = await upload_and_process(
        client, components, headers, "lighthouse.txt", LIGHTHOUSE.encode()
    )
    await upload_and_process(client, components, headers, "bridge.txt", BRIDGE.encode())

    fresh_llm.script("It reaches 22 nautical miles [1].")
    first = (await ask(client, headers, "How far does the Northwind lighthouse shine?")).json()
    assert first["assistant_message"]["sources"][0]["document_id"] == lighthouse["id"]

    fresh_llm.script("It was built in 1874 [1].")
    calls = len(fresh_llm.requests)
    follow_up = await ask(client, headers, "When was it built?", chat_id=first["chat_id"])
    sources = follow_up.json()["assistant_message"]["sources"]
    # Searched as asked, the bridge (its words: "When was it built?") came first.
    assert sources[0]["document_id"] == lighthouse["id"], [s["document_name"] for s in sources]
    assert len(fresh_llm.requests) == calls + 1  # the answer only: no rewriting call


async def test_how_long_does_it_take_after_a_question_is_about_that_subject(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    """Seen by a newcomer: searched alone, "How long does it take?" matched nothing, and the
    answer was general (the demo model made a duration up)."""
    headers = await auth_headers(client)
    ferry = (
        "The night ferry to Tallinn leaves at 22:30 from pier 4.\n"
        "Tickets cost 12 euros and can be bought on board.\nThe crossing takes two hours.\n"
    )
    await upload_and_process(client, components, headers, "ferry.txt", ferry.encode())
    fresh_llm.script("At 22:30 [1].")
    first = (await ask(client, headers, "When does the night ferry leave?")).json()
    fresh_llm.script("Two hours [1].")
    follow_up = await ask(client, headers, "How long does it take?", chat_id=first["chat_id"])
    answer = follow_up.json()["assistant_message"]
    assert answer["meta"]["grounded"] is True, answer["meta"]
    assert [source["document_name"] for source in answer["sources"]] == ["ferry.txt"]
