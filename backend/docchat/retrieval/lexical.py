"""Lexical retrieval: Okapi BM25 over the `document_chunks` table, inside one document scope.

PostgreSQL's full-text search does the language work (a `regconfig` stems words and drops stop
words); the score is BM25 (k1 = 1.2, b = 0.75), computed in SQL from the term frequencies
stored in each chunk's `tsvector`, with the scope's size and average length from its
documents' totals and document frequencies counted over the scope, so one user's documents
do not shape the ranking of another's (the one exception: in a wide scope, the frequency of a
word among the installation's most common is estimated from the installation's statistics; see
`LexicalIndex`). A GIN index over the vectors lets a wide scope read only the chunks that hold
the question's rarer words. The rows live in the same database as the documents, are written
with the vectors and removed with the document, and a search is restricted to the scope the
caller resolved for the user: the ids of a listed scope, or a wide scope's condition, which
the candidates' documents must meet (`documents.scopes`). The statements are in
`repository.py`; this module decides which to run and with what.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.kit.matching import containing
from docchat.replicas.routing import Sessions, replica_read
from docchat.retrieval import repository
from docchat.retrieval.compounds import with_parts
from docchat.retrieval.index import Chunk, DocumentRef, DocumentScope, SearchScope
from docchat.retrieval.languages import (
    CJK,
    CONFIGURATIONS,
    configuration,
    configuration_of,
    language_code,
    language_of,
    names_in,
    segmented,
)
from docchat.retrieval.models import INDEX_VERSION, DocumentChunk
from docchat.retrieval.passage_glosses import GLOSS_CONFIGURATION, PassageGlosses

K1 = 1.2
B = 0.75


def _chunk_of(row: Any) -> Chunk:
    return Chunk(
        document_id=row.document_id,
        chunk_index=row.chunk_index,
        text=row.text,
        page=row.page,
        location=row.location,
        owner_id=row.owner_id,
        visibility=str(row.visibility),
        filename=row.filename,
        version=row.version,  # the rows are always of the version that answers
    )


@dataclass(frozen=True)
class LexicalHit:
    chunk: Chunk
    score: float
    # The score over what a chunk holding every word of the question once would get.
    coverage: float = 0.0

    @property
    def id(self) -> str:
        return self.chunk.id


def word_count(content: str) -> int:
    return max(1, len(content.split()))


# Rows per round of writes: a 5,000-page document is written in a few, the event loop free
# between them.
INSERT_BATCH = 500
# The longest location kept (the column is varchar(300)); extractors stay well under it.
LOCATION_CHARS = 300


def as_indexed(text: str, code: str | None) -> str:
    """What PostgreSQL's text search reads of a chunk's indexed text in language `code`."""
    return segmented(with_parts(text, code))


def _gloss(glosses: PassageGlosses | None, text: str, code: str | None) -> dict[str, str]:
    """The row's English gloss, read as English (`passage_glosses`; empty for English)."""
    gloss = glosses.of(text, code) if glosses is not None else None
    return {"gloss": gloss or "", "gloss_language": GLOSS_CONFIGURATION}


def _chunk_rows(
    chunks: Sequence[Chunk],
    indexed: Sequence[str],
    language: str,
    glosses: PassageGlosses | None,
) -> list[dict[str, Any]]:
    rows = []
    for chunk, indexed_text in zip(chunks, indexed, strict=True):
        code = language_of(chunk.text)
        rows.append(
            {
                "document_id": chunk.document_id,
                "chunk_index": chunk.chunk_index,
                "page": chunk.page,
                "location": chunk.location[:LOCATION_CHARS] if chunk.location else None,
                "text": chunk.text,
                "tokens": word_count(indexed_text),
                "language": configuration(code, language),
                "language_code": code,
                "indexed": as_indexed(indexed_text, code),
                "index_version": INDEX_VERSION,
                **_gloss(glosses, chunk.text, code),
            }
        )
    return rows


