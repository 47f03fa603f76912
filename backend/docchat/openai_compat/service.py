"""OpenAI-compatible chat completions over the caller's documents (seed 000's rules).

A request goes straight to the model (pass-through) when it names no `index_name`, carries
`tools` or `functions`, has a message role other than system/user/assistant, or a user message
with non-text content. Otherwise the user messages since the last assistant message are the
search query, everything before is history, and the answer is grounded in the documents of
the named category (or `all` readable documents), with `sources` in an extra field.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.categories import repository as categories_repository
from docchat.components import Components
from docchat.config import LLMSettings
from docchat.documents import repository as documents_repository
from docchat.documents.models import Document, DocumentStatus
from docchat.events import service as events_service
from docchat.kit.errors import BadRequest, Forbidden, NotFound
from docchat.llm import prompts
from docchat.llm.catalog import resolve_model
from docchat.llm.client import StreamEnd
from docchat.openai_compat.schemas import ChatCompletionRequest
from docchat.retrieval.citations import apply_citations, has_markers, infer_citations
from docchat.retrieval.context import ContextEntry, build_context, estimate_tokens, format_context
from docchat.retrieval.search import search
from docchat.retrieval.vectorstore import DocumentRef
from docchat.users.models import User

RAG_ROLES = {"system", "user", "assistant"}
# What a pass-through request may carry: the OpenAI chat-completions fields docchat forwards.
PASSTHROUGH_FIELDS = frozenset(
    {
        "model",
        "messages",
        "stream",
        "stream_options",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "n",
        "stop",
        "presence_penalty",
        "frequency_penalty",
        "seed",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "functions",
        "function_call",
        "response_format",
        "user",
        "logit_bias",
        "logprobs",
        "top_logprobs",
    }
)
# Several choices multiply the cost of a call; one is what chat clients use.
MAX_CHOICES = 1
ALL_INDEX = "all"
NO_USER_PROMPT = "There must be a user prompt since the latest assistant message."


def _text_only(content: Any) -> bool:
    if isinstance(content, str) or content is None:
        return True
    return isinstance(content, list) and all(
        isinstance(part, dict) and part.get("type") == "text" for part in content
    )


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content)
    return "" if content is None else str(content)


def is_passthrough(request: ChatCompletionRequest) -> bool:
    if not request.index_name or request.tools or request.functions:
        return True
    for message in request.messages:
        if message.get("role") not in RAG_ROLES:
            return True
        if message.get("role") == "user" and not _text_only(message.get("content")):
            return True
    return False


def passthrough_payload(request: ChatCompletionRequest, settings: LLMSettings) -> dict[str, Any]:
    """The body forwarded to the model: known fields only, an allowed model, at most one
    choice, an answer no longer than LLM_MAX_TOKENS, a prompt that fits the context window."""
    if not settings.passthrough:
        raise Forbidden(
            "Requests straight to the model are turned off on this server; send index_name "
            "to answer from your documents"
        )
    body = request.model_dump(exclude_none=True, exclude={"index_name"})
    unknown = sorted(set(body) - PASSTHROUGH_FIELDS)
    if unknown:
        raise BadRequest(f"Unsupported field(s) for this endpoint: {', '.join(unknown)}")
    body["model"] = resolve_model(settings, request.model)
    body["n"] = min(int(body.get("n", 1)), MAX_CHOICES)
    asked = body.pop("max_completion_tokens", None) or body.get("max_tokens")
    body["max_tokens"] = min(int(asked or settings.max_tokens), settings.max_tokens)
    prompt_tokens = estimate_tokens(json.dumps(body["messages"], default=str))
    if prompt_tokens + body["max_tokens"] > settings.context_window:
        raise BadRequest(
            f"The prompt is about {prompt_tokens} tokens; with an answer of up to "
            f"{body['max_tokens']} tokens it exceeds the model's context window of "
            f"{settings.context_window}"
        )
    return body


def split_messages(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """(the user messages since the last assistant message joined by a blank line, the rest)."""
    prompt_parts: list[str] = []
    history: list[dict[str, Any]] = []
    assistant_seen = False
    for message in reversed(messages):
        if message.get("role") == "user" and not assistant_seen:
            prompt_parts.insert(0, _text(message.get("content")))
        else:
            assistant_seen = assistant_seen or message.get("role") == "assistant"
            history.insert(0, {"role": message["role"], "content": _text(message.get("content"))})
    return "\n\n".join(prompt_parts), history


async def index_documents(session: AsyncSession, user: User, index_name: str) -> list[DocumentRef]:
    statement = documents_repository.readable_by(user).where(
        Document.status == DocumentStatus.completed
    )
    if index_name != ALL_INDEX:
        category = await categories_repository.get_owned_by_name(session, user.id, index_name)
        if category is None:
            raise NotFound(f"Index {index_name!r} not found: use 'all' or one of your categories")
        statement = statement.where(Document.category_id == category.id)
    rows = (
        await session.execute(statement.with_only_columns(Document.id, Document.owner_id))
    ).all()
    return [DocumentRef.of(row) for row in rows]


@dataclass(frozen=True)
class Prepared:
    messages: list[dict[str, Any]]
    entries: list[ContextEntry]
    query: str
    model: str
    max_tokens: int
    temperature: float | None


async def prepare(
    session: AsyncSession, components: Components, user: User, request: ChatCompletionRequest
) -> Prepared:
    assert request.index_name is not None
    model = resolve_model(components.settings.llm, request.model)
    query, history = split_messages(request.messages)
    if not query.strip():
        raise BadRequest(NO_USER_PROMPT)
    window = components.settings.llm.context_window
    prompt_tokens = sum(estimate_tokens(_text(m.get("content"))) for m in request.messages)
    if prompt_tokens > window:
        raise BadRequest(
            f"The prompt is about {prompt_tokens} tokens, more than the model's context "
            f"window of {window}"
        )
    wanted = request.max_tokens or components.settings.llm.max_tokens
    budget = max(
        0, min(components.settings.rag.max_context_tokens, window - prompt_tokens - wanted)
    )
    documents = await index_documents(session, user, request.index_name)
    result = await search(
        components.embedder,
        components.vector_store,
        query,
        documents,
        top_k=components.settings.rag.top_k,
        similarity_floor=components.settings.rag.similarity_floor,
        hybrid=components.hybrid,
    )
    entries = build_context(result.chunks, budget)
    if entries:
        grounded = prompts.grounded_messages([], format_context(entries), query, strict=False)
        messages = [grounded[0], *history, {"role": "user", "content": query}]
    else:
        messages = [*history, {"role": "user", "content": query}]
    used = sum(estimate_tokens(_text(m.get("content"))) for m in messages)
    # Lowered to what the window leaves, never above what was asked.
    max_tokens = max(1, min(wanted, window - used))
    await events_service.record(
        session,
        events_service.QUERY_SUBMITTED,
        user.id,
        {
            "query": query[:1000],
            "model": request.model,
            "via": "openai",
            "index": request.index_name,
        },
    )
    return Prepared(
        messages,
        entries,
        query,
        model,
        max_tokens,
        request.temperature,
    )


def _cited(content: str, prepared: Prepared) -> tuple[str, list[dict[str, Any]]]:
    if not prepared.entries:
        return content, []
    candidates = [entry.source for entry in prepared.entries]
    if not has_markers(content, len(candidates)):
        content = infer_citations(content, [e.text for e in prepared.entries], prepared.query)
    cited = apply_citations(content, candidates)
    return cited.content, [source.model_dump(mode="json") for source in cited.sources]


async def complete(components: Components, prepared: Prepared) -> dict[str, Any]:
    completion = await components.llm.complete(
        prepared.messages,
        model=prepared.model,
        max_tokens=prepared.max_tokens,
        temperature=prepared.temperature,
    )
    content, sources = _cited(completion.content, prepared)
    usage = None
    if completion.prompt_tokens is not None and completion.completion_tokens is not None:
        usage = {
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "total_tokens": completion.prompt_tokens + completion.completion_tokens,
        }
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": completion.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
        "sources": sources,
    }


async def stream(components: Components, prepared: Prepared) -> AsyncIterator[dict[str, Any]]:
    """OpenAI chunks. The text is the model's own, so the final chunk's `sources` lists every
    passage it was given, numbered as in the prompt: `[n]` in the text is `sources[n-1]`."""
    ident, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        return {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": created,
            "model": prepared.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }

    yield chunk({"role": "assistant", "content": ""})
    async for item in components.llm.stream(
        prepared.messages,
        model=prepared.model,
        max_tokens=prepared.max_tokens,
        temperature=prepared.temperature,
    ):
        if not isinstance(item, StreamEnd):
            yield chunk({"content": item})
    sources = [entry.source.model_dump(mode="json") for entry in prepared.entries]
    yield chunk({}, "stop", sources=sources)


# -- pass-through, metered ----------------------------------------------------------------------


def _usage_payload(model: str, usage: dict[str, Any] | None, started: float) -> dict[str, Any]:
    usage = usage or {}
    return {
        "via": "openai",
        "mode": "passthrough",
        "model": model,
        "latency_ms": int((time.perf_counter() - started) * 1000),
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
    }


async def _record_passthrough(
    session: AsyncSession, components: Components, user_id: uuid.UUID, answer: dict[str, Any]
) -> None:
    question = {"via": "openai", "mode": "passthrough", "model": answer["model"]}
    for event_type, payload in (
        (events_service.QUERY_SUBMITTED, question),
        (events_service.RESPONSE_GENERATED, answer),
    ):
        await events_service.record(session, event_type, user_id, payload)
        events_service.publish(components.publisher, event_type, user_id, payload)


async def passthrough(
    session: AsyncSession, components: Components, user: User, payload: dict[str, Any]
) -> dict[str, Any]:
    """Forward to the model and record the call's usage like any answer's."""
    started = time.perf_counter()
    result = await components.llm.passthrough(payload)
    answer = _usage_payload(payload["model"], result.get("usage"), started)
    await _record_passthrough(session, components, user.id, answer)
    return result


async def passthrough_stream(
    components: Components, user_id: uuid.UUID, payload: dict[str, Any]
) -> AsyncIterator[dict[str, Any]]:
    """Forward a stream; its usage is asked for (and kept from the client unless it asked too),
    then recorded in a session of its own once the stream has ended."""
    started = time.perf_counter()
    client_wants_usage = bool((payload.get("stream_options") or {}).get("include_usage"))
    usage: dict[str, Any] | None = None
    async for chunk in components.llm.passthrough_stream(
        {**payload, "stream_options": {"include_usage": True}}
    ):
        usage = chunk.get("usage") or usage
        if chunk.get("choices") or client_wants_usage:
            yield chunk
    answer = _usage_payload(payload["model"], usage, started)
    async with components.sessionmaker() as session:
        await _record_passthrough(session, components, user_id, answer)
        await session.commit()
