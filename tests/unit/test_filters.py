"""Filters on a question's documents (`retrieval.filters`), as a request or a model gives
them: what they accept, and what they refuse with a message that says what to send."""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import ValidationError

from docchat.extraction.kinds import FileKind
from docchat.retrieval.filters import DocumentFilters, FilterError, FilterFields


def test_filters_read_kinds_years_and_dates() -> None:
    filters = DocumentFilters.parse(
        {"kind": ["PDF", ".docx", "image"], "date_from": "2023", "date_to": 2024, "language": "DE"}
    )
    assert filters.kinds == (
        FileKind.pdf,
        FileKind.docx,
        FileKind.png,
        FileKind.jpeg,
        FileKind.tiff,
    )
    assert filters.date_from == dt.date(2023, 1, 1) and filters.date_to == dt.date(2024, 12, 31)
    assert filters.language == "de"
    assert (
        filters.describe()
        == "PDF or Word file or image, dated 2023-01-01 to 2024-12-31, in language de"
    )


def test_empty_filters_are_no_filter() -> None:
    assert DocumentFilters.parse({"name": "", "kind": [], "date_from": None}).empty
    assert not DocumentFilters.parse({"name": "  contract \n"}).empty
    assert DocumentFilters.parse({"name": "  contract \n"}).name == "contract"


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"kind": "exe"}, "Unknown kind 'exe'"),
        ({"kind": 3}, "`kind` must be a kind's name"),
        ({"date_from": "next week"}, "`date_from` must be a date"),
        ({"date_to": True}, "`date_to` must be a date"),
        ({"language": "german"}, "`language` must be a two-letter language code"),
        ({"name": "x" * 500}, "`name` is longer than 120 characters"),
        ({"document_id": "x"}, "Unknown filter 'document_id'"),
    ],
)
def test_a_filter_that_cannot_apply_says_what_to_send(given: dict[str, object], said: str) -> None:
    with pytest.raises(FilterError, match=said):
        DocumentFilters.parse(given)


def test_a_request_s_filters_are_checked_when_they_come() -> None:
    assert FilterFields(kind="pdf").filters().kinds == (FileKind.pdf,)
    with pytest.raises(ValidationError, match="Unknown kind 'exe'"):
        FilterFields(kind="exe")
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        FilterFields.model_validate({"owner_id": "x"})
