"""Semantic search over exactly the documents the caller resolved (never a wider scope)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from docchat.llm.embeddings import Embedder
from docchat.observability import RETRIEVAL_LATENCY
from docchat.retrieval.query_embedding import embed_query
from docchat.retrieval.vectorstore import DocumentRef, ScoredChunk, VectorStore

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchResult:
    chunks: list[ScoredChunk] = field(default_factory=list)
    # Why nothing could be searched, when the vector store or the embedder failed.
    unavailable: str | None = None
    elapsed_ms: float = 0.0


async def search(
    embedder: Embedder,
    store: VectorStore,
    query: str,
    documents: Sequence[DocumentRef],
    *,
    top_k: int,
    similarity_floor: float,
) -> SearchResult:
    """The `top_k` chunks of `documents` most similar to `query`, above the floor.

    `documents` must come from the owner-scoped document query. Failures of the embedder
    or the store are reported in `unavailable`, so the caller can fall back to general mode.
    """
    if not documents or not query.strip():
        return SearchResult()
    started = time.perf_counter()
    try:
        vector = await embed_query(embedder, query)
        hits = await asyncio.to_thread(store.query, vector, list(documents), top_k)
    except Exception as exc:
        logger.warning("retrieval unavailable, answering in general mode: %s", exc)
        return SearchResult(unavailable=str(exc)[:300] or type(exc).__name__)
    allowed = {document.id for document in documents}
    kept = [
        hit
        for hit in hits
        if hit.similarity >= similarity_floor and hit.chunk.document_id in allowed
    ]
    elapsed = time.perf_counter() - started
    RETRIEVAL_LATENCY.observe(elapsed)
    return SearchResult(chunks=kept, elapsed_ms=elapsed * 1000)
