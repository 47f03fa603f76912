from __future__ import annotations

import uuid
from datetime import date

from pydantic import BaseModel, Field

from docchat.retrieval.highlight import PREVIEW_CHARS, Highlight


class Source(BaseModel):
    """One cited place in a document, as stored with an assistant message."""

    document_id: uuid.UUID
    document_name: str
    chunk_id: str = Field(
        description=(
            "`{document_id}_{chunk_index}` (`{document_id}_v{version}_{chunk_index}` for versions "
            "after the first), or `{document_id}_file` for a whole file"
        )
    )
    page: int | None
    location: str | None = Field(
        None,
        description=(
            "Where the passage is in a file without pages: `Slide 3`, `Sheet1, rows 2-40`, "
            "a heading path such as `3 Installation > 3.2 Proxy`"
        ),
    )
    similarity: float | None = Field(
        description="Cosine similarity to the query; null for text read directly (inline mode)"
    )
    content_preview: str = Field(description=f"The first {PREVIEW_CHARS} characters of the chunk")
    highlight: Highlight | None = Field(
        None,
        description=(
            "The sentence(s) or table row of the passage that best match the question and the "
            "answer, with their offsets in the passage; null for a whole file or a summary"
        ),
    )
    document_date: date | None = Field(
        None,
        description=(
            "The document's date: its own where the file carries one (PDF, Office, HTML "
            "metadata, a synced file's modification time), else its upload date"
        ),
    )
    readable: bool = Field(
        True,
        description=(
            "False when you may no longer read the document (deleted since, or no longer shared "
            "with you): it cannot be opened, the quote is all that is left. Set by chat message "
            "lists; true when the answer was given"
        ),
    )