async def add_chunks(
    session: AsyncSession,
    chunks: Sequence[Chunk],
    language: str,
    indexed_texts: Sequence[str] | None = None,
    glosses: PassageGlosses | None = None,
) -> None:
    """Index chunks (the caller commits), each in its own language (`languages.py`), or in
    `language`, a PostgreSQL text search config, when its language cannot be told.

    `indexed_texts`, when given, is what BM25 sees of each chunk (its text with a header);
    the stored text stays the chunk's own. `glosses`: chunks in other languages are also read
    as their English gloss. Idempotent: a chunk written again (a retried job) replaces the row
    it had."""
    indexed = list(indexed_texts) if indexed_texts is not None else [c.text for c in chunks]
    # Telling each chunk's language takes about a millisecond, and a gloss may wait for the
    # dictionaries: not on the event loop.
    rows = await asyncio.to_thread(_chunk_rows, chunks, indexed, language, glosses)
    for start in range(0, len(rows), INSERT_BATCH):
        await repository.upsert_chunks(session, rows[start : start + INSERT_BATCH])


async def rewrite_outdated(
    session: AsyncSession,
    indexed: Callable[[str, str], str],
    default_language: str,
    limit: int,
    glosses: PassageGlosses | None = None,
) -> int:
    """Write again, as this version of the index writes them, up to `limit` rows an earlier
    version wrote otherwise (German chunks without their compounds' parts, those in other
    languages without their English gloss), locked until the caller commits; how many.
    `indexed(filename, text)`: what BM25 reads of a chunk."""
    rows = await repository.outdated_rows(session, limit)
    if not rows:
        return 0

    def rewritten() -> list[dict[str, Any]]:
        return [
            {
                "document_id": row.document_id,
                "chunk_index": row.chunk_index,
                "indexed": as_indexed(indexed(row.filename, row.text), row.language_code),
                "index_version": INDEX_VERSION,
                "default_language": default_language,
                **_gloss(glosses, row.text, row.language_code),
            }
            for row in rows
        ]

    # Splitting compounds reads a word list the first time (about a second), and a gloss may
    # wait for the dictionaries: not on the loop.
    await repository.rewrite_rows(session, await asyncio.to_thread(rewritten))
    return len(rows)


async def count_outdated(session: AsyncSession) -> int:
    """How many rows an earlier version of the index wrote otherwise (`rewrite_outdated`)."""
    return await repository.count_outdated_rows(session)


async def passages(
    session: AsyncSession, document_id: uuid.UUID, skip: int, limit: int
) -> tuple[list[DocumentChunk], int]:
    """A run of the document's chunks in reading order (the caller checked it may be read),
    and how many it has."""
    total = await count_chunks(session, document_id)
    return await repository.chunks_in_order(session, document_id, skip, limit), total


async def count_chunks(session: AsyncSession, document_id: uuid.UUID) -> int:
    """How many chunks of the document the index holds."""
    return await repository.count_chunks(session, document_id)


async def delete_chunks(session: AsyncSession, document_id: uuid.UUID) -> None:
    """Remove the document's chunks from the index (the caller commits)."""
    await repository.delete_chunks(session, document_id)


# Up to this many chunks in a scope, BM25 is exact: the scope's chunks are read by key.
EXACT_SCOPE_CHUNKS = 5_000
# In a wider scope, the words that pick candidates are the question's rarest, while the chunks
# the index finds for them stay under this estimate (at least one word always picks). Each
# candidate's row is read and its words counted, so this bounds a question's cost: over a
# 100k-chunk library, 1,000 takes about 40% less time than 2,000 (p95 17.5 -> 11 ms) and keeps
# 91% of its top 20, with SQuAD's judged scores unchanged (README, Performance).
CANDIDATE_BUDGET = 1_000
# How long the installation's word statistics are reused before they are read again.
WORD_STATISTICS_TTL_SECONDS = 300.0
# A scope of this many documents or more has its totals reused for this long; at most this
# many scopes are remembered (the oldest goes first).
CACHED_SCOPE_DOCUMENTS = 100
SCOPE_TOTALS_TTL_SECONDS = 30.0
CACHED_SCOPES = 256
# How long the languages of a scope's chunks are reused: a question's translations follow them,
# and a document in a new language counts for the questions asked a minute later.
SCOPE_LANGUAGES_TTL_SECONDS = 60.0


