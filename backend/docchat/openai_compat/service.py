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
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.answers.engine import AnswerEngine
from docchat.answers.meta import ResearchStep
from docchat.answers.values import AnswerOptions, CitedAnswer, Generated, Plan, Question
from docchat.categories import repository as categories_repository
from docchat.config import AnswerSettings, LLMSettings, SearchSettings
from docchat.documents.scopes import search_scope
from docchat.events import service as events_service
from docchat.events.publisher import EventPublisher
from docchat.kit.errors import BadRequest, Forbidden, NotFound
from docchat.kit.tokens import estimate_tokens
from docchat.llm.catalog import resolve_model
from docchat.llm.client import LLM, json_objects, token_count
from docchat.llm.usage import Usage
from docchat.openai_compat.schemas import ChatCompletionRequest
from docchat.quotas import service as quotas
from docchat.replicas.routing import ReadRouter
from docchat.retrieval.filters import DocumentFilters
from docchat.retrieval.index import DocumentScope
from docchat.sharing import collections as sharing
from docchat.users.models import User

RAG_ROLES = {"system", "user", "assistant"}
# docchat's own fields of a chat-completions request (answers from documents only).
DOCCHAT_FIELDS = frozenset({"index_name", "research", "filters"})
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


def _answer_text(result: dict[str, Any]) -> str:
    """A completion's text, tool calls included (they cost tokens too)."""
    parts: list[str] = []
    for choice in json_objects(result.get("choices")):
        message = choice.get("message")
        message = message if isinstance(message, dict) else {}
        parts.append(_text(message.get("content")))
        parts.append(json.dumps(message.get("tool_calls") or "", default=str))
    return "".join(parts)


def _delta_text(chunk: dict[str, Any]) -> str:
    parts: list[str] = []
    for choice in json_objects(chunk.get("choices")):
        delta = choice.get("delta")
        delta = delta if isinstance(delta, dict) else {}
        parts.append(_text(delta.get("content")))
        if delta.get("tool_calls"):
            parts.append(json.dumps(delta["tool_calls"], default=str))
    return "".join(parts)


def passthrough_tokens(payload: dict[str, Any]) -> int:
    """What a pass-through call may cost at most, about: its prompt and a full answer."""
    return estimate_tokens(json.dumps(payload["messages"], default=str)) + int(
        payload["max_tokens"]
    )


def is_passthrough(request: ChatCompletionRequest) -> bool:
    if not request.index_name or request.tools or request.functions:
        return True
    for message in request.messages:
        if message.get("role") not in RAG_ROLES:
            return True
        if message.get("role") == "user" and not _text_only(message.get("content")):
            return True
    return False


def refuse_unknown_fields(body: dict[str, Any]) -> None:
    """Only OpenAI's chat-completions fields (and docchat's `index_name`, `research` and
    `filters`): a field
    docchat does not know, such as `document_ids`, is refused rather than ignored, with or
    without `index_name`."""
    unknown = sorted(set(body) - PASSTHROUGH_FIELDS - DOCCHAT_FIELDS)
    if unknown:
        raise BadRequest(f"Unsupported field(s) for this endpoint: {', '.join(unknown)}")


def passthrough_payload(request: ChatCompletionRequest, settings: LLMSettings) -> dict[str, Any]:
    """The body forwarded to the model: known fields only, an allowed model, at most one
    choice, an answer no longer than LLM_MAX_TOKENS, a prompt that fits the context window."""
    if not settings.passthrough:
        raise Forbidden(
            "Requests straight to the model are turned off on this server; send index_name "
            "to answer from your documents"
        )
    if request.research:
        raise BadRequest("research answers from your documents: send index_name with it")
    if request.filters is not None:
        raise BadRequest("filters narrow your documents: send index_name with them")
    body = request.model_dump(exclude_none=True, exclude=set(DOCCHAT_FIELDS))
    refuse_unknown_fields(body)
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


async def index_documents(session: AsyncSession, user: User, index_name: str) -> DocumentScope:
    """The completed documents the index name stands for: all the caller may read, those of
    one of the caller's categories, or those of a collection the caller may read (by name or
    id; a category wins a tie, then the caller's own collection; a name several collections
    share otherwise is a 409 listing them). Any other name is a 404."""
    if index_name == ALL_INDEX:
        return await search_scope(session, user)
    category = await categories_repository.get_owned_by_name(session, user.id, index_name)
    if category is not None:
        return await search_scope(session, user, category_id=category.id)
    collection = await sharing.readable_by_name(session, user, index_name)
    if collection is None:
        raise NotFound(
            f"Index {index_name!r} not found: use 'all', one of your categories or a collection"
        )
    return await search_scope(session, user, collections=[collection.id])


@dataclass(frozen=True)
class Asked:
    """A question outside a chat, recorded as asked, not yet searched."""

    question: Question
    index_name: str
    started: float
    via: str


@dataclass(frozen=True)
class Prepared:
    """A request over the caller's documents, planned: ready for the model."""

    question: Question
    plan: Plan
    index_name: str
    started: float
    via: str = "openai"


