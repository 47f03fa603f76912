from __future__ import annotations

import httpx
import openai
from fastapi import FastAPI


def sdk_for(app: FastAPI, token: str) -> openai.AsyncOpenAI:
    """The official OpenAI client, talking to the app in-process with a docchat access token."""
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app))
    return openai.AsyncOpenAI(
        base_url="http://docchat.test/v1", api_key=token, http_client=http, max_retries=0
    )