@dataclass(frozen=True)
class WordStatistics:
    """The installation's most common lexemes, each with the share of chunks holding it (a
    lexeme missing from `shares` is rarer than `rarest_share`), and the table's row count."""

    shares: dict[str, float]
    rarest_share: float
    rows: float

    @classmethod
    def from_row(cls, row: Any) -> WordStatistics:
        if row is None or not row.lexemes or not row.shares:
            return cls({}, 0.0, 0.0)
        lexemes, shares = list(row.lexemes), list(row.shares)
        # After one share per lexeme come the smallest, the largest and the null share.
        return cls(
            dict(zip(lexemes, shares, strict=False)),
            float(shares[len(lexemes)]),
            float(row.rows or 0.0),
        )


@dataclass(frozen=True)
class WordSelection:
    """Which of a question's lexemes pick candidate chunks, and the estimated document
    frequency in the scope of the others (common words, still counted in every score)."""

    picking: list[str]
    common: dict[str, float]
    # When even the rarest word is expected in more chunks than the budget ("doctor" in a
    # library about a TV series), the next rarest: candidates must then hold both.
    partner: str | None = None

    def queries(self) -> list[str]:
        """The candidates' tsqueries, tried in turn until one finds enough chunks in the scope:
        any picking word; or, when even the rarest word is too common, chunks that also hold
        the partner, then any other word of the question, then the picking words alone.

        Each next query reads more chunks, and adds ones that (nearly always) rank after those
        the one before found: a chunk holding one of the question's words scores below one
        holding it and another, unless it holds it far more often."""
        alone = tsquery_of(self.picking)
        if self.partner is None:
            return [alone]
        # Parenthesised: in a tsquery & binds before |.
        steps = [f"({alone}) & {tsquery_of([self.partner])}"]
        if len(self.picking) + len(self.common) > 2:
            steps.append(self._two_words_at_least())
        return [*steps, alone]

    def _two_words_at_least(self) -> str:
        """Chunks holding a picking word and another word of the question."""
        others = [*self.picking, *self.common]
        pairs = [
            f"({tsquery_of([word])} & ({tsquery_of(others[index + 1 :])}))"
            for index, word in enumerate(self.picking)
        ]
        return " | ".join(pairs)


def select_words(
    lexemes: Sequence[str], statistics: WordStatistics, scope_chunks: float, budget: float
) -> WordSelection:
    """Rarest first: every lexeme the statistics do not list (rarer than all they list) picks;
    listed ones join, least common first, while their estimated matches in the installation
    stay within `budget`. What is left is common: its frequency in the scope is estimated from
    its share of the installation."""
    picking = [lexeme for lexeme in lexemes if lexeme not in statistics.shares]
    estimate = len(picking) * statistics.rarest_share * statistics.rows
    listed = sorted(
        (lexeme for lexeme in lexemes if lexeme in statistics.shares),
        key=lambda lexeme: statistics.shares[lexeme],
    )
    common: dict[str, float] = {}
    for lexeme in listed:
        matches = statistics.shares[lexeme] * statistics.rows
        if not picking or estimate + matches <= budget:
            picking.append(lexeme)
            estimate += matches
        else:
            common[lexeme] = statistics.shares[lexeme] * scope_chunks
    partner = next(iter(common), None) if estimate > budget else None
    return WordSelection(picking, common, partner)


# Every configuration a chunk may be indexed with (`languages.configuration`).
NAME_CONFIGURATIONS = frozenset([*CONFIGURATIONS.values(), *CJK.values()])
# A shorter name ("I", "EU") is read as written in every language, or is a word there.
NAME_CHARACTERS = 3


def _read_per_language(name: str) -> bool:
    """Whether a name is read in each language's configuration: a word of letters."""
    return len(name) >= NAME_CHARACTERS and name.isalpha()


