"""All SQL of the lexical index (`lexical.py`): BM25 over `document_chunks`, the question's
lexemes, the statistics and totals it reads, and the chunks' rows. The ranking itself is SQL:
what each statement computes is explained beside it; `lexical.py` decides which to run."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, TextClause, delete, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.retrieval.models import OUTDATED_ROWS, DocumentChunk

# The question's lexemes (PostgreSQL's parser and stemmer make them), and its names as each
# text search configuration this server has reads them (`:configs`, `:words`): the parallel
# arrays of the configuration, the name's position and the lexeme. The same statement has
# the rest of the search's transaction planned for its values: the best plan for BM25 depends
# on how many chunks hold each word and how wide the scope is, and after five runs of a prepared
# statement PostgreSQL may settle on a generic plan blind to both (measured over a 100k-chunk
# library: p50 20-22 ms with generic plans, 14 ms with plans made for each question).
# Every lexeme is folded as the chunks' are (`docchat_folded`, migration 0033: "müller" is
# "muller"), so a name matches whether or not the question writes its accents.
_LEXEMES = text(
    """
SELECT tsvector_to_array(docchat_folded(to_tsvector(CAST(:config AS regconfig), :question)))
       AS lexemes,
       set_config('plan_cache_mode', 'force_custom_plan', true) AS planning,
       r.configs, r.positions, r.readings
FROM (
    SELECT array_agg(c.config) AS configs, array_agg(w.position) AS positions,
           array_agg(l.lexeme) AS readings
    FROM unnest(CAST(:configs AS text[])) AS c(config)
    JOIN pg_ts_config t ON t.cfgname = c.config
    CROSS JOIN unnest(CAST(:words AS text[])) WITH ORDINALITY AS w(word, position)
    CROSS JOIN LATERAL unnest(tsvector_to_array(
        docchat_folded(to_tsvector(CAST(t.oid AS regconfig), w.word)))) AS l(lexeme)
) AS r
"""
)
# The scope's size and average length, from its documents' word totals (its chunks unread).
_SCOPE_TOTALS = text(
    """
SELECT CAST(coalesce(sum(chunk_count), 0) AS float8) AS n,
       coalesce(CAST(sum(token_count) AS float8) / nullif(sum(chunk_count), 0), 1) AS avgdl
FROM documents WHERE id = ANY(:documents)
"""
)
# PostgreSQL's own statistics of the column (kept by ANALYZE, up to 10,000 words with migration
# 0008): the installation's most common lexemes and the share of chunks holding each. The last
# three numbers of the shares array are the smallest share, the largest and the null share.
_COMMON_LEXEMES = text(
    """
SELECT CAST(CAST(s.most_common_elems AS text) AS text[]) AS lexemes,
       s.most_common_elem_freqs AS shares,
       (SELECT reltuples FROM pg_class WHERE oid = CAST('document_chunks' AS regclass)) AS rows
