"""Filters on a question's documents by what is known of each (its name, kind, date,
collection, language), and the catalogue port that applies them within a scope.

A filter only ever narrows: the catalogue reads the documents of a scope the owner-scoped
query already resolved (`documents.catalogue`), so no filter can reach a document the asker
may not read. Research mode's tools take them from the model (`retrieval.research_tools`);
plain questions take them from the caller (`options.filters`).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import ConfigDict, Field, model_validator

from docchat.extraction.kinds import FORMATS, FileKind
from docchat.kit.schemas import RequestModel
from docchat.retrieval.index import DocumentRef, DocumentScope, SearchScope

FILTER_FIELDS = frozenset(
    {"name", "kind", "kinds", "date_from", "date_to", "year", "years", "collection", "language"}
)
YEARS_AT_MOST = 10
NAME_FILTER_CHARS = 120
COLLECTION_FILTER_CHARS = 120
# The kinds a filter may name: the short names people use ("pdf", "docx", "image").
KIND_NAMES: dict[str, tuple[FileKind, ...]] = {
    **{kind.name: (kind,) for kind in FileKind},
    "image": (FileKind.png, FileKind.jpeg, FileKind.tiff),
    "word": (FileKind.docx, FileKind.odt),
    "spreadsheet": (FileKind.xlsx, FileKind.csv),
    "slides": (FileKind.pptx,),
    "md": (FileKind.markdown,),
    "txt": (FileKind.text,),
}


class FilterError(ValueError):
    """A filter that cannot be applied, with what to send instead."""


@dataclass(frozen=True)
class DocumentFilters:
    """What a document must be to stay in a scope; every field that is set must hold."""

    # A piece of the file name (case ignored).
    name: str | None = None
    kinds: tuple[FileKind, ...] = ()
    # The document's own date, else the day it was uploaded, within these days (inclusive).
    date_from: dt.date | None = None
    date_to: dt.date | None = None
    # Dated in one of these years (its own date, else its upload's), or named with one.
    years: tuple[int, ...] = ()
    # A collection the asker belongs to, by name (case ignored).
    collection: str | None = None
    # A language its passages are in (ISO 639-1: "de").
    language: str | None = None

    @property
    def empty(self) -> bool:
        return self == DocumentFilters()

    def describe(self) -> str:
        """The filters in a few words, for a research step: 'PDF, 2023-01-01 to 2023-12-31'."""
        said = []
        if self.name:
            said.append(f"named like '{self.name}'")
        if self.kinds:
            said.append(" or ".join(dict.fromkeys(FORMATS[kind].label for kind in self.kinds)))
        if self.date_from or self.date_to:
            start = self.date_from.isoformat() if self.date_from else "…"
            end = self.date_to.isoformat() if self.date_to else "…"
            said.append(f"dated {start} to {end}")
        if self.years:
            said.append(f"of {' or '.join(str(year) for year in self.years)}")
        if self.collection:
            said.append(f"in {self.collection}")
        if self.language:
            said.append(f"in language {self.language}")
        return ", ".join(said)

    @classmethod
    def parse(cls, given: Mapping[str, Any]) -> DocumentFilters:
        """Filters from JSON (a tool call's arguments, a request's `filters`); `FilterError`
        says what is wrong with them."""
        unknown = set(given) - FILTER_FIELDS
        if unknown:
            raise FilterError(f"Unknown filter {sorted(unknown)[0]!r}")
        kinds_given = given.get("kinds", given.get("kind"))
        years_given = given.get("years", given.get("year"))
        return cls(
            name=_text(given.get("name"), "name", NAME_FILTER_CHARS),
            kinds=_kinds(kinds_given),
            date_from=_date(given.get("date_from"), "date_from"),
            date_to=_date(given.get("date_to"), "date_to"),
            years=_years(years_given),
            collection=_text(given.get("collection"), "collection", COLLECTION_FILTER_CHARS),
            language=_language(given.get("language")),
        )


def _text(value: Any, field: str, limit: int) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise FilterError(f"`{field}` must be a string")
    text = " ".join(value.split())
    if len(text) > limit:
        raise FilterError(f"`{field}` is longer than {limit} characters")
    return text or None


def _kinds(value: Any) -> tuple[FileKind, ...]:
    if value is None or value == "" or value == []:
        return ()
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise FilterError('`kind` must be a kind\'s name or a list of them, e.g. "pdf"')
    kinds: list[FileKind] = []
    for name in names:
        found = KIND_NAMES.get(name.strip().lower().lstrip("."))
        if found is None:
            known = ", ".join(sorted(KIND_NAMES))
            raise FilterError(f"Unknown kind {name!r}; the kinds are {known}")
        kinds.extend(found)
    return tuple(dict.fromkeys(kinds))


def _date(value: Any, field: str) -> dt.date | None:
    if value is None or value == "":
        return None
    if isinstance(value, dt.date):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and 1000 <= value <= 9999:
        value = str(value)
    if not isinstance(value, str):
        raise FilterError(f"`{field}` must be a date such as 2024-03-31, or a year")
    text = value.strip()
    if len(text) == 4 and text.isdigit():  # a year: its first or last day
        year = int(text)
        return dt.date(year, 1, 1) if field == "date_from" else dt.date(year, 12, 31)
    try:
        return dt.date.fromisoformat(text[:10])
    except ValueError:
        raise FilterError(f"`{field}` must be a date such as 2024-03-31, or a year") from None


def _years(value: Any) -> tuple[int, ...]:
    if value is None or value == "" or value == []:
        return ()
    given = value if isinstance(value, list) else [value]
    years: list[int] = []
    for year in given:
        if isinstance(year, str) and year.strip().isdigit():
            year = int(year.strip())
        if not isinstance(year, int) or isinstance(year, bool) or not 1000 <= year <= 9999:
            raise FilterError("`year` must be a year such as 2024, or a list of them")
        years.append(year)
    if len(years) > YEARS_AT_MOST:
        raise FilterError(f"`year` names more than {YEARS_AT_MOST} years")
    return tuple(sorted(set(years)))


def _language(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not (2 <= len(value.strip()) <= 3) or not value.isalpha():
        raise FilterError('`language` must be a two-letter language code, such as "de"')
    return value.strip().lower()


@dataclass(frozen=True)
class CatalogueEntry:
    """A document of a scope as a listing shows it."""

    ref: DocumentRef
    filename: str
    kind: FileKind | None
    document_date: dt.date | None
    uploaded: dt.date | None
    size_bytes: int
    pages: int | None
    passages: int | None


@dataclass(frozen=True)
class Listing:
    entries: list[CatalogueEntry]
    # Documents that match in all (more than `entries` when the listing was cut).
    total: int


class DocumentCatalogue(Protocol):
    """The documents of a scope by what is known of them (the documents package's SQL)."""

    async def listing(
        self,
        documents: SearchScope,
        filters: DocumentFilters,
        reader: uuid.UUID | None,
        limit: int,
    ) -> Listing:
        """The first `limit` documents of `documents` that match, newest first, and how many
        match in all."""
        ...

    async def narrowed(
        self, documents: SearchScope, filters: DocumentFilters, reader: uuid.UUID | None
    ) -> DocumentScope:
        """The documents of `documents` that match, as a scope to search (possibly empty)."""
        ...

    async def named(self, documents: SearchScope, question: str) -> DocumentScope:
        """The documents of `documents` that `question` names (`named_in_question.names`)."""
        ...


class FilterFields(RequestModel):
    """`filters` of a request: only documents that match every filter given are searched."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(
        None, max_length=NAME_FILTER_CHARS, description="A piece of the file name (case ignored)"
    )
    kind: str | list[str] | None = Field(
        None,
        description="A kind of file or a list of them: pdf, docx, xlsx, pptx, csv, markdown, "
        "text, html, epub, odt, image, word, spreadsheet, slides",
    )
    date_from: str | None = Field(
        None,
        max_length=10,
        description="Dated on or after this day (2024-01-31) or year (2024): the document's "
        "own date, else its upload",
    )
    date_to: str | None = Field(None, max_length=10, description="Dated on or before")
    year: int | list[int] | None = Field(
        None,
        description="Of this year or one of these (2023, [2023, 2024]): dated in it (its own "
        "date, else its upload) or with the year in its file name",
    )
    collection: str | None = Field(
        None,
        max_length=COLLECTION_FILTER_CHARS,
        description="A collection you belong to, by (a piece of) its name",
    )
    language: str | None = Field(None, max_length=3, description="A language code: en, de")

    @model_validator(mode="after")
    def _applies(self) -> FilterFields:
        self.filters()  # a FilterError is a ValueError: the request is refused with its text
        return self

    def filters(self) -> DocumentFilters:
        return DocumentFilters.parse(self.model_dump(exclude_none=True))