@dataclass(frozen=True)
class QuestionWords:
    """A question's lexemes as BM25 reads them.

    `everywhere` count in every chunk: the question's `own` (read in its language) and, when it
    is written in another language than the installation's, its names as the installation's
    language reads them (a German question's "Duskmoor" in an English passage). `variants` are
    its names as each other configuration reads them, where that differs ("Kellmünz" is
    `kellmunz` in German, whose stemmer folds umlauts; "Lindenhagen" is `lindenhag`): each
    counts only in the chunks indexed with its configuration. `groups` gives every lexeme the
    word it reads, so that one name read several ways counts once in the coverage."""

    own: list[str]
    everywhere: list[str]
    variants: list[tuple[str, str]]
    groups: dict[str, int]

    @property
    def all(self) -> list[str]:
        return list(self.groups)

    @classmethod
    def of(
        cls,
        own: Sequence[str],
        readings: Sequence[tuple[str, int, str]],
        language: str,
        installation: str,
    ) -> QuestionWords:
        """From the question's `own` lexemes and its names' `readings` (configuration, the
        name's position, lexeme), read in the question's `language`."""
        everywhere = list(own)
        if language != installation:
            everywhere += [lexeme for config, _, lexeme in readings if config == installation]
        everywhere = list(dict.fromkeys(everywhere))
        matched = set(everywhere)
        variants = sorted(
            {
                (config, lexeme)
                for config, _, lexeme in readings
                if config != language and lexeme not in matched
            }
        )
        used = matched | {lexeme for _, lexeme in variants}
        groups = {lexeme: index for index, lexeme in enumerate(everywhere)}
        by_name: dict[int, set[str]] = {}
        for _, position, lexeme in readings:
            by_name.setdefault(position, set()).add(lexeme)
        for position, lexemes in sorted(by_name.items()):
            known = [groups[lexeme] for lexeme in lexemes if lexeme in groups]
            word = min(known) if known else len(everywhere) + position
            for lexeme in lexemes & used:
                groups[lexeme] = min(groups.get(lexeme, word), word)
        return cls(list(own), everywhere, variants, groups)


def _scope_key(scope: DocumentScope) -> bytes:
    """Names a scope for what is kept per scope: a listed one by its documents, a wide one by
    its condition's parameters (whose documents, collections, category)."""
    if scope.condition is None:
        return scope.digest
    described = repr(
        sorted((name, repr(value)) for name, value in scope.condition.parameters.items())
    )
    return hashlib.blake2b(described.encode(), digest_size=16).digest()


def tsquery_of(lexemes: Sequence[str]) -> str:
    """An OR query of lexemes as they are (quoted, so they are never normalised again)."""
    return " | ".join("'" + x.replace("\\", "\\\\").replace("'", "''") + "'" for x in lexemes)