def _completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


@dataclass(frozen=True)
class Completions:
    """The OpenAI-compatible endpoint: answers over the caller's documents through the same
    answer engine as the chat routes, and metered pass-through to the model."""

    llm_settings: LLMSettings
    search: SearchSettings
    answers: AnswerSettings
    sessionmaker: async_sessionmaker[AsyncSession]
    engine: AnswerEngine
    llm: LLM
    publisher: EventPublisher
    # Where a question's reads run (a read replica, or the primary); None: the primary.
    reads: ReadRouter | None = None

    def answer_tokens(self, question: str) -> int:
        """The quota an answer over documents holds while it is written."""
        return quotas.answer_tokens(question, self.search, self.llm_settings)

    # -- over documents ---------------------------------------------------------------------

    async def prepare(
        self, session: AsyncSession, user: User, request: ChatCompletionRequest
    ) -> Prepared:
        assert request.index_name is not None
        started = time.perf_counter()
        refuse_unknown_fields(request.model_dump(exclude_none=True))
        model = resolve_model(self.llm_settings, request.model)
        query, history = split_messages(request.messages)
        if not query.strip():
            raise BadRequest(NO_USER_PROMPT)
        window = self.llm_settings.context_window
        prompt_tokens = sum(estimate_tokens(_text(m.get("content"))) for m in request.messages)
        if prompt_tokens > window:
            raise BadRequest(
                f"The prompt is about {prompt_tokens} tokens, more than the model's context "
                f"window of {window}"
            )
        documents = await index_documents(session, user, request.index_name)
        asked = await self.ask(
            session,
            user,
            query=query,
            history=history,
            documents=documents,
            index_name=request.index_name,
            model=model,
            temperature=request.temperature,
            max_tokens=request.max_tokens,
            started=started,
            research=bool(request.research),
            filters=request.filters.filters() if request.filters is not None else None,
        )
        return await self.plan(asked)

    async def ask(
        self,
        session: AsyncSession,
        user: User,
        *,
        query: str,
        documents: DocumentScope,
        index_name: str,
        history: list[dict[str, Any]] | None = None,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        chosen: bool = False,
        research: bool = False,
        filters: DocumentFilters | None = None,
        via: str = "openai",
        started: float | None = None,
    ) -> Asked:
        """One question over `documents`, outside any chat, recorded in `session` as asked:
        the entry of every client that is not a chat (`via`: openai, mcp). `chosen`: the
        caller picked the documents, so a passage need not reach the match floor (as for a
        chat's chosen documents). `plan` searches, with no session held."""
        started = time.perf_counter() if started is None else started
        if self.reads is not None:
            await self.reads.begin(session)
        model = resolve_model(self.llm_settings, model)
        question = Question(
            text=query,
            history=history or [],
            documents=documents,
            options=AnswerOptions(
                rag_enabled=True,
                top_k=self.search.top_k,
                model=model,
                whole_documents=False,
                temperature=temperature,
                max_tokens=max_tokens,
                answer_mode=self.answers.answer_mode,
                research=research,
                filters=filters,
            ),
            scope="message" if chosen else None,
            general_system_prompt=False,
            label=f"{via}:{index_name}",
            reader=user.id,
        )
        payload = {"query": query[:1000], "model": model, "via": via, "index": index_name}
        await self._record(session, events_service.QUERY_SUBMITTED, user.id, payload)
        return Asked(question, index_name, started, via)

    async def plan(self, asked: Asked) -> Prepared:
        plan = await self.engine.plan(asked.question)
        return Prepared(asked.question, plan, asked.index_name, asked.started, asked.via)

    async def _record(
        self, session: AsyncSession, event_type: str, user_id: uuid.UUID, payload: dict[str, Any]
    ) -> None:
        await events_service.record(session, event_type, user_id, payload)
        events_service.publish(self.publisher, event_type, user_id, payload)

    async def _answered(
        self, user_id: uuid.UUID, prepared: Prepared, generated: Generated, citations: int
    ) -> None:
        """`response_generated`, as the chat routes record it (in a session of its own)."""
        meta = prepared.plan.meta
        payload = {
            "via": prepared.via,
            "index": prepared.index_name,
            "model": generated.model,
            "latency_ms": int((time.perf_counter() - prepared.started) * 1000),
            "citation_count": citations,
            "retrieval_count": meta.retrieval_count or 0,
            "grounded": citations > 0,
            "prompt_tokens": generated.prompt_tokens,
            "completion_tokens": generated.completion_tokens,
            **({"tokens_estimated": True} if generated.tokens_estimated else {}),
        }
        async with self.sessionmaker() as session:
            await self._record(session, events_service.RESPONSE_GENERATED, user_id, payload)
            await session.commit()

    async def _generate(
        self, prepared: Prepared, *, streaming: bool
    ) -> AsyncIterator[str | Generated | ResearchStep]:
        async for item in self.engine.produce(
            prepared.question, prepared.plan, streaming=streaming
        ):
            if isinstance(item, str | Generated | ResearchStep):
                yield item

    async def answer(self, user_id: uuid.UUID, prepared: Prepared) -> tuple[CitedAnswer, Generated]:
        """The whole answer, cited, and recorded as generated."""
        generated: Generated | None = None
        async for item in self._generate(prepared, streaming=False):
            if isinstance(item, Generated):
                generated = item
        assert generated is not None
        cited = self.engine.cite(prepared.question, prepared.plan, generated.content)
        await self._answered(user_id, prepared, generated, len(cited.sources or []))
        return cited, generated

    async def complete(self, user_id: uuid.UUID, prepared: Prepared) -> dict[str, Any]:
        cited, generated = await self.answer(user_id, prepared)
        sources = [source.model_dump(mode="json") for source in cited.sources or []]
        usage = None
        if generated.prompt_tokens is not None and generated.completion_tokens is not None:
            usage = {
                "prompt_tokens": generated.prompt_tokens,
                "completion_tokens": generated.completion_tokens,
                "total_tokens": generated.prompt_tokens + generated.completion_tokens,
            }
        steps = cited.meta.research_steps
        return {
            "id": _completion_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": generated.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": cited.content},
                    "finish_reason": "stop",
                }
            ],
            "usage": usage,
            "sources": sources,
            **({"research_steps": [s.model_dump(mode="json") for s in steps]} if steps else {}),
        }

    async def stream(
        self, user_id: uuid.UUID, prepared: Prepared
    ) -> AsyncGenerator[dict[str, Any], None]:
        """OpenAI chunks. The text is the model's own, so the final chunk's `sources` lists every
        passage it was given, numbered as in the prompt: `[n]` in the text is `sources[n-1]`."""
        ident, created = _completion_id(), int(time.time())
        model = prepared.question.options.model

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
            return {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                **extra,
            }

        yield chunk({"role": "assistant", "content": ""})
        generated: Generated | None = None
        async for item in self._generate(prepared, streaming=True):
            if isinstance(item, Generated):
                generated = item
            elif isinstance(item, ResearchStep):
                yield chunk({}, research_step=item.model_dump(mode="json", exclude_none=True))
            elif item:
                yield chunk({"content": item})
        assert generated is not None
        sources = [source.model_dump(mode="json") for source in prepared.plan.candidates]
        cited = self.engine.cite(prepared.question, prepared.plan, generated.content)
        await self._answered(user_id, prepared, generated, len(cited.sources or []))
        yield chunk({}, "stop", sources=sources)

    # -- pass-through, metered ---------------------------------------------------------------

    def _usage_payload(
        self, payload: dict[str, Any], usage: object, text: str, started: float
    ) -> dict[str, Any]:
        """The `response_generated` payload of a pass-through call: the usage the model's
        server reported, or (where it reported none) one estimated from the prompt and the
        answer's text, marked as such."""
        counts = Usage()
        usage = usage if isinstance(usage, dict) else {}
        counts.add_call(
            payload.get("messages", []),
            text,
            token_count(usage.get("prompt_tokens")),
            token_count(usage.get("completion_tokens")),
        )
        return {
            "via": "openai",
            "mode": "passthrough",
            "model": payload["model"],
            "latency_ms": int((time.perf_counter() - started) * 1000),
            "prompt_tokens": counts.prompt_tokens,
            "completion_tokens": counts.completion_tokens,
            **({"tokens_estimated": True} if counts.estimated else {}),
        }

    async def _record_passthrough(
        self, session: AsyncSession, user_id: uuid.UUID, answer: dict[str, Any]
    ) -> None:
        question = {"via": "openai", "mode": "passthrough", "model": answer["model"]}
        await self._record(session, events_service.QUERY_SUBMITTED, user_id, question)
        await self._record(session, events_service.RESPONSE_GENERATED, user_id, answer)

    async def passthrough(
        self, session: AsyncSession, user: User, payload: dict[str, Any]
    ) -> dict[str, Any]:
        """Forward to the model and record the call's usage like any answer's."""
        started = time.perf_counter()
        result = await self.llm.passthrough(payload)
        answer = self._usage_payload(payload, result.get("usage"), _answer_text(result), started)
        await self._record_passthrough(session, user.id, answer)
        return result

    async def passthrough_stream(
        self, user_id: uuid.UUID, payload: dict[str, Any]
    ) -> AsyncGenerator[dict[str, Any], None]:
        """Forward a stream; its usage is asked for (and kept from the client unless it asked
        too), then recorded in a session of its own once the stream has ended."""
        started = time.perf_counter()
        client_wants_usage = bool((payload.get("stream_options") or {}).get("include_usage"))
        usage: dict[str, Any] | None = None
        text: list[str] = []
        async for chunk in self.llm.passthrough_stream(
            {**payload, "stream_options": {"include_usage": True}}
        ):
            usage = chunk.get("usage") or usage
            text.append(_delta_text(chunk))
            if chunk.get("choices") or client_wants_usage:
                yield chunk
        answer = self._usage_payload(payload, usage, "".join(text), started)
        async with self.sessionmaker() as session:
            await self._record_passthrough(session, user_id, answer)
            await session.commit()
