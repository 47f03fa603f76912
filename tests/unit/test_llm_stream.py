"""An answer's stream is read from the chunks' JSON as the server sent it (not the SDK's
models): the text, the model's name, the token counts and the finish reason all still come
through, and a chunk with fields missing, null or of another type is read as lacking them."""

from __future__ import annotations

from typing import Any

import pytest

from docchat.config import LLMSettings
from docchat.llm.client import LLM, StreamEnd, _Piece
from tests.support.llm_server import Reply, ScriptedLLM


def chunk(**fields: Any) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion.chunk", "created": 1, **fields}


@pytest.mark.parametrize(
    ("sent", "read"),
    [
        pytest.param(
            chunk(model="m1", choices=[{"index": 0, "delta": {"content": "Hel"}}]),
            _Piece(model="m1", texts=("Hel",)),
            id="text",
        ),
        pytest.param(
            chunk(
                model="m1",
                choices=[],
                usage={"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
            ),
            _Piece(model="m1", usage=(12, 3)),
            id="usage-only",
        ),
        pytest.param(
            chunk(choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}], usage=None),
            _Piece(finish_reason="stop"),
            id="finish",
        ),
        pytest.param(
            chunk(
                model=None,
                choices=[
                    {"index": 0, "delta": None},
                    {"index": 1, "delta": {"content": None, "role": "assistant"}},
                    "not a choice",
                ],
            ),
            _Piece(),
            id="nulls",
        ),
        pytest.param(
            chunk(model=7, choices="none", usage={"prompt_tokens": True, "completion_tokens": "3"}),
            _Piece(usage=(None, None)),
            id="other-types",
        ),
        pytest.param(
            chunk(choices=[], usage={"prompt_tokens": 12.0, "completion_tokens": 3.5}),
            _Piece(usage=(12, None)),
            id="counts-as-floats",
        ),
        pytest.param(
            chunk(
                choices=[
                    {"index": 0, "delta": {"content": "a"}},
                    {"index": 1, "delta": {"content": "b"}, "finish_reason": "length"},
                ]
            ),
            _Piece(finish_reason="length", texts=("a", "b")),
            id="two-choices",
        ),
        pytest.param(["not", "a", "chunk"], _Piece(), id="not-an-object"),
    ],
)
def test_a_chunk_is_read_from_its_json(sent: object, read: _Piece) -> None:
    assert _Piece.of(sent) == read


async def test_a_stream_gives_the_text_then_the_model_and_token_counts(
    fresh_llm: ScriptedLLM,
) -> None:
    fresh_llm.script(Reply(content="The ferry leaves at nine.", model="served-model"))
    llm = LLM(LLMSettings(base_url=fresh_llm.base_url, model="asked-model", api_key="key"))
    try:
        items = [item async for item in llm.stream([{"role": "user", "content": "When?"}])]
    finally:
        await llm.close()
    *pieces, end = items
    assert "".join(str(piece) for piece in pieces) == "The ferry leaves at nine."
    assert isinstance(end, StreamEnd)
    request = fresh_llm.requests[-1]
    assert request["stream"] is True and request["stream_options"] == {"include_usage": True}
    assert end.model == "served-model"  # the name the server's chunks give, not the one asked
    assert end.prompt_tokens is not None and end.prompt_tokens > 0
    assert end.completion_tokens is not None and end.completion_tokens > 0