@dataclass
class LexicalIndex:
    """BM25 search for the message flow; it opens its own short sessions.

    Over a scope of at most `EXACT_SCOPE_CHUNKS` chunks the ranking is exact. Over a wider one
    (a shared library), reading every chunk that holds "year" or "city" would cost seconds, so
    only the question's rarer words pick candidates through the GIN index (MaxScore's idea: a
    chunk holding none of them can only score with common words, whose IDF is low); the common
    words still count in every candidate's score, with their document frequency estimated from
    the installation's statistics. When even the rarest word is too common, candidates must
    hold it and the next rarest; if fewer chunks than asked for do, it and any other word of
    the question; if still too few, it alone (`WordSelection.queries`). On SQuAD with
    this path forced on, BM25 and hybrid scores are those of exact BM25 (README, Performance)."""

    sessionmaker: Sessions  # a question's reads may run on a replica
    language: str = "english"
    exact_scope_chunks: int = EXACT_SCOPE_CHUNKS
    candidate_budget: float = CANDIDATE_BUDGET
    _statistics: WordStatistics | None = field(default=None, init=False, repr=False)
    _statistics_read_at: float = field(default=0.0, init=False, repr=False)
    # Wide scopes' totals by a digest of their document ids: (n, avgdl, read at).
    _totals: dict[bytes, tuple[float, float, float]] = field(
        default_factory=dict, init=False, repr=False
    )
    # Scopes' languages by `_scope_key`: (codes, read at).
    _languages: dict[bytes, tuple[frozenset[str], float]] = field(
        default_factory=dict, init=False, repr=False
    )

    @replica_read
    async def languages_in(self, documents: SearchScope) -> frozenset[str]:
        """The languages (ISO 639-1 codes) the scope's chunks are written in; a chunk whose
        language could not be told (a table, a heading) counts as the installation's. One
        statement (`repository.scope_languages`), its answer reused for a minute per scope."""
        if not documents:
            return frozenset()
        scope = DocumentScope.of(documents)
        key = _scope_key(scope)
        now = time.monotonic()
        cached = self._languages.get(key)
        if cached is not None and now - cached[1] <= SCOPE_LANGUAGES_TTL_SECONDS:
            return cached[0]
        condition = scope.condition
        parameters = {"documents": scope.ids} if condition is None else dict(condition.parameters)
        async with self.sessionmaker() as session:
            codes = await repository.scope_languages(
                session, parameters, None if condition is None else condition.sql
            )
        untold = language_code(self.language)
        found = frozenset(known for code in codes if (known := code or untold) is not None)
        if len(self._languages) >= CACHED_SCOPES:
            self._languages.pop(next(iter(self._languages)))
        self._languages[key] = (found, now)
        return found

    async def _word_statistics(self, session: AsyncSession) -> WordStatistics:
        now = time.monotonic()
        if self._statistics is None or now - self._statistics_read_at > WORD_STATISTICS_TTL_SECONDS:
            row = await repository.common_lexemes(session)
            self._statistics, self._statistics_read_at = WordStatistics.from_row(row), now
        return self._statistics

    async def _scope_totals(
        self, session: AsyncSession, scope: DocumentScope
    ) -> tuple[float, float]:
        """The scope's chunk count and average chunk length. Those of a wide scope (a shared
        library of thousands of documents) are reused for a while: summing them is most of a
        question's first statement, and a document more or less barely moves them."""
        key = scope.digest
        now = time.monotonic()
        cached = self._totals.get(key)
        if cached is not None and now - cached[2] <= SCOPE_TOTALS_TTL_SECONDS:
            return cached[0], cached[1]
        row = await repository.scope_totals(session, scope.ids)
        if scope.size >= CACHED_SCOPE_DOCUMENTS:
            if len(self._totals) >= CACHED_SCOPES:
                self._totals.pop(next(iter(self._totals)))
            self._totals[key] = (row.n, row.avgdl, now)
        return row.n, row.avgdl

    @replica_read
    async def search(
        self, documents: SearchScope, question: str, limit: int, language: str | None = None
    ) -> list[LexicalHit]:
        """The best `limit` chunks of the scope for `question` by BM25; `language`, its ISO
        code when the caller knows it (a translation), else it is told from the text."""
        if not documents or not question.strip() or limit <= 0:
            return []
        scope = DocumentScope.of(documents)
        async with self.sessionmaker() as session:
            if language is None:
                language = configuration_of(question, self.language)
            else:
                language = configuration(language, self.language)
            read = await self._read(session, question, language)
            own, lexemes = read.own, read.everywhere
            if not lexemes:
                return []
            n, avgdl = scope.totals or await self._scope_totals(session, scope)
            parameters: dict[str, Any] = {"documents": scope.ids}
            exact = scope.listed and n <= self.exact_scope_chunks
            if exact:
                words = WordSelection(read.all, {})
            else:
                statistics = await self._word_statistics(session)
                if scope.condition is not None:
                    parameters = dict(scope.condition.parameters)
                words = select_words(read.all, statistics, n, self.candidate_budget)
            condition = None if exact or scope.condition is None else scope.condition.sql
            parameters |= {
                "lexemes": lexemes,
                "variant_configs": [config for config, _ in read.variants],
                "variant_lexemes": [lexeme for _, lexeme in read.variants],
                "words": list(read.groups),
                "groups": list(read.groups.values()),
                "known": list(words.common),
                "known_df": list(words.common.values()),
                "n": n,
                "avgdl": avgdl,
                "k1": K1,
                "b": B,
                "limit": limit,
                "own": own,
                "question_language": language,
                "default_language": self.language,
            }
            for query in words.queries():
                rows = await repository.bm25(
                    session, parameters | {"query": query}, scope_first=exact, condition=condition
                )
                if len(rows) >= limit:
                    break
            return [
                LexicalHit(_chunk_of(row), float(row.score), float(row.coverage or 0.0))
                for row in rows
            ]

    async def _read(self, session: AsyncSession, question: str, language: str) -> QuestionWords:
        """The question read in its `language`, and its names as the installation's language
        and every other configuration read them (`QuestionWords`), in one statement."""
        names = names_in(question).split()
        asked = {
            "config": language,
            "question": segmented(question),
            "configs": sorted({*NAME_CONFIGURATIONS, language, self.language}),
            "words": names,
        }
        row = await repository.read_question(session, asked)
        readings = [
            (str(config), int(position), str(lexeme))
            for config, position, lexeme in zip(
                row.configs or [], row.positions or [], row.readings or [], strict=True
            )
            # Names and numbers are read as the installation's language reads them; only a
            # name of letters is read otherwise in another language (a code is not).
            if config in (language, self.language) or _read_per_language(names[position - 1])
        ]
        return QuestionWords.of(list(row.lexemes or []), readings, language, self.language)

    @replica_read
    async def admitted(self, scope: DocumentScope, chunks: Sequence[Chunk]) -> set[str]:
        """The ids of those of `chunks` that a wide scope holds: their document is in it and
        answers with the chunk's version (what the vector index found, checked)."""
        if scope.condition is None or not chunks:
            return set()
        ids = list({chunk.document_id for chunk in chunks})
        parameters = dict(scope.condition.parameters) | {"ids": ids}
        async with self.sessionmaker() as session:
            answering = await repository.answering_versions(
                session, scope.condition.sql, parameters
            )
        return {chunk.id for chunk in chunks if answering.get(chunk.document_id) == chunk.version}

    @replica_read
    async def documents_of(self, scope: DocumentScope, owner_id: uuid.UUID) -> list[DocumentRef]:
        """The documents of one owner that a wide scope holds (to search that owner's vectors
        with a filter, when the nearest ones were mostly outside the scope)."""
        if scope.condition is None:
            return [ref for ref in scope if ref.owner_id == owner_id]
        parameters = dict(scope.condition.parameters) | {"owner": owner_id}
        async with self.sessionmaker() as session:
            rows = await repository.owned_in(session, scope.condition.sql, parameters)
            return [DocumentRef(row.id, row.owner_id, row.version) for row in rows]

    @replica_read
    async def passages_of(self, chunks: Sequence[Chunk]) -> dict[str, Chunk]:
        """Each of `chunks` whose document still answers with the chunk's version, as stored
        (text, page, location, file name), by chunk id (`Chunk.id`)."""
        if not chunks:
            return {}
        wanted = {
            "documents": [chunk.document_id for chunk in chunks],
            "indexes": [chunk.chunk_index for chunk in chunks],
            "versions": [chunk.version for chunk in chunks],
        }
        async with self.sessionmaker() as session:
            found = [_chunk_of(row) for row in await repository.passages_of(session, wanted)]
        return {chunk.id: chunk for chunk in found}

    @replica_read
    async def document_part(
        self,
        document: DocumentRef,
        *,
        pages: tuple[int | None, int | None] = (None, None),
        place: str | None = None,
        start: int = 0,
        limit: int,
    ) -> list[Chunk]:
        """Up to `limit` chunks of `document`'s answering version, in reading order, from chunk
        `start`: those on `pages` (first, last; None leaves that end open), or whose place (a
        heading path, a slide, a sheet's rows) holds `place` (case ignored)."""
        wanted = {
            "document": document.id,
            "version": document.version,
            "start": max(start, 0),
            "page_from": pages[0],
            "page_to": pages[1],
            "place": containing(place) if place else None,
            "limit": limit,
        }
        async with self.sessionmaker() as session:
            rows = await repository.part_of_document(session, wanted)
        return [_chunk_of(row) for row in rows]

    @replica_read
    async def document_chunks(self, documents: Sequence[DocumentRef]) -> list[Chunk]:
        """Every chunk of `documents`, each document's in reading order, documents as given."""
        if not documents:
            return []
        order = {document.id: position for position, document in enumerate(documents)}
        async with self.sessionmaker() as session:
            rows = await repository.chunks_of_documents(session, list(order))
            chunks = [_chunk_of(row) for row in rows]
        return sorted(chunks, key=lambda chunk: (order[chunk.document_id], chunk.chunk_index))
