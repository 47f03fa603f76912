"""A document's own date, read from what its file or its source says: PDF metadata
(`D:20230401093000+02'00'`), ISO 8601 (Office and OpenDocument properties, EPUB, HTML meta,
sitemaps), HTTP dates (`Last-Modified`), file modification times.

The day is kept as the file wrote it (a PDF saved at 00:30 in Berlin is dated that day, not the
day before in UTC). Whatever a file says is untrusted: a date that cannot be read, or one no
document can have (before 1900, or in the future), is no date, and never an error.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import re
from collections.abc import Iterable

EARLIEST = dt.date(1900, 1, 1)
# Longer than any date field a file has any reason to hold: the rest is not read.
MAX_CHARS = 100

_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?![\d])")
_PDF = re.compile(r"(?:D:)?(\d{4})(\d{2})(\d{2})")


def plausible(day: dt.date | None) -> dt.date | None:
    """`day`, unless no document could be dated so (before 1900, or after tomorrow)."""
    if day is None:
        return None
    tomorrow = dt.datetime.now(dt.UTC).date() + dt.timedelta(days=1)
    return day if EARLIEST <= day <= tomorrow else None


def _day(year: str, month: str, day: str) -> dt.date | None:
    try:
        return plausible(dt.date(int(year), int(month), int(day)))
    except ValueError:
        return None


def iso_date(value: object) -> dt.date | None:
    """The day of an ISO 8601 date or date-time (`2023-04-01`, `2023-04-01T09:30:00Z`), as
    written; None for anything else, a year or a month alone included."""
    if not isinstance(value, str):
        return None
    match = _ISO.match(value.strip()[:MAX_CHARS])
    return _day(*match.groups()) if match else None


def pdf_date(value: object) -> dt.date | None:
    """The day of a PDF date string (`D:YYYYMMDDHHmmSSOHH'mm'`, ISO 32000 7.9.4), also without
    its `D:` prefix, as many writers leave it out; None when it gives no whole day."""
    if not isinstance(value, str):
        return None
    match = _PDF.match(value.strip()[:MAX_CHARS])
    return _day(*match.groups()) if match else None


def http_date(value: object) -> dt.date | None:
    """The day (UTC) of an HTTP or e-mail date (`Sat, 01 Apr 2023 09:30:00 GMT`)."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        moment = email.utils.parsedate_to_datetime(value.strip()[:MAX_CHARS])
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC)
    return plausible(moment.date())


def any_date(value: object) -> dt.date | None:
    """The day of a date in any of the forms above (HTML `<meta>` holds them all)."""
    return iso_date(value) or http_date(value) or pdf_date(value)


def timestamp_date(seconds: float | None) -> dt.date | None:
    """The day (UTC) of a POSIX time, such as a file's modification time."""
    if seconds is None:
        return None
    try:
        return plausible(dt.datetime.fromtimestamp(seconds, dt.UTC).date())
    except (OverflowError, OSError, ValueError):
        return None


def moment_date(moment: dt.datetime | None) -> dt.date | None:
    """The day (UTC) of a moment a library gives (an S3 object's `LastModified`)."""
    if not isinstance(moment, dt.datetime):
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC)
    return plausible(moment.date())


def first_date(candidates: Iterable[dt.date | None]) -> dt.date | None:
    """The first of `candidates` that is a date (they come in order of preference)."""
    return next((day for day in candidates if day is not None), None)
