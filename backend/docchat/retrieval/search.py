"""Search over exactly the documents the caller resolved (never a wider scope).

Vector search alone, or hybrid: the vector ranking and a BM25 ranking of the same scope, fused
by reciprocal rank fusion. Either way the similarity floor is applied to the cosine similarity
of each chunk (chunks only BM25 found get theirs from the stored vectors), so "nothing
matches, answer in general mode" means the same thing in both modes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from docchat.llm.embeddings import Embedder
from docchat.observability import RETRIEVAL_LATENCY
from docchat.retrieval.lexical import LexicalHit, LexicalIndex
from docchat.retrieval.query_embedding import embed_query
from docchat.retrieval.vectorstore import DocumentRef, ScoredChunk, VectorStore

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchResult:
    chunks: list[ScoredChunk] = field(default_factory=list)
    # Why nothing could be searched, when the vector store or the embedder failed.
    unavailable: str | None = None
    elapsed_ms: float = 0.0


@dataclass(frozen=True)
class HybridSearch:
    """The lexical side of hybrid search and how its ranking is fused with the vectors'."""

    index: LexicalIndex
    candidates: int = 20
    rrf_k: int = 60
    vector_weight: float = 1.0
    lexical_weight: float = 1.0


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], weights: Sequence[float], k: int
) -> list[str]:
    """Ids ordered by the sum over rankings of weight / (k + rank), rank counted from 1."""
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return sorted(scores, key=lambda key: -scores[key])


async def search(
    embedder: Embedder,
    store: VectorStore,
    query: str,
    documents: Sequence[DocumentRef],
    *,
    top_k: int,
    similarity_floor: float,
    hybrid: HybridSearch | None = None,
) -> SearchResult:
    """The `top_k` best chunks of `documents` for `query` whose similarity passes the floor.

    `documents` must come from the owner-scoped document query. Failures of the embedder
    or the store are reported in `unavailable`, so the caller can fall back to general mode.
    """
    if not documents or not query.strip():
        return SearchResult()
    started = time.perf_counter()
    try:
        vector = await embed_query(embedder, query)
        if hybrid is None:
            hits = await asyncio.to_thread(store.query, vector, list(documents), top_k)
        else:
            hits = await _hybrid(store, hybrid, vector, query, documents, top_k)
    except Exception as exc:
        logger.warning("retrieval unavailable, answering in general mode: %s", exc)
        return SearchResult(unavailable=str(exc)[:300] or type(exc).__name__)
    allowed = {document.id for document in documents}
    kept = [
        hit
        for hit in hits
        if hit.similarity >= similarity_floor and hit.chunk.document_id in allowed
    ][:top_k]
    elapsed = time.perf_counter() - started
    RETRIEVAL_LATENCY.observe(elapsed)
    return SearchResult(chunks=kept, elapsed_ms=elapsed * 1000)


async def _lexical(
    hybrid: HybridSearch, documents: Sequence[DocumentRef], query: str, depth: int
) -> list[LexicalHit]:
    try:
        return await hybrid.index.search(documents, query, depth)
    except Exception as exc:  # the vectors alone still answer
        logger.warning("lexical search failed, using vector search alone: %s", exc)
        return []


async def _hybrid(
    store: VectorStore,
    hybrid: HybridSearch,
    vector: list[float],
    query: str,
    documents: Sequence[DocumentRef],
    top_k: int,
) -> list[ScoredChunk]:
    """Fused candidates, best first (the caller applies the floor and keeps `top_k`)."""
    depth = max(hybrid.candidates, top_k)
    # Both finish before anything is raised: a failed vector search must not leave the
    # lexical query running on behind the request's back.
    vector_result, lexical_hits = await asyncio.gather(
        asyncio.to_thread(store.query, vector, list(documents), depth),
        _lexical(hybrid, documents, query, depth),
        return_exceptions=True,
    )
    if isinstance(vector_result, BaseException):
        raise vector_result
    if isinstance(lexical_hits, BaseException):
        raise lexical_hits
    vector_hits = vector_result
    fused = reciprocal_rank_fusion(
        [[hit.chunk.id for hit in vector_hits], [hit.id for hit in lexical_hits]],
        [hybrid.vector_weight, hybrid.lexical_weight],
        hybrid.rrf_k,
    )
    found = {hit.chunk.id: hit for hit in vector_hits}
    # Only chunks that can still reach the answer need their cosine similarity fetched.
    contenders = set(fused[: top_k * 3])
    missing = [hit for hit in lexical_hits if hit.id not in found and hit.id in contenders]
    if missing:
        refs = {document.id: document for document in documents}
        wanted = [(refs[hit.chunk.document_id], hit.chunk.chunk_index) for hit in missing]
        similarities = await asyncio.to_thread(store.similarities, vector, wanted)
        for hit in missing:
            if hit.id in similarities:
                found[hit.id] = ScoredChunk(hit.chunk, similarities[hit.id])
    return [found[key] for key in fused if key in found]
