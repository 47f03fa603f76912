from __future__ import annotations

import uuid

from sqlalchemy import ForeignKey, Index, SmallInteger, String, Text, text
from sqlalchemy.dialects.postgresql import TSVECTOR
from sqlalchemy.orm import Mapped, mapped_column

from docchat.db import Base

# The version of the index new rows are written with: 2 since German chunks hold the parts of
# their compounds (`compounds.py`).
INDEX_VERSION = 3
# The rows of an earlier version whose vector the current one writes otherwise: German ones
# (2: their compounds' parts) and those of every glossed language (3: their English gloss).
OUTDATED_ROWS = "index_version < 3 AND language_code IN ('de', 'fr', 'es', 'zh')"


class DocumentChunk(Base):
    """A chunk's text in PostgreSQL: the lexical (BM25) index beside the vector store.

    Rows are written and removed in step with the vectors, by the worker and by document
    deletion, and the scope of a search is the same list of readable document ids.
    """

    __tablename__ = "document_chunks"
    # Finds the chunks holding a question's words without reading the rest of a wide scope.
    # Rows stay whole up to 4 KB (migration 0014): BM25 reads `tsv` for every candidate, and
    # out of line each read would be one more lookup in the TOAST table.
    __table_args__ = (
        Index("ix_document_chunks_tsv", "tsv", postgresql_using="gin"),
        Index("ix_document_chunks_language_code", "language_code", "document_id"),
        # The rows an earlier version of the index wrote, which the upgrade writes again.
        Index(
            "ix_document_chunks_outdated",
            "document_id",
            "chunk_index",
            postgresql_where=text(OUTDATED_ROWS),
        ),
        {"postgresql_with": {"toast_tuple_target": "4080"}},
    )

    document_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), primary_key=True
    )
    chunk_index: Mapped[int] = mapped_column(primary_key=True)
    page: Mapped[int | None] = mapped_column(default=None)
    # Where the chunk is in a file without pages (a slide, a sheet's rows, a heading path).
    location: Mapped[str | None] = mapped_column(String(300), default=None)
    text: Mapped[str] = mapped_column(Text)
    # Words in the chunk: BM25's document length.
    tokens: Mapped[int]
    tsv: Mapped[str] = mapped_column(TSVECTOR)
    # The text search configuration `tsv` was made with (the chunk's language); None: the
    # installation's configured one (rows from before migration 0023).
    language: Mapped[str | None] = mapped_column(String(32), default=None)
    # The chunk's language as told (ISO 639-1: "de", "zh"), None when it could not be told (and
    # `language` is the installation's): which languages a scope holds, so that a question is
    # searched in each (migration 0033, and its index for `repository.scope_languages`).
    language_code: Mapped[str | None] = mapped_column(String(8), default=None)
    # How `tsv` was written (`INDEX_VERSION`; migrations 0034, 0035): 2 holds German compounds'
    # parts, 3 German, French, Spanish and Chinese chunks' English gloss.
    index_version: Mapped[int] = mapped_column(SmallInteger, server_default="1")
