"""A chat as a file to keep: Markdown to read, JSON to process, both with each answer's
sources."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from docchat.chats.models import Chat, Message, MessageRole
from docchat.chats.schemas import MessageRead
from docchat.db import utcnow


def file_name(chat: Chat, extension: str) -> str:
    """A safe file name from the chat's title: `Ferry times.md`."""
    stem = re.sub(r"[^\w .,()-]+", "", chat.title).strip(" .") or "chat"
    return f"{stem[:80]}.{extension}"


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _source_line(number: int, source: dict[str, Any]) -> str:
    place = []
    if source.get("page"):
        place.append(f"page {source['page']}")
    if source.get("location"):
        place.append(str(source["location"]))
    where = f" ({', '.join(place)})" if place else ""
    preview = " ".join(str(source.get("content_preview", "")).split())
    return f'{number}. {source["document_name"]}{where}: "{preview}"'


def as_markdown(chat: Chat, messages: Sequence[Message]) -> str:
    lines = [f"# {chat.title}", "", f"_Exported from docchat on {_when(utcnow())}_", ""]
    for message in messages:
        speaker = "You" if message.role == MessageRole.user else "docchat"
        lines += [f"**{speaker}** · {_when(message.created_at)}", "", message.content.strip(), ""]
        if message.role == MessageRole.assistant and message.sources:
            lines += ["Sources:", ""]
            lines += [_source_line(n, s) for n, s in enumerate(message.sources, start=1)]
            lines.append("")
        if message.role == MessageRole.assistant:
            lines += ["---", ""]
    return "\n".join(lines)


def as_json(chat: Chat, messages: Sequence[Message]) -> str:
    document = {
        "chat": {
            "id": str(chat.id),
            "title": chat.title,
            "created_at": chat.created_at.isoformat(),
        },
        "exported_at": utcnow().isoformat(),
        "messages": [
            MessageRead.model_validate(message).model_dump(mode="json", exclude={"feedback"})
            for message in messages
        ],
    }
    return json.dumps(document, ensure_ascii=False, indent=2)