FROM pg_stats s
WHERE s.schemaname = current_schema() AND s.tablename = 'document_chunks' AND s.attname = 'tsv'
"""
)
# Candidates are the scope's chunks holding one of the `:query` lexemes; each keeps only the
# question's lexemes before they are counted. A lexeme's document frequency is counted over the
# candidates, unless `:known` gives it (common words that did not pick candidates).
# A name the question shares with a chunk in another language may be read otherwise there
# ("Kellmünz" is `kellmunz` in German, "Lindenhagen" `lindenhag`): the names' readings in the
# other configurations (`:variant_configs`, `:variant_lexemes`) count in the chunks of that
# configuration only, where they are the name, not a word of another language.
_BM25 = """
WITH question AS (
    SELECT CAST(:lexemes AS text[]) AS lexemes, CAST(:query AS tsquery) AS query
),
variant AS (
    SELECT v.config, array_agg(v.lexeme) AS lexemes
    FROM unnest(CAST(:variant_configs AS text[]), CAST(:variant_lexemes AS text[]))
    AS v(config, lexeme)
    GROUP BY v.config
),
matches AS (
    SELECT c.document_id, c.chunk_index, c.tokens, t.lexeme,
           CAST(coalesce(array_length(t.positions, 1), 1) AS float8) AS tf
    {candidates}
    LEFT JOIN variant v ON v.config = coalesce(c.language, :default_language)
    -- Only the question's lexemes, positions kept: weight them A, keep the A ones.
    CROSS JOIN LATERAL unnest(ts_filter(
        setweight(c.tsv, 'A', q.lexemes || coalesce(v.lexemes, CAST('{{}}' AS text[]))), '{{a}}'
    )) AS t
),
known AS (
    SELECT k.lexeme, k.df FROM unnest(CAST(:known AS text[]), CAST(:known_df AS float8[]))
    AS k(lexeme, df)
),
frequency AS (
    SELECT lexeme, CAST(count(*) AS float8) AS df FROM matches
    WHERE lexeme NOT IN (SELECT lexeme FROM known) GROUP BY lexeme
    UNION ALL
    SELECT lexeme, df FROM known
),
ranked AS (
    SELECT m.document_id, m.chunk_index,
           sum(ln(1 + (CAST(:n AS float8) - f.df + 0.5) / (f.df + 0.5))
               * m.tf * (CAST(:k1 AS float8) + 1)
               / (m.tf + CAST(:k1 AS float8)
                  * (1 - CAST(:b AS float8)
                     + CAST(:b AS float8) * m.tokens / CAST(:avgdl AS float8)))) AS score
    FROM matches m
    JOIN frequency f USING (lexeme)
    GROUP BY m.document_id, m.chunk_index
    ORDER BY score DESC, m.document_id, m.chunk_index
    LIMIT :limit
),
-- What a chunk holding each of the question's lexemes once would score: the sum of their IDFs
-- (a lexeme the scope does not hold counts with the IDF of df = 0). A chunk in another language
-- than the question's can only share its names, numbers and rare terms, and is judged on the
-- lexemes the scope holds (`present`): a German question's own words are not missing from an
-- English passage, they were never going to be in it.
-- (The names the question was also read for in the installation's language and the others,
-- `:own` false, count only there; the readings of one word, `:groups`, count once, the
-- heaviest held.)
idf AS (
    SELECT coalesce(f.df, 0) > 0 AS held, l.lexeme = ANY(CAST(:own AS text[])) AS own,
           l.word,
           ln(1 + (CAST(:n AS float8) - coalesce(f.df, 0) + 0.5) / (coalesce(f.df, 0) + 0.5))
           AS weight
    FROM unnest(CAST(:words AS text[]), CAST(:groups AS integer[])) AS l(lexeme, word)
    LEFT JOIN frequency f ON f.lexeme = l.lexeme
),
ideal AS (
    SELECT (SELECT sum(weight) FROM idf WHERE own) AS total,
           (SELECT sum(best) FROM (SELECT max(weight) AS best FROM idf WHERE held GROUP BY word)
            AS w) AS present
)
SELECT r.score,
       r.score / nullif(CASE WHEN coalesce(c.language, :default_language) = :question_language
                             THEN i.total ELSE i.present END, 0) AS coverage,
       c.document_id, c.chunk_index, c.page, c.location, c.text, d.owner_id, d.visibility,
       d.filename, d.version
