"""Running headers, footers and page numbers taken out of a PDF's page texts.

A book or a report repeats a line at the top or the bottom of its pages: the page number
("3", "Page 3 of 10"), a section title with it ("8 1.2. METRISCHE RÄUME"), the title of the
report. Left in, it lands in the middle of chunks that run across pages and matches every
question about the report's title. A first or last line of a page is running when:

- it gives the page's number, shifted by the same amount (front matter numbered apart) on at
  least `MIN_PAGES` pages at that end: "8 1.2. METRISCHE RÄUME" on page 11, "9 ..." on 12; or
- it is the same line at that end of at least `MIN_PAGES` pages and `MIN_SHARE` of them.

Only short lines count (`MAX_CHARS`): a paragraph's line that happens to hold a number is not
taken for a page number.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Sequence

from docchat.extraction.reader import PageText

MIN_PAGES = 3
MIN_SHARE = 0.5
MAX_CHARS = 80
_NUMBER = re.compile(r"(?<![\w.,])\d{1,4}(?![\w,]|\.\d)")

# (the page's number, its line at that end) -> (page, line)
_Ends = list[tuple[int, str]]


def without_running_lines(pages: Sequence[PageText]) -> list[PageText]:
    """`pages` (a PDF's parts, in page order) without the running lines at either end of their
    pages; the text of a part with a location of its own (a table) is kept as it is."""
    first_part, last_part = _prose_ends(pages)
    running_top = _running(_ends(pages, first_part, _first))
    running_bottom = _running(_ends(pages, last_part, _last))
    kept: list[PageText] = []
    for index, part in enumerate(pages):
        text, page = part.text, part.page or 0
        # A page's only line stays, whatever it is (a PDF of the same line on every page).
        if index in first_part and _many_lines(text) and running_top(page, _first(text)):
            text = _drop_first(text)
        if index in last_part and _many_lines(text) and running_bottom(page, _last(text)):
            text = _drop_last(text)
        kept.append(part if text == part.text else dataclasses.replace(part, text=text))
    return kept


def _prose_ends(pages: Sequence[PageText]) -> tuple[set[int], set[int]]:
    """The indexes of each page's first and last part of its own running text."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for index, part in enumerate(pages):
        if part.page is None or part.location is not None or not part.text.strip():
            continue
        first.setdefault(part.page, index)
        last[part.page] = index
    return set(first.values()), set(last.values())


def _ends(pages: Sequence[PageText], parts: set[int], line: Callable[[str], str]) -> _Ends:
    """Each page's line at one end: `line` of the parts at that end."""
    return [(pages[i].page or 0, line(pages[i].text)) for i in sorted(parts)]


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _many_lines(text: str) -> bool:
    return len(_lines(text)) >= 2


def _first(text: str) -> str:
    lines = _lines(text)
    return lines[0].strip() if lines else ""


def _last(text: str) -> str:
    lines = _lines(text)
    return lines[-1].strip() if lines else ""


def _drop_first(text: str) -> str:
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip())
    return "\n".join(lines[at + 1 :])


def _drop_last(text: str) -> str:
    lines = text.splitlines()
    at = max(i for i, line in enumerate(lines) if line.strip())
    return "\n".join(lines[:at])


def _shifts(page: int, line: str) -> set[int]:
    """How far each number of a short line is from the page's number."""
    if len(line) > MAX_CHARS:
        return set()
    return {int(found.group()) - page for found in _NUMBER.finditer(line)}


def _running(ends: _Ends) -> Callable[[int, str], bool]:
    """Whether a page's line at this end is a running one."""
    shifts = Counter(shift for page, line in ends for shift in _shifts(page, line))
    numbering = {shift for shift, count in shifts.items() if count >= MIN_PAGES}
    repeated = Counter(line for _, line in ends if line and len(line) <= MAX_CHARS)
    enough = max(MIN_PAGES, MIN_SHARE * len(ends))
    same = {line for line, count in repeated.items() if count >= enough}

    def is_running(page: int, line: str) -> bool:
        return bool(line) and (line in same or bool(_shifts(page, line) & numbering))

    return is_running
