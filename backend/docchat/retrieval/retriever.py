"""The retriever: a question and a document scope in, the best passages of that scope out.

One pipeline, built once at start and used by every path that searches (automatic retrieval,
the `semantic_search` tool, the OpenAI-compatible endpoint, the benchmarks):
1. embed the query (batched with other questions arriving at the same moment);
2. vector search, and, for hybrid search, BM25 over the same scope, fused into one ranking
   (`fusion.py`; chunks only BM25 found get their cosine similarity from the stored vectors);
3. a `Reranker`, if one is configured, reorders the fused candidates;
4. the floors, on each passage's match score (cosine similarity, plus in hybrid mode a share
   of its BM25 coverage of the question): passages under the similarity floor are dropped, and
   over a wide scope ("everything I may read") the best passage must also reach the match
   floor, or nothing matches and the answer is general conversation;
5. the passages kept that only the vector index found (it knows their address, not their
   text nor page) are read from PostgreSQL, after both searches, in one statement.
The scope must come from the owner-scoped document query; the retriever never widens it.
Failures of the embedder or the vector index are reported in `SearchResult.unavailable`, so
the caller can answer in general mode.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

from docchat import tracing
from docchat.config import FusionSettings, RerankSettings, SearchSettings
from docchat.kit.registry import Registry
from docchat.llm.embeddings import Embedder
from docchat.metrics import RETRIEVAL_LATENCY
from docchat.retrieval.fusion import Fusion
from docchat.retrieval.index import (
    ChunkRows,
    DocumentRef,
    DocumentScope,
    Embedding,
    ScoredChunk,
    SearchScope,
    VectorIndex,
    with_passages,
)
from docchat.retrieval.languages import language_of
from docchat.retrieval.lexical import LexicalHit, LexicalIndex
from docchat.retrieval.query_embedding import anticipate_query, embed_query

logger = logging.getLogger(__name__)
RetrievalMode = Literal["hybrid", "vector"]
# The match floor when RAG_MATCH_FLOOR is unset, per mode, from `bench.calibrate_floor` (README,
# "Retrieval quality"): the highest at which at most 2% of answerable questions get a general
# answer.
CALIBRATED_MATCH_FLOOR: dict[RetrievalMode, float] = {"hybrid": 0.49, "vector": 0.34}


@dataclass(frozen=True)
class SearchResult:
    chunks: list[ScoredChunk] = field(default_factory=list)
    # Why nothing could be searched, when the vector store or the embedder failed.
    unavailable: str | None = None
    elapsed_ms: float = 0.0
    # The best match score of the passages over the similarity floor (not only those kept).
    best_match: float | None = None


# Searches started ahead of the question that will ask for them; more are forgotten, oldest
# first (the turn that started one failed before it searched).
MAX_SEARCHES_AHEAD = 64
_AheadKey = tuple[str, int, int]


def _usable(task: asyncio.Task[SearchResult]) -> bool:
    """A search started ahead can be awaited here: same event loop, not cancelled."""
    return task.get_loop() is asyncio.get_running_loop() and not task.cancelled()


class Reranker(Protocol):
    """Reorders candidates for a query, best first (a cross-encoder, a rerank service...)."""

    async def rerank(
        self, query: str, candidates: Sequence[ScoredChunk], top_k: int
    ) -> list[ScoredChunk]: ...

    async def close(self) -> None: ...


# Rerankers by RERANK_KIND, registered by the wiring. A factory returns None when its settings
# leave reranking off (the HTTP one without RERANK_URL).
RerankerFactory = Callable[[RerankSettings], Reranker | None]
RERANKERS: Registry[RerankerFactory] = Registry("reranker", "RERANK_KIND")


# A wide scope's vector search asks each owner for this many times the chunks it needs, then
# (for an owner whose nearest were mostly outside the scope) this many times more.
VECTOR_OVERFETCH = 3
VECTOR_DEEPEN = 10
# The key of a listed scope's hits among `_nearest`'s (not an owner: those are checked already).
_LISTED = uuid.UUID(int=0)


def _best(found: dict[uuid.UUID, list[ScoredChunk]], depth: int) -> list[ScoredChunk]:
    every = [hit for hits in found.values() for hit in hits]
    return sorted(every, key=lambda hit: hit.similarity, reverse=True)[:depth]


def _short_owners(
    found: dict[uuid.UUID, list[ScoredChunk]],
    kept: dict[uuid.UUID, list[ScoredChunk]],
    asked: int,
    depth: int,
) -> list[uuid.UUID]:
    """Owners that may hold chunks of the scope closer than the `depth`-th best kept: they
    returned all `asked` (more lie beyond), and the farthest of them is closer than that."""
    best = _best(kept, depth)
    bar = best[-1].similarity if len(best) >= depth else float("-inf")
    return [
        owner
        for owner, hits in found.items()
        if len(hits) >= asked and len(kept.get(owner, ())) < depth and hits[-1].similarity > bar
    ]


class Retriever:
    def __init__(
        self,
        embedder: Embedder,
        index: VectorIndex,
        *,
        passages: ChunkRows,
        similarity_floor: float,
        lexical: LexicalIndex | None = None,
        fusion: Fusion | None = None,
        reranker: Reranker | None = None,
        lexical_evidence: float = 0.0,
        match_floor: float | None = None,
    ) -> None:
        self.embedder = embedder
        self.index = index
        self.passages = passages
        self.lexical = lexical
        self.similarity_floor = similarity_floor
        # "Nothing matches" over a wide scope: the best passage must reach this, or none count.
        self.match_floor = match_floor
        self.lexical_evidence = lexical_evidence if lexical is not None else 0.0
        self.fusion = fusion or Fusion()
        self.reranker = reranker
        self._ahead: OrderedDict[_AheadKey, tuple[DocumentScope, asyncio.Task[SearchResult]]] = (
            OrderedDict()
        )

    @classmethod
    def from_settings(
        cls,
        search: SearchSettings,
        fusion: FusionSettings,
        embedder: Embedder,
        index: VectorIndex,
        lexical: LexicalIndex,
        reranker: Reranker | None = None,
    ) -> Retriever:
        mode: RetrievalMode = "hybrid" if search.hybrid else "vector"
        match_floor = search.match_floor
        return cls(
            embedder,
            index,
            passages=lexical,
            similarity_floor=search.similarity_floor,
            match_floor=CALIBRATED_MATCH_FLOOR[mode] if match_floor is None else match_floor,
            lexical_evidence=search.lexical_evidence,
            lexical=lexical if search.hybrid else None,
            fusion=Fusion.from_settings(fusion),
            reranker=reranker,
        )

    async def close(self) -> None:
        if self.reranker is not None:
            await self.reranker.close()

    @property
    def mode(self) -> RetrievalMode:
        return "vector" if self.lexical is None else "hybrid"

    def anticipate(self, query: str) -> None:
        """Start embedding a query that `search` will be asked for shortly."""
        anticipate_query(self.embedder, query)

    def match_score(self, hit: ScoredChunk) -> float:
        """What the floor judges: cosine similarity, plus (hybrid) a share of the BM25 evidence."""
        return hit.similarity + self.lexical_evidence * min(hit.lexical_coverage, 1.0)

    async def search(
        self,
        query: str,
        documents: SearchScope,
        top_k: int,
        *,
        require_match: bool = True,
        language: str | None = None,
    ) -> SearchResult:
        """The `top_k` best chunks of `documents` for `query` whose match score passes the floor.

        With `require_match`, nothing is returned when even the best passage stays below the
        match floor: the question is about something else. `language`, the query's ISO code
        when the caller knows it (a translation), for BM25 to read it in; else it is told from
        the text. A search started ahead with the same arguments (`search_ahead`) is taken
        instead of searching again."""
        if not documents or not query.strip():
            return SearchResult()
        scope = DocumentScope.of(documents)
        ahead = self._ahead.pop((query, id(scope), top_k), None) if language is None else None
        if ahead is not None and ahead[0] is scope and _usable(ahead[1]):
            result = await ahead[1]
        else:
            result = await self._search(query, scope, top_k, language)
        return self._judged(result, require_match)

    async def search_wordings(
        self,
        queries: Sequence[str],
        documents: SearchScope,
        top_k: int,
        *,
        require_match: bool = True,
        languages: Sequence[str | None] | None = None,
    ) -> SearchResult:
        """The best `top_k` passages for any of several wordings of one question (as asked, and
        translated into the documents' languages): each wording searched, a passage found by
        more than one kept once, all ranked by match score. The floors judge the best of all.

        `languages`, each wording's language when the others translate the first: each wording
        then ranks only the passages written in its language (or in none that can be told). A
        German question about English documents matches any passage holding its names ("Martin
        Luther") as well as the passage that answers it, whose own words only the translation
        has (on 63 questions in four languages, recall@4 0.762 -> 0.841); an English question
        about German documents, the other way. What a wording matched elsewhere still counts as
        evidence for the match floor: the names it shares with the documents."""
        if len(queries) == 1:
            return await self.search(queries[0], documents, top_k, require_match=require_match)
        told = list(languages) if languages is not None else [None] * len(queries)
        # One after the other: a search's statements and the next one's never share a
        # connection at once (as in `_candidates`). The first wording's language is told from
        # its text, as a search started ahead for it did.
        results = [
            await self.search(
                query,
                documents,
                top_k,
                require_match=False,
                language=told[index] if index else None,
            )
            for index, query in enumerate(queries)
        ]
        unavailable = next((result.unavailable for result in results if result.unavailable), None)
        if unavailable is not None:
            return SearchResult(unavailable=unavailable)
        results = [
            result if language is None else self._written_in(result, language)
            for result, language in zip(results, told, strict=True)
        ]
        found: dict[str, ScoredChunk] = {}
        for hit in (hit for result in results for hit in result.chunks):
            kept = found.get(hit.chunk.id)
            if kept is None or self.match_score(hit) > self.match_score(kept):
                found[hit.chunk.id] = hit
        ranked = sorted(found.values(), key=self.match_score, reverse=True)[:top_k]
        best = max((r.best_match for r in results if r.best_match is not None), default=None)
        elapsed = sum(result.elapsed_ms for result in results)
        merged = SearchResult(chunks=ranked, elapsed_ms=elapsed, best_match=best)
        return self._judged(merged, require_match)

    @staticmethod
    def _written_in(result: SearchResult, language: str) -> SearchResult:
        """The passages of `result` not told to be in another language than `language` (a
        timetable or a heading is no language): its best match as it was."""
        kept = [hit for hit in result.chunks if language_of(hit.chunk.text) in (language, None)]
        return replace(result, chunks=kept)

    def search_ahead(self, query: str, documents: SearchScope, top_k: int) -> None:
        """Start the search that `search` will shortly be asked for with these arguments (the
        same scope object), so that it runs while the caller does its other work. Whether the
        match floor applies is decided then."""
        if not documents or not query.strip():
            return
        scope = DocumentScope.of(documents)
        task = asyncio.get_running_loop().create_task(self._search(query, scope, top_k))
        self._ahead[(query, id(scope), top_k)] = (scope, task)
        while len(self._ahead) > MAX_SEARCHES_AHEAD:
            self._ahead.popitem(last=False)

    def misses_match_floor(self, result: SearchResult) -> bool:
        """Whether a search found passages over the similarity floor of which even the best
        stays under the match floor: near the question without matching it."""
        if self.match_floor is None or not result.chunks:
            return False
        return result.best_match is None or result.best_match < self.match_floor

    def _judged(self, result: SearchResult, require_match: bool) -> SearchResult:
        """Nothing, when a match is required and even the best passage misses the floor."""
        if require_match and self.misses_match_floor(result):
            return replace(result, chunks=[])
        return result

    async def _search(
        self, query: str, scope: DocumentScope, top_k: int, language: str | None = None
    ) -> SearchResult:
        """The best `top_k` passages over the similarity floor, and the best match score among
        all that passed it (`_judged` decides on the match floor)."""
        started = time.perf_counter()
        attributes = {
            "docchat.retrieval.mode": self.mode,
            "docchat.retrieval.top_k": top_k,
            "docchat.scope.documents": scope.size,
            "docchat.scope.listed": scope.listed,
        }
        with tracing.span("retrieval.search", attributes) as span:
            try:
                kept, passing = await self._ranked(query, scope, top_k, language)
            except Exception as exc:
                logger.warning("retrieval unavailable, answering in general mode: %s", exc)
                tracing.record_error(span, exc)
                return SearchResult(unavailable=str(exc)[:300] or type(exc).__name__)
            tracing.set_attributes(span, {"docchat.retrieval.passages": len(kept)})
        elapsed = time.perf_counter() - started
        RETRIEVAL_LATENCY.observe(elapsed)
        best = max((self.match_score(hit) for hit in passing), default=None)
        return SearchResult(chunks=kept, elapsed_ms=elapsed * 1000, best_match=best)

    async def _ranked(
        self, query: str, scope: DocumentScope, top_k: int, language: str | None
    ) -> tuple[list[ScoredChunk], list[ScoredChunk]]:
        """The `top_k` best passages with their text, and every candidate over the floor."""
        # Fusion and reranking choose among more candidates than they keep.
        widen = self.lexical is not None or self.reranker is not None
        depth = max(self.fusion.candidates, top_k) if widen else top_k
        hits = await self._candidates(query, scope, depth, language)
        if self.reranker is not None:  # it reads the passages
            with tracing.span("retrieval.rerank", {"docchat.retrieval.candidates": len(hits)}):
                hits = await self.reranker.rerank(query, await self._whole(hits), top_k)
        passing = self._passing(hits, scope)
        return await self._whole(passing[:top_k]), passing

    async def _embedding(self, query: str) -> list[float]:
        attributes = {
            "gen_ai.operation.name": "embeddings",
            "gen_ai.request.model": self.embedder.name,
        }
        with tracing.span("embedding", attributes):
            return await embed_query(self.embedder, query)

    async def _whole(self, hits: list[ScoredChunk]) -> list[ScoredChunk]:
        """The hits with their text and place in the document (the vector index finds a
        chunk's address only)."""
        return await with_passages(hits, self.passages, self.index)

    def _passing(self, hits: list[ScoredChunk], scope: DocumentScope) -> list[ScoredChunk]:
        """The `hits` of the scope whose match score reaches the similarity floor, in order
        (a wide scope's hits were checked against it as they were found)."""
        allowed = scope.by_id
        return [
            hit
            for hit in hits
            if self.match_score(hit) >= self.similarity_floor
            and (not scope.listed or hit.chunk.document_id in allowed)
        ]

    async def _candidates(
        self, query: str, scope: DocumentScope, depth: int, language: str | None = None
    ) -> list[ScoredChunk]:
        if self.lexical is None:
            vector = await self._embedding(query)
            found = await self._nearest(vector, scope, depth)
            return await self._in_scope(vector, scope, found, depth)
        # BM25 needs no vector: it starts with the query's embedding, not after it, and then
        # fetches its passages' cosine similarities while the vector search still runs. Both
        # sides finish before anything is raised: a failed vector search must not leave the
        # lexical query running on behind the request's back.
        embedding = asyncio.ensure_future(self._embedding(query))
        vector_result, lexical_result = await asyncio.gather(
            self._vector_side(embedding, scope, depth),
            self._lexical_side(self.lexical, embedding, scope, query, depth, language),
            return_exceptions=True,
        )
        if isinstance(vector_result, BaseException):
            raise vector_result
        if isinstance(lexical_result, BaseException):
            raise lexical_result
        # A wide scope's nearest chunks are checked against it once BM25 is done with
        # PostgreSQL (one statement after the other, on whatever connection they get).
        vector_hits = await self._in_scope(await embedding, scope, vector_result, depth)
        lexical_hits, similarities = lexical_result
        proposed, beyond = lexical_hits[:depth], lexical_hits[depth:]
        with tracing.span("retrieval.fusion", {"docchat.retrieval.fusion": self.fusion.method}):
            return self._fused(vector_hits, proposed, similarities, beyond)

    async def _vector_side(
        self, embedding: Awaitable[list[float]], scope: DocumentScope, depth: int
    ) -> dict[uuid.UUID, list[ScoredChunk]]:
        return await self._nearest(await embedding, scope, depth)

    async def _nearest(
        self, embedding: Embedding, scope: DocumentScope, depth: int
    ) -> dict[uuid.UUID, list[ScoredChunk]]:
        """The nearest chunks by owner: of a listed scope, its `depth` best (exact, under one
        key); of a wide one, each owner's nearest, a few times more than needed and unchecked
        (`_in_scope` keeps those the scope holds)."""
        with tracing.span("retrieval.vector_search", {"docchat.retrieval.depth": depth}):
            if scope.listed:
                return {_LISTED: await self.index.query(embedding, scope.refs or (), depth)}
            return await self.index.nearest(embedding, scope.owners, depth * VECTOR_OVERFETCH)

    async def _in_scope(
        self,
        embedding: Embedding,
        scope: DocumentScope,
        found: dict[uuid.UUID, list[ScoredChunk]],
        depth: int,
    ) -> list[ScoredChunk]:
        """The `depth` chunks of the scope nearest to `embedding`, exactly, from `_nearest`.

        A wide scope's are those of each owner's nearest that PostgreSQL finds in it. An owner
        whose nearest were mostly outside the scope (someone who shares a few documents and
        keeps many) may still hold closer ones than the last kept: that owner is asked again,
        deeper, and then, if still needed, filtered by its documents in the scope."""
        if scope.listed:
            return found.get(_LISTED, [])
        asked = depth * VECTOR_OVERFETCH
        kept = await self._admitted(scope, found)
        for deeper in (asked * VECTOR_DEEPEN, None):
            short = _short_owners(found, kept, asked, depth)
            if not short:
                break
            if deeper is not None:
                found |= await self.index.nearest(embedding, short, deeper)
                kept |= await self._admitted(scope, {owner: found[owner] for owner in short})
                asked = deeper
                continue
            for owner in short:
                documents = await self.passages.documents_of(scope, owner)
                kept[owner] = await self.index.query(embedding, documents, depth)
        return _best(kept, depth)

    async def _admitted(
        self, scope: DocumentScope, found: dict[uuid.UUID, list[ScoredChunk]]
    ) -> dict[uuid.UUID, list[ScoredChunk]]:
        """Of each owner's hits, those the wide scope holds."""
        every = [hit.chunk for hits in found.values() for hit in hits]
        admitted = await self.passages.admitted(scope, every)
        return {
            owner: [hit for hit in hits if hit.chunk.id in admitted]
            for owner, hits in found.items()
        }

    async def _lexical_side(
        self,
        lexical: LexicalIndex,
        embedding: Awaitable[list[float]],
        scope: DocumentScope,
        query: str,
        depth: int,
        language: str | None = None,
    ) -> tuple[list[LexicalHit], dict[str, float]]:
        """BM25's passages, read to the fusion's depth for it (`Fusion.lexical_depth`: its
        first `depth` are its candidates, any further ones only lend their scores), and the
        cosine similarity of each candidate (from the stored vectors): the floor and convex
        fusion need it for the passages only BM25 proposes."""
        read = self.fusion.lexical_depth(depth)
        hits = await self._lexical(lexical, scope, query, read, language)
        vector = await embedding  # awaited even without hits: its failure is reported once
        if not hits:
            return hits, {}
        # A hit's row names its document's owner and answering version.
        wanted = [
            (
                DocumentRef(hit.chunk.document_id, hit.chunk.owner_id, hit.chunk.version),
                hit.chunk.chunk_index,
            )
            for hit in hits[:depth]
        ]
        return hits, await self.index.similarities(vector, wanted)

    @staticmethod
    async def _lexical(
        lexical: LexicalIndex,
        documents: SearchScope,
        query: str,
        depth: int,
        language: str | None = None,
    ) -> list[LexicalHit]:
        with tracing.span("retrieval.bm25", {"docchat.retrieval.depth": depth}) as span:
            try:
                hits = await lexical.search(documents, query, depth, language)
            except Exception as exc:  # the vectors alone still answer
                logger.warning("lexical search failed, using vector search alone: %s", exc)
                tracing.record_error(span, exc)
                return []
            tracing.set_attributes(span, {"docchat.retrieval.hits": len(hits)})
            return hits

    def _fused(
        self,
        vector_hits: list[ScoredChunk],
        lexical_hits: list[LexicalHit],
        similarities: dict[str, float],
        lexical_beyond: Sequence[LexicalHit] = (),
    ) -> list[ScoredChunk]:
        """Fused candidates, best first (the caller applies the floor and keeps `top_k`).

        `lexical_beyond`, BM25's results past its candidates: their scores only (a vector
        candidate among them keeps its BM25 score in `adaptive` fusion), not candidates."""
        coverage = {hit.id: hit.coverage for hit in lexical_hits}
        # A chunk both sides found is taken as BM25 read it: with its text.
        read = {hit.id: hit.chunk for hit in lexical_hits}
        found = {
            hit.chunk.id: ScoredChunk(
                read.get(hit.chunk.id, hit.chunk), hit.similarity, coverage.get(hit.chunk.id, 0.0)
            )
            for hit in vector_hits
        }
        others: dict[str, float] = {}
        for hit in lexical_hits:
            if hit.id not in found and hit.id in similarities:
                others[hit.id] = similarities[hit.id]
                found[hit.id] = ScoredChunk(hit.chunk, similarities[hit.id], hit.coverage)
        fused = self.fusion.fuse(
            [(hit.chunk.id, hit.similarity) for hit in vector_hits],
            [(hit.id, hit.score) for hit in lexical_hits if hit.id in found],
            others,
            {hit.id: hit.score for hit in lexical_beyond},
        )
        return [found[key] for key in fused]