FROM ranked r
CROSS JOIN ideal i
JOIN document_chunks c USING (document_id, chunk_index)
JOIN documents d ON d.id = c.document_id
ORDER BY r.score DESC, c.document_id, c.chunk_index
"""
# A small scope is read by key (its chunks are few; the fence keeps the planner from going
# through the word index, which would read the whole installation's matches).
_BM25_SCOPE_FIRST = text(
    _BM25.format(
        candidates="""FROM (SELECT * FROM document_chunks WHERE document_id = ANY(:documents)
          OFFSET 0) c
    JOIN question q ON c.tsv @@ q.query"""
    )
)
# A wide scope starts from the GIN index over `tsv`: only the chunks holding a candidate word
# are read, then those outside the scope are dropped.
_BM25_MATCHES_FIRST = text(
    _BM25.format(
        candidates="""FROM question q
    JOIN document_chunks c ON c.tsv @@ q.query AND c.document_id = ANY(:documents)"""
    )
)


@functools.cache
def _bm25_in(condition: str) -> TextClause:
    """BM25 over a wide scope given as a condition on its documents (`ScopeCondition`): the
    chunks holding a candidate word, kept when their document meets it. The scope's documents
    are never listed, so the cost is the candidates', whatever the scope's size."""
    return text(
        _BM25.format(
            candidates=f"""FROM question q
    JOIN document_chunks c ON c.tsv @@ q.query
    JOIN documents d ON d.id = c.document_id AND {condition}"""
        )
    )


# Which of the named documents (at which version) a wide scope holds, and those of one owner.
@functools.cache
def _admitted(condition: str) -> TextClause:
    return text(
        f"SELECT d.id, d.version FROM documents d WHERE d.id = ANY(:ids) AND {condition}"  # noqa: S608
    )


@functools.cache
def _owned_in(condition: str) -> TextClause:
    return text(
        "SELECT d.id, d.owner_id, d.version FROM documents d "  # noqa: S608
        f"WHERE d.owner_id = :owner AND {condition}"
    )


_CHUNKS_OF_DOCUMENTS = text(
    "SELECT c.document_id, c.chunk_index, c.page, c.location, c.text, d.owner_id, "
    "d.visibility, d.filename, d.version "
    "FROM document_chunks c JOIN documents d ON d.id = c.document_id "
    "WHERE c.document_id = ANY(:documents) ORDER BY c.document_id, c.chunk_index"
)

# A part of one document in reading order: its chunks on pages `:page_from`..`:page_to`, or
# whose place (a heading path, a slide, a sheet) holds `:place`, from chunk `:start` on.
_PART_OF_DOCUMENT = text(
    """
SELECT c.document_id, c.chunk_index, c.page, c.location, c.text, d.owner_id, d.visibility,
       d.filename, d.version
FROM document_chunks c JOIN documents d ON d.id = c.document_id
WHERE c.document_id = :document AND d.version = :version AND c.chunk_index >= :start
  AND (CAST(:page_from AS integer) IS NULL OR c.page >= CAST(:page_from AS integer))
  AND (CAST(:page_to AS integer) IS NULL OR c.page <= CAST(:page_to AS integer))
  AND (CAST(:place AS text) IS NULL OR c.location ILIKE CAST(:place AS text) ESCAPE '\\')
ORDER BY c.chunk_index
LIMIT :limit
"""
)

# Chunks named by document, index and version, whole; a chunk whose document answers with
# another version by now (a new one was swapped in) is not returned.
_PASSAGES_OF_CHUNKS = text(
    """
SELECT c.document_id, c.chunk_index, c.page, c.location, c.text, d.owner_id, d.visibility,
       d.filename, d.version
FROM unnest(CAST(:documents AS uuid[]), CAST(:indexes AS integer[]), CAST(:versions AS integer[]))
     AS wanted(document_id, chunk_index, version)
JOIN documents d ON d.id = wanted.document_id AND d.version = wanted.version
JOIN document_chunks c
  ON c.document_id = wanted.document_id AND c.chunk_index = wanted.chunk_index
"""
)


# The languages of a scope's chunks (`language_code`; NULL: untold), in one statement that reads
# little whatever the scope's size: the codes the installation has, found by a walk of the index
# over (language_code, document_id) that jumps from one code to the next (a loose index scan: a
# few dozen steps at most), each then kept when a chunk of the scope has it (through the same
# index: the listed documents looked up under the code, or a wide scope's chunks of the code
# until one of its documents meets the condition).
_SCOPE_LANGUAGES = """
WITH RECURSIVE installed(code) AS (
    SELECT min(language_code) FROM document_chunks
    UNION ALL
    SELECT (SELECT min(c.language_code) FROM document_chunks c WHERE c.language_code > i.code)
    FROM installed i WHERE i.code IS NOT NULL
)
SELECT i.code FROM installed i
WHERE i.code IS NOT NULL
  AND EXISTS (SELECT 1 FROM document_chunks c {join} WHERE c.language_code = i.code {listed})
