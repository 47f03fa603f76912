"""A real OpenAI-protocol HTTP server that tests start and script.

The service talks to it through the real `openai` SDK, so everything but the model itself
runs for real. Tests queue replies (text, tool calls, errors, delays) and read back every
request the server received, to assert on the exact prompt the model was given.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


@dataclass
class Reply:
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    delay_seconds: float = 0.0
    # For streaming: how the content is cut into deltas (default: word by word).
    pieces: list[str] | None = None
    # For streaming: stop after this many deltas, as a model killed mid-answer does: "end"
    # closes the stream cleanly but with no finish reason, "drop" breaks the connection.
    cut_after: int | None = None
    cut: Literal["end", "drop"] = "end"
    # For streaming: a pause before each delta, as a model writing at reading pace.
    piece_delay_seconds: float = 0.0
    # False: no `usage` in the answer, even when a stream asks for it (several servers).
    report_usage: bool = True
    # For streaming: an error event after this many deltas, as a server that fails in the
    # middle of an answer (overloaded, a moderation stop) sends instead of the rest.
    error_after: int | None = None
    # For streaming: a line that is not JSON after this many deltas, as a proxy's error page
    # or a line cut in two sends, and then nothing more.
    garbage_after: int | None = None
    garbage: bytes = b'data: {"id": "chatcmpl-1", "choices": [{"delta": {"cont\n\n'
    # Not streaming: this (media type, text) is the reply instead of a chat completion, as a
    # proxy's error page or a body cut short.
    raw_body: tuple[str, str | bytes] | None = None
    # The model the answer names (default: the one asked for).
    model: str | None = None


class ScriptedLLM:
    def __init__(self, port: int | None = None) -> None:
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        # The client's port of each request (chat and embeddings): a new port, a new connection.
        self.client_ports: list[int] = []
        self.default = Reply(content="I am the scripted model.")
        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._server: LoopbackServer | None = None
        # Answers `/v1/embeddings` when set (anything with `embed(texts)`).
        self.embed_with: Any = None

    # -- scripting -------------------------------------------------------------------------
    def script(self, *replies: Reply | str) -> None:
        with self._lock:
            for reply in replies:
                self._replies.append(Reply(content=reply) if isinstance(reply, str) else reply)

    def reset(self) -> None:
        with self._lock:
            self._replies.clear()
            self.requests.clear()
            self.authorizations.clear()
            self.client_ports.clear()

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            return self._replies.popleft() if self._replies else self.default

    @property
    def last_request(self) -> dict[str, Any]:
        return self.requests[-1]

    def prompt_text(self, index: int = -1) -> str:
        """Every message content of one request, joined: what the model was shown."""
        messages = self.requests[index]["messages"]
        return "\n".join(str(message.get("content") or "") for message in messages)

    # -- HTTP ------------------------------------------------------------------------------
    def _record_client(self, request: Request) -> None:
        if request.client is not None:
            self.client_ports.append(request.client.port)

    async def _chat(self, request: Request) -> Response:
        self._record_client(request)
        body = await request.json()
        self.authorizations.append(request.headers.get("authorization"))
        reply = self._next(body)
        if reply.delay_seconds:
            await asyncio.sleep(reply.delay_seconds)
        if reply.status != 200:
            return JSONResponse(
                {"error": {"message": "scripted failure", "type": "server_error"}},
                status_code=reply.status,
            )
        model = reply.model or body.get("model", "scripted-model")
        if body.get("stream"):
            return StreamingResponse(_stream(reply, model, body), media_type="text/event-stream")
        if reply.raw_body is not None:
            media_type, content = reply.raw_body
            return Response(content, media_type=media_type)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if reply.tool_calls:
            message["tool_calls"] = reply.tool_calls
        return JSONResponse(
            {
                "id": f"chatcmpl-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                    }
                ],
                **({"usage": _usage(body, reply.content)} if reply.report_usage else {}),
            }
        )

    async def _models(self, _: Request) -> Response:
        return JSONResponse(
            {
                "object": "list",
                "data": [
                    {"id": "scripted-model", "object": "model", "created": 0, "owned_by": "tests"}
                ],
            }
        )

    async def _embeddings(self, request: Request) -> Response:
        """OpenAI's `/embeddings`, answered with the vectors of the model `embed_with` was given
        (the tests' real MiniLM), in reverse order of `index` as servers may send them."""
        self._record_client(request)
        body = await request.json()
        if self.embed_with is None:
            return JSONResponse({"error": {"message": "no embedding model"}}, status_code=404)
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = await asyncio.to_thread(self.embed_with.embed, inputs)
        data = [
            {"object": "embedding", "index": index, "embedding": vector}
            for index, vector in enumerate(vectors)
        ]
        usage = {"prompt_tokens": sum(len(text) // 4 for text in inputs), "total_tokens": 0}
        return JSONResponse(
            {"object": "list", "data": data[::-1], "model": body["model"], "usage": usage}
        )

    def start(self) -> ScriptedLLM:
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )
        self._server = LoopbackServer(app, self.port, "the scripted LLM server")
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()


def _usage(body: dict[str, Any], content: str) -> dict[str, int]:
    prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages", [])) // 4
    completion = len(content) // 4
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


async def _stream(reply: Reply, model: str, body: dict[str, Any]) -> AsyncIterator[str | bytes]:
    ident = f"chatcmpl-{uuid.uuid4().hex}"
    pieces = reply.pieces if reply.pieces is not None else _words(reply.content)

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        payload = {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(payload)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    for number, piece in enumerate(pieces):
        if reply.error_after is not None and number == reply.error_after:
            error = {"message": "scripted overload", "type": "server_error", "code": None}
            yield f"data: {json.dumps({'error': error})}\n\n"
            return
        if reply.garbage_after is not None and number == reply.garbage_after:
            yield reply.garbage
            return
        if reply.cut_after is not None and number == reply.cut_after:
            if reply.cut == "drop":
                raise ConnectionAbortedError("the scripted model died mid-answer")
            return
        if reply.piece_delay_seconds:
            await asyncio.sleep(reply.piece_delay_seconds)
        yield chunk({"content": piece})
    yield chunk({}, "stop")
    if reply.report_usage and (body.get("stream_options") or {}).get("include_usage"):
        usage = {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [],
            "usage": _usage(body, reply.content),
        }
        yield f"data: {json.dumps(usage)}\n\n"
    yield "data: [DONE]\n\n"


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [word if i == len(words) - 1 else word + " " for i, word in enumerate(words)]


class LoopbackServer:
    """An ASGI app served on loopback from a daemon thread, for the scripted test peers."""

    def __init__(self, app: Starlette, port: int, name: str) -> None:
        config = uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=5)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_scripted_llm() -> ScriptedLLM:
    return ScriptedLLM().start()
