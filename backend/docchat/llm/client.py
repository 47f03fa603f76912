"""The LLM edge: every generation goes through the `openai` SDK to an OpenAI-compatible server.

Contract: `complete` returns the whole answer; `stream` yields text pieces as they arrive and
then one final `StreamEnd` with token counts. Both raise `UpstreamTimeout` (504) when the server
is too slow and `UpstreamError` (502) when it is unreachable or answers with an error, so
callers never see SDK exceptions.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, overload

import openai
from openai import AsyncOpenAI, AsyncStream
from openai.types import CompletionUsage
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
)
from openai.types.chat.chat_completion_message_function_tool_call import Function

from docchat import tracing
from docchat.config import LLMSettings
from docchat.kit.errors import BadRequest, UpstreamError, UpstreamTimeout
from docchat.llm.connections import async_http_client
from docchat.metrics import LLM_LATENCY, record_tokens

logger = logging.getLogger(__name__)

ChatMessage = dict[str, Any]
CUT_OFF = "The language model stopped before finishing its answer"
MODEL_FAILED = "The language model reported an error while answering"
UNREADABLE = "The language model sent an answer that could not be read"


@dataclass(frozen=True)
class _Piece:
    """What an answer's stream needs of one chunk, read from the chunk's JSON as sent (a field
    missing, null or of another type counts as absent, as servers differ)."""

    model: str | None = None
    # (prompt tokens, completion tokens), when the chunk reports usage.
    usage: tuple[int | None, int | None] | None = None
    finish_reason: str | None = None
    # The text of each choice's delta that has some.
    texts: tuple[str, ...] = ()

    @classmethod
    def of(cls, chunk: object) -> _Piece:
        if not isinstance(chunk, dict):
            return cls()
        finish_reason, texts = None, []
        for choice in json_objects(chunk.get("choices")):
            finish_reason = _text(choice.get("finish_reason")) or finish_reason
            delta = choice.get("delta")
            content = _text(delta.get("content")) if isinstance(delta, dict) else None
            if content:
                texts.append(content)
        usage = chunk.get("usage")
        return cls(
            model=_text(chunk.get("model")),
            usage=(
                (
                    token_count(usage.get("prompt_tokens")),
                    token_count(usage.get("completion_tokens")),
                )
                if isinstance(usage, dict)
                else None
            ),
            finish_reason=finish_reason,
            texts=tuple(texts),
        )


def json_objects(value: object) -> list[dict[str, Any]]:
    """The objects of a JSON list as a server sent it (none if it is not a list)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def token_count(value: object) -> int | None:
    """A token count as a server reported it: an integer, or a float with nothing after the
    point (some servers); anything else is no count."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) else None


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Completion:
    content: str
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)


def _tool_calls(message: ChatCompletionMessage) -> list[ToolCall]:
    calls = message.tool_calls if isinstance(message.tool_calls, list) else []
    return [
        ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments or "")
        for call in calls
        if isinstance(call, ChatCompletionMessageFunctionToolCall)
        and isinstance(call.function, Function)
    ]


@dataclass(frozen=True)
class StreamEnd:
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def _translate(exc: Exception) -> Exception:
    if isinstance(exc, openai.APITimeoutError):
        return UpstreamTimeout("The language model did not answer in time")
    if isinstance(exc, openai.APIConnectionError):
        return UpstreamError("The language model is unreachable")
    if isinstance(exc, openai.APIStatusError):
        return UpstreamError(f"The language model answered with an error ({exc.status_code})")
    if isinstance(exc, openai.APIError):  # an error event in the middle of a stream
        return UpstreamError(MODEL_FAILED)
    return exc


def _stream_failure(
    exc: Exception, *, received: bool, translate: Callable[[Exception], Exception]
) -> Exception:
    """What a model's stream that broke raises: cut off once it had begun to arrive."""
    if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):  # a line was not JSON
        return UpstreamError(UNREADABLE)
    if isinstance(exc, openai.APIConnectionError) and received:
        return UpstreamError(CUT_OFF)
    return translate(exc)


def _translate_forwarded(exc: Exception) -> Exception:
    """A pass-through the model's server rejects (4xx) was the client's mistake: say so."""
    if isinstance(exc, openai.APIStatusError) and 400 <= exc.status_code < 500:
        return BadRequest(f"The language model refused the request: {exc.message}")
    return _translate(exc)