UNION ALL
SELECT NULL
WHERE EXISTS (SELECT 1 FROM document_chunks c {join} WHERE c.language_code IS NULL {listed})
"""
_LISTED_SCOPE_LANGUAGES = text(
    _SCOPE_LANGUAGES.format(join="", listed="AND c.document_id = ANY(:documents)")
)


@functools.cache
def _wide_scope_languages(condition: str) -> TextClause:
    joined = f"JOIN documents d ON d.id = c.document_id AND {condition}"
    return text(_SCOPE_LANGUAGES.format(join=joined, listed=""))


# One chunk's row, written again in place when a retried job writes it twice; its vector also
# holds its English gloss, read as English (`passage_glosses`; empty for English). One
# statement, prepared once and run for each row (asyncpg sends the rows together): a multi-row
# INSERT built with SQLAlchemy for each batch took 90 ms of the event loop to build for 500 rows
# (16 ms for 64), in the API's process where `docchat serve` runs the worker.
_UPSERT_CHUNK = text(
    """
INSERT INTO document_chunks
  (document_id, chunk_index, page, location, text, tokens, tsv, language, language_code,
   index_version)
VALUES (:document_id, :chunk_index, :page, :location, :text, :tokens,
        docchat_folded(to_tsvector(CAST(:language AS regconfig), :indexed)
                       || to_tsvector(CAST(:gloss_language AS regconfig), :gloss)), :language,
        :language_code, :index_version)
ON CONFLICT (document_id, chunk_index) DO UPDATE SET
  page = excluded.page, location = excluded.location, text = excluded.text,
  tokens = excluded.tokens, tsv = excluded.tsv, language = excluded.language,
  language_code = excluded.language_code, index_version = excluded.index_version
"""
)
# Rows an earlier version of the index wrote otherwise, a batch at a time, with the name of
# their document (its header is part of what BM25 reads), through the partial index on them;
# locked, so that two starting processes do not write the same ones.
_OUTDATED_ROWS = text(
    f"""
