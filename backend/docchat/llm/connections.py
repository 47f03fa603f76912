"""The HTTP connection pools of the clients that call model servers (chat and embeddings).

An idle connection is dropped after `IDLE_SECONDS`, before the server drops it. Model servers
close idle connections after 5 s (uvicorn, and so vLLM and the FastAPI wrappers; llama.cpp's
server). The SDK's pool kept them for the same 5 s, so a request sent near that moment could
go out on a connection the server was closing: it failed as "unreachable", and with
`max_retries=0` nothing tried again (seen once in CI, a browser test's answer at the second
question). Reconnecting after 4 s of silence costs a handshake; on a busy service the
connections never sit idle that long.
"""

from __future__ import annotations

import asyncio
import contextlib

import httpx2
from openai import DefaultAsyncHttpxClient, DefaultHttpxClient

IDLE_SECONDS = 4.0

# The SDK's own limits (openai._constants), but for how long an idle connection is kept.
_LIMITS = httpx2.Limits(
    max_connections=1000, max_keepalive_connections=100, keepalive_expiry=IDLE_SECONDS
)


# Both close their connections when collected, as the pools the SDK makes for itself do (a
# client given to the SDK is left to its owner): clients made for one check (the doctor,
# the CLI, tests) leave no socket open behind them.
class _AsyncPool(DefaultAsyncHttpxClient):
    def __del__(self) -> None:
        if not self.is_closed:
            with contextlib.suppress(Exception):  # no running loop: nothing to close it on
                asyncio.get_running_loop().create_task(self.aclose())


class _Pool(DefaultHttpxClient):
    def __del__(self) -> None:
        if not self.is_closed:
            with contextlib.suppress(Exception):
                self.close()


def async_http_client() -> httpx2.AsyncClient:
    return _AsyncPool(limits=_LIMITS)


def http_client() -> httpx2.Client:
    return _Pool(limits=_LIMITS)