def _call_attributes(
    options: dict[str, Any], messages: Sequence[ChatMessage]
) -> tracing.Attributes:
    """A model call's span: what was asked for, and (only when configured) the prompt."""
    prompt = json.dumps(list(messages), default=str) if tracing.captures_content() else None
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": "openai",
        "gen_ai.request.model": options["model"],
        "gen_ai.request.max_tokens": options["max_tokens"],
        "gen_ai.request.temperature": options["temperature"],
        "gen_ai.prompt": prompt,
    }


def _result_attributes(result: Completion | StreamEnd, text: str) -> tracing.Attributes:
    return {
        "gen_ai.response.model": result.model,
        "gen_ai.usage.input_tokens": result.prompt_tokens,
        "gen_ai.usage.output_tokens": result.completion_tokens,
        "gen_ai.completion": text if tracing.captures_content() else None,
    }


class LLM:
    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        self._client: AsyncOpenAI | None = None
        if settings.base_url or settings.api_key.get_secret_value():
            self._client = AsyncOpenAI(
                base_url=settings.base_url,
                # Local servers (llama.cpp, Ollama, vLLM) accept any key.
                api_key=settings.api_key.get_secret_value() or "not-needed",
                timeout=settings.timeout_seconds,
                max_retries=settings.max_retries,
                http_client=async_http_client(),
            )

    @property
    def client(self) -> AsyncOpenAI:
        if self._client is None:
            raise UpstreamError(
                "No language model is configured: set LLM_BASE_URL (and LLM_API_KEY)"
            )
        return self._client

    @overload
    async def _post_chat(
        self, body: dict[str, Any], *, stream: Literal[False]
    ) -> ChatCompletion: ...

    @overload
    async def _post_chat(
        self, body: dict[str, Any], *, stream: Literal[True]
    ) -> AsyncStream[object]: ...

    async def _post_chat(
        self, body: dict[str, Any], *, stream: bool
    ) -> ChatCompletion | AsyncStream[object]:
        """POST /chat/completions through the SDK's client: its retries, timeouts, error types
        and response models, without `create`'s field-by-field rewrite of the request. Our
        bodies are plain JSON already, and that rewrite walks every message: under load it was
        a tenth of the event loop's time (py-spy, bench_chat_load).

        A stream's chunks come as the JSON the server sent (`_Piece` reads them), not as the
        SDK's models: building one for every chunk cost about 0.1 ms, some 30 ms of the event
        loop for an answer of 300 tokens (`bench.bench_llm_stream`). The SDK still decodes the
        events and raises on an error event."""
        return await self.client.post(
            "/chat/completions",
            body={**body, "stream": stream},
            options={"security": {"bearer_auth": True}},
            cast_to=ChatCompletion,
            stream=stream,
            stream_cls=AsyncStream[object],
        )

    async def _completion(self, body: dict[str, Any]) -> ChatCompletion:
        """A whole answer, not streamed. A reply that is not a chat completion's JSON (a line
        cut short, a proxy's HTML page) is `UpstreamError`, not an unexpected failure."""
        try:
            response = await self._post_chat(body, stream=False)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise UpstreamError(UNREADABLE) from exc
        if not isinstance(response, ChatCompletion):  # the SDK gives a text reply as text
            raise UpstreamError(UNREADABLE)
        return response

    def _options(
        self, model: str | None, temperature: float | None, max_tokens: int | None
    ) -> dict[str, Any]:
        return {
            "model": model or self.settings.model,
            "temperature": self.settings.temperature if temperature is None else temperature,
            "max_tokens": max_tokens or self.settings.max_tokens,
        }

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> Completion:
        extra: dict[str, Any] = {"tools": list(tools)} if tools else {}
        options = self._options(model, temperature, max_tokens)
        with tracing.span(f"chat {options['model']}", _call_attributes(options, messages)) as span:
            completion = await self._complete({"messages": list(messages), **options, **extra})
            tracing.set_attributes(span, _result_attributes(completion, completion.content))
        return completion

    async def _complete(self, body: dict[str, Any]) -> Completion:
        started = time.perf_counter()
        try:
            response = await self._completion(body)
        except openai.OpenAIError as exc:
            raise _translate(exc) from exc
        if not response.choices:
            raise UpstreamError("The language model returned no answer")
        # The SDK builds its models without checking them: a field of another shape stays
        # as the server sent it.
        message = getattr(response.choices[0], "message", None)
        if not isinstance(message, ChatCompletionMessage):
            raise UpstreamError(UNREADABLE)
        usage = response.usage if isinstance(response.usage, CompletionUsage) else None
        prompt_tokens = token_count(usage.prompt_tokens) if usage else None
        completion_tokens = token_count(usage.completion_tokens) if usage else None
        LLM_LATENCY.labels("complete").observe(time.perf_counter() - started)
        record_tokens(prompt_tokens, completion_tokens)
        return Completion(
            content=_text(message.content) or "",
            model=_text(response.model) or body["model"],
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            tool_calls=_tool_calls(message),
        )

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncGenerator[str | StreamEnd, None]:
        options = self._options(model, temperature, max_tokens)
        span = tracing.start_span(f"chat {options['model']}", _call_attributes(options, messages))
        answer: list[str] = []
        try:
            async with contextlib.aclosing(self._stream(messages, options)) as items:
                async for item in items:
                    if isinstance(item, StreamEnd):
                        tracing.set_attributes(span, _result_attributes(item, "".join(answer)))
                    elif tracing.captures_content():
                        answer.append(item)
                    yield item
        except (GeneratorExit, asyncio.CancelledError):
            # The reader stopped reading (Stop, a time limit): not the model's failure.
            tracing.set_attributes(span, {"docchat.stopped": True})
            tracing.end(span)
            raise
        except BaseException as exc:
            tracing.end(span, exc)
            raise
        tracing.end(span)

    async def _stream(
        self, messages: Sequence[ChatMessage], options: dict[str, Any]
    ) -> AsyncGenerator[str | StreamEnd, None]:
        started = time.perf_counter()
        received = False  # before the call: a model that cannot be reached fails in it
        try:
            stream = await self._post_chat(
                {
                    "messages": list(messages),
                    "stream_options": {"include_usage": True},
                    **options,
                },
                stream=True,
            )
            used_model = options["model"]
            prompt_tokens = completion_tokens = finish_reason = None
            async for chunk in stream:
                received = True
                piece = _Piece.of(chunk)
                used_model = piece.model or used_model
                if piece.usage is not None:
                    prompt_tokens, completion_tokens = piece.usage
                finish_reason = piece.finish_reason or finish_reason
                for text in piece.texts:
                    yield text
        except (openai.OpenAIError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _stream_failure(exc, received=received, translate=_translate) from exc
        if finish_reason is None:
            # The server ended the stream without saying the answer was finished.
            raise UpstreamError(CUT_OFF)
        LLM_LATENCY.labels("stream").observe(time.perf_counter() - started)
        record_tokens(prompt_tokens, completion_tokens)
        yield StreamEnd(used_model, prompt_tokens, completion_tokens)

    async def passthrough(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Forward an OpenAI chat-completions body unchanged; the response as a plain dict."""
        try:
            response = await self._completion(payload)
        except openai.OpenAIError as exc:
            raise _translate_forwarded(exc) from exc
        # As the server sent it: a field of another type is forwarded, not warned about.
        result: dict[str, Any] = response.model_dump(exclude_unset=True, warnings=False)
        return result

    async def passthrough_stream(self, payload: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """Forward a streaming body unchanged; yields each chunk as a plain dict. A stream that
        ends without a finish reason (the model was cut off) raises `UpstreamError`."""
        finished = received = False
        try:
            # Sent as it came (as `create` with the unknown fields in `extra_body` would), and
            # each chunk given on as the server sent it: no model built and dumped per chunk.
            stream = await self._post_chat(payload, stream=True)
            async for chunk in stream:
                received = True
                if not isinstance(chunk, dict):
                    continue
                finished = finished or _Piece.of(chunk).finish_reason is not None
                yield chunk
        except (openai.OpenAIError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _stream_failure(exc, received=received, translate=_translate_forwarded) from exc
        if not finished:
            raise UpstreamError(CUT_OFF)

    async def list_models(self) -> list[str]:
        try:
            page = await self.client.models.list()
        except openai.OpenAIError as exc:
            raise _translate(exc) from exc
        return [model.id for model in page.data]

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