WITH outdated AS (
    SELECT document_id, chunk_index, text, language_code FROM document_chunks
    WHERE {OUTDATED_ROWS}
    ORDER BY document_id, chunk_index
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
SELECT o.document_id, o.chunk_index, o.text, o.language_code, d.filename
FROM outdated o JOIN documents d ON d.id = o.document_id
"""  # noqa: S608 (a constant predicate of the models, no input)
)
_REWRITE_ROW = text(
    """
UPDATE document_chunks
SET tsv = docchat_folded(to_tsvector(CAST(coalesce(language, :default_language) AS regconfig),
                                     :indexed)
                         || to_tsvector(CAST(:gloss_language AS regconfig), :gloss)),
    index_version = :index_version
WHERE document_id = :document_id AND chunk_index = :chunk_index
"""
)
_COUNT_OUTDATED = text(f"SELECT count(*) FROM document_chunks WHERE {OUTDATED_ROWS}")  # noqa: S608


async def read_question(session: AsyncSession, asked: dict[str, Any]) -> Row[Any]:
    """The question's lexemes and its names' readings (`_LEXEMES`)."""
    return (await session.execute(_LEXEMES, asked)).one()


async def scope_languages(
    session: AsyncSession, parameters: dict[str, Any], condition: str | None
) -> list[str | None]:
    """The language codes of the scope's chunks (None for chunks whose language was not told):
    of the listed documents `:documents`, or of a wide scope's `condition`."""
    statement = _LISTED_SCOPE_LANGUAGES if condition is None else _wide_scope_languages(condition)
    return list((await session.execute(statement, parameters)).scalars())


async def common_lexemes(session: AsyncSession) -> Row[Any] | None:
    """The installation's most common lexemes and their shares (`_COMMON_LEXEMES`)."""
    return (await session.execute(_COMMON_LEXEMES)).first()


async def scope_totals(session: AsyncSession, document_ids: Sequence[uuid.UUID]) -> Row[Any]:
    """The scope's chunk count `n` and average chunk length `avgdl`."""
    return (await session.execute(_SCOPE_TOTALS, {"documents": document_ids})).one()


async def bm25(
    session: AsyncSession, parameters: dict[str, Any], *, scope_first: bool, condition: str | None
) -> Sequence[Row[Any]]:
    """The best chunks by BM25: a small scope read by key (`scope_first`), a wide one given as
    a condition on its documents, or else the matches of a listed scope found through the
    word index."""
    if scope_first:
        statement = _BM25_SCOPE_FIRST
    elif condition is not None:
        statement = _bm25_in(condition)
    else:
        statement = _BM25_MATCHES_FIRST
    return (await session.execute(statement, parameters)).all()


async def answering_versions(
    session: AsyncSession, condition: str, parameters: dict[str, Any]
) -> dict[uuid.UUID, int]:
    """The version each of the documents `:ids` answers with, those a wide scope holds."""
    rows = await session.execute(_admitted(condition), parameters)
    return {row.id: row.version for row in rows}


async def owned_in(
    session: AsyncSession, condition: str, parameters: dict[str, Any]
) -> Sequence[Row[Any]]:
    """id, owner_id and version of the documents of `:owner` that a wide scope holds."""
    return (await session.execute(_owned_in(condition), parameters)).all()


async def passages_of(session: AsyncSession, wanted: dict[str, Any]) -> Sequence[Row[Any]]:
    """The chunks named by document, index and version, when that version still answers."""
    return (await session.execute(_PASSAGES_OF_CHUNKS, wanted)).all()


async def chunks_of_documents(
    session: AsyncSession, document_ids: Sequence[uuid.UUID]
) -> Sequence[Row[Any]]:
    """Every chunk of the documents, in document and reading order."""
    return (await session.execute(_CHUNKS_OF_DOCUMENTS, {"documents": document_ids})).all()


async def part_of_document(session: AsyncSession, wanted: dict[str, Any]) -> Sequence[Row[Any]]:
    """Up to `limit` chunks of one document's part (`_PART_OF_DOCUMENT`), in reading order."""
    return (await session.execute(_PART_OF_DOCUMENT, wanted)).all()


async def upsert_chunks(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Write the chunks' rows, each replacing the row it had."""
    await session.execute(_UPSERT_CHUNK, rows)


async def outdated_rows(session: AsyncSession, limit: int) -> Sequence[Row[Any]]:
    """Up to `limit` rows an earlier version of the index wrote otherwise, locked."""
    return (await session.execute(_OUTDATED_ROWS, {"limit": limit})).all()


async def rewrite_rows(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Write the rows' vectors again from `indexed`, at `index_version`."""
    await session.execute(_REWRITE_ROW, rows)


async def count_outdated_rows(session: AsyncSession) -> int:
    return int((await session.execute(_COUNT_OUTDATED)).scalar_one())


async def chunks_in_order(
    session: AsyncSession, document_id: uuid.UUID, skip: int, limit: int
) -> list[DocumentChunk]:
    statement = (
        select(DocumentChunk)
        .where(DocumentChunk.document_id == document_id)
        .order_by(DocumentChunk.chunk_index)
        .offset(skip)
        .limit(limit)
    )
    return list((await session.execute(statement)).scalars())


async def count_chunks(session: AsyncSession, document_id: uuid.UUID) -> int:
    statement = select(func.count()).where(DocumentChunk.document_id == document_id)
    return int((await session.execute(statement)).scalar_one())


async def delete_chunks(session: AsyncSession, document_id: uuid.UUID) -> None:
    await session.execute(delete(DocumentChunk).where(DocumentChunk.document_id == document_id))
