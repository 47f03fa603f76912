from __future__ import annotations

import json
from typing import Any

import httpx


async def ask(
    client: httpx.AsyncClient, headers: dict[str, str], content: str, **body: Any
) -> httpx.Response:
    return await client.post("/api/v1/messages", headers=headers, json={"content": content, **body})


def parse_sse(text: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:  # not a keep-alive comment
            events.append((lines["event"], json.loads(lines["data"])))
    return events


async def ask_streaming(
    client: httpx.AsyncClient, headers: dict[str, str], content: str, **body: Any
) -> tuple[httpx.Response, list[tuple[str, dict[str, Any]]]]:
    response = await client.post(
        "/api/v1/messages/stream", headers=headers, json={"content": content, **body}
    )
    events = parse_sse(response.text) if response.status_code == 200 else []
    return response, events
