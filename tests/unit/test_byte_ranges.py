"""The `Range` header of a download from the bucket: one range served, anything else whole."""

from __future__ import annotations

import pytest

from docchat.documents.storage import RangeNotSatisfiable, content_disposition, single_range


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("bytes=0-99", (0, 99)),
        ("bytes=10-", (10, 999)),
        ("bytes=-1", (999, 999)),
        ("bytes=-5000", (0, 999)),  # more than the file: all of it
        ("bytes=990-5000", (990, 999)),
        ("Bytes = 5-6", (5, 6)),
        (None, None),
        ("", None),
        ("items=0-5", None),
        ("bytes=0-1,5-9", None),  # several ranges: the whole file
        ("bytes=9-5", None),
        ("bytes=a-5", None),
        ("bytes=-", None),
        ("bytes=5", None),
    ],
)
def test_one_range_is_read_and_anything_else_means_the_whole_file(
    header: str | None, expected: tuple[int, int] | None
) -> None:
    assert single_range(header, 1000) == expected


@pytest.mark.parametrize(
    ("header", "size"), [("bytes=1000-", 1000), ("bytes=-0", 1000), ("bytes=0-", 0)]
)
def test_a_range_past_the_end_cannot_be_served(header: str, size: int) -> None:
    with pytest.raises(RangeNotSatisfiable):
        single_range(header, size)


def test_a_file_name_outside_ascii_is_given_in_utf8() -> None:
    assert content_disposition("notes.pdf") == 'inline; filename="notes.pdf"'
    assert content_disposition("Grüße.pdf") == "inline; filename*=utf-8''Gr%C3%BC%C3%9Fe.pdf"
