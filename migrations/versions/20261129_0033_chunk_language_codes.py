"""Chunk language codes and folded lexemes: a question is searched in its scope's languages,
and a name matches with or without its accents

`document_chunks.language_code` is the chunk's language as told (ISO 639-1: `de`, `zh`), so that
the languages of a question's scope can be read (`retrieval.repository.scope_languages`, through
the new index on it); `language` stays the text search configuration, which says `simple` for
Chinese, Japanese and Korean alike. Rows written before get the code their configuration names
(`simple` rows by their script); rows without a configuration (before 0023) stay untold.

Every lexeme is folded (`docchat_folded`: "müller" -> "muller", "ß" -> "ss"), in the index and
in the question alike, after the language's stemmer read the words as written: German's stemmer
folded umlauts and English's, French's or Spanish's did not, so "Müller" in an English passage
and "Muller" in a question (or the other way) never met. The rows written before are folded
here, as a new row would be.

Downgrade drops the code and the function; the lexemes stay folded (`docchat reindex` writes
them again as an earlier version would).

Revision ID: 0033
Revises: 0032
Create Date: 2026-11-29 10:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0033"
down_revision: str | None = "0032"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Lower-case Latin letters with diacritics (a lexeme is lower case), by the letter each folds to;
# the letters that fold to two are replaced after. Combining marks (a decomposed "ü") go.
_FOLDS = {
    "a": "àáâãäåāăąǎ",
    "c": "çćĉċč",
    "d": "ďđð",
    "e": "èéêëēĕėęě",
    "g": "ĝğġģ",
    "h": "ĥħ",
    "i": "ìíîïĩīĭįıǐ",
    "j": "ĵ",
    "k": "ķ",
    "l": "ĺļľŀł",
    "n": "ñńņň",
    "o": "òóôõöøōŏőǒ",
    "r": "ŕŗř",
    "s": "śŝşšș",
    "t": "ţťŧț",
    "u": "ùúûüũūŭůűųǔǖǘǚǜ",
    "w": "ŵ",
    "y": "ýÿŷ",
    "z": "źżž",
}
_ACCENTED = "".join(_FOLDS.values())
_FOLDED = "".join(base * len(letters) for base, letters in _FOLDS.items())

FOLDED_FUNCTION = f"""
CREATE OR REPLACE FUNCTION docchat_folded(vector tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT CAST(
    replace(replace(replace(replace(
        translate(regexp_replace(CAST(vector AS text), '[\\u0300-\\u036f]', '', 'g'),
                  '{_ACCENTED}', '{_FOLDED}'),
        'ß', 'ss'), 'æ', 'ae'), 'œ', 'oe'), 'þ', 'th')
    AS tsvector)
$$
"""

_CODES = {
    "arabic": "ar",
    "armenian": "hy",
    "basque": "eu",
    "catalan": "ca",
    "danish": "da",
    "dutch": "nl",
    "english": "en",
    "finnish": "fi",
    "french": "fr",
    "german": "de",
    "greek": "el",
    "hindi": "hi",
    "hungarian": "hu",
    "indonesian": "id",
    "irish": "ga",
    "italian": "it",
    "lithuanian": "lt",
    "nepali": "ne",
    "norwegian": "no",
    "portuguese": "pt",
    "romanian": "ro",
    "russian": "ru",
    "serbian": "sr",
    "spanish": "es",
    "swedish": "sv",
    "tamil": "ta",
    "turkish": "tr",
}
_CODE_OF_CONFIGURATION = (
    "CASE language "
    + " ".join(f"WHEN '{name}' THEN '{code}'" for name, code in _CODES.items())
    + (
        " WHEN 'simple' THEN CASE WHEN text ~ '[\\u3040-\\u30ff]' THEN 'ja'"
        " WHEN text ~ '[\\uac00-\\ud7af]' THEN 'ko' ELSE 'zh' END END"
    )
)


def upgrade() -> None:
    op.execute(FOLDED_FUNCTION)
    # No default: adding a nullable column is instant on a large table.
    op.add_column("document_chunks", sa.Column("language_code", sa.String(8), nullable=True))
    # One pass over the rows: each written once, with its code and its folded lexemes.
    op.execute(
        f"UPDATE document_chunks SET language_code = {_CODE_OF_CONFIGURATION}, "  # noqa: S608
        "tsv = docchat_folded(tsv)"
    )
    # Built concurrently (outside the upgrade's transaction, committed up to here), as 0008's.
    with op.get_context().autocommit_block():
        op.create_index(
            "ix_document_chunks_language_code",
            "document_chunks",
            ["language_code", "document_id"],
            postgresql_concurrently=True,
        )


def downgrade() -> None:
    op.drop_index("ix_document_chunks_language_code", table_name="document_chunks")
    op.drop_column("document_chunks", "language_code")
    op.execute("DROP FUNCTION IF EXISTS docchat_folded(tsvector)")
