from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from docchat.kit.schemas import RequestModel
from docchat.retrieval.filters import FilterFields


class ChatCompletionRequest(RequestModel):
    """An OpenAI chat-completions body, plus docchat's `index_name`; unknown fields pass through."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    messages: list[dict[str, Any]] = Field(min_length=1)
    stream: bool = False
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    n: int | None = Field(None, ge=1, le=128, description="Choices; docchat returns one")
    temperature: float | None = Field(None, ge=0, le=2)
    tools: list[dict[str, Any]] | None = None
    functions: list[dict[str, Any]] | None = None
    index_name: str | None = Field(
        None,
        max_length=100,
        description=(
            "`all`, the name of one of your categories, or the name or id of a collection you "
            "may read: answer from those documents"
        ),
    )
    research: bool | None = Field(
        None,
        description=(
            "With index_name: docchat's research mode, where a question of several parts is "
            "searched part by part as well as whole, and answered from every search's passages; "
            "with a model that calls tools, it researches further, and a streamed answer sends "
            "each step as a chunk with `research_step` (and no choices' text)"
        ),
    )
    filters: FilterFields | None = Field(
        None,
        description="With index_name: search only the documents that match (name, kind, dates...)",
    )


class ModelCard(BaseModel):
    id: str
    object: str = "model"
    created: int = 0
    owned_by: str = "docchat"


class ModelList(BaseModel):
    object: str = "list"
    data: list[ModelCard]
