from __future__ import annotations

import uuid

from pydantic import BaseModel, Field

PREVIEW_CHARS = 200


class Source(BaseModel):
    """One cited place in a document, as stored with an assistant message."""

    document_id: uuid.UUID
    document_name: str
    chunk_id: str = Field(
        description="`{document_id}_{chunk_index}`, or `{document_id}_file` for a whole file"
    )
    page: int | None
    similarity: float | None = Field(
        description="Cosine similarity to the query; null for text read directly (inline mode)"
    )
    content_preview: str = Field(description=f"The first {PREVIEW_CHARS} characters of the chunk")
