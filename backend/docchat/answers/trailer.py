"""The verdict a model states at the end of a grounded answer, read and taken out of its text.

The grounded prompt asks the model to end with a line such as `Evidence: answered` (or `partial`,
or `none` when the passages do not answer), and, when passages disagree, `Conflict: 1, 3`. The
reader never sees these lines: `TrailerFilter` holds back, as the answer streams, what may be the
start of one, and `split` reads them off the whole answer. Models write them loosely (bold, a
missing colon, on the answer's last line rather than one of their own), and small ones often
not at all: a trailer that cannot be read is left out of the verdict, never out of the answer
(what is not a trailer stays in the text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

Stated = Literal["answered", "partial", "none"]

# A trailer line as a model may format it: "**Evidence:** answered.", "Conflict: [1], [3]".
_DECORATION = r"[ \t*_>#`-]*"
_EVIDENCE = re.compile(
    rf"{_DECORATION}evidence{_DECORATION}:?{_DECORATION}"
    r"(answered|partial|none|not[ _]in[ _](?:the[ _])?documents)"
    rf"{_DECORATION}\.?{_DECORATION}",
    re.IGNORECASE,
)
_CONFLICT = re.compile(
    rf"{_DECORATION}conflicts?{_DECORATION}:?{_DECORATION}"
    r"(none|no|\[?\d+\]?(?:\s*(?:,|and|&|vs\.?|versus)?\s*\[?\d+\]?)*)"
    rf"{_DECORATION}\.?{_DECORATION}",
    re.IGNORECASE,
)
# Where a trailer line may start: a line's start, or after a sentence's end on the same line.
_LINE_START = re.compile(r"(?:^|\n|(?<=[.!?\]])[ \t]+)")
_KEYWORDS = ("evidence", "conflict")


@dataclass(frozen=True)
class Trailer:
    """What the model said about its answer: its verdict and the passages it found disagreeing."""

    evidence: Stated | None = None
    conflicting: tuple[int, ...] = ()


@dataclass(frozen=True)
class Split:
    body: str
    trailer: Trailer = field(default_factory=Trailer)


def _stated(word: str) -> Stated:
    word = word.lower()
    if word.startswith("not"):
        return "none"
    return "answered" if word == "answered" else "partial" if word == "partial" else "none"


def _read_line(line: str, trailer: Trailer) -> Trailer | None:
    """The trailer with `line` read into it; None when the line is not a trailer line."""
    evidence = _EVIDENCE.fullmatch(line)
    if evidence is not None:
        return Trailer(_stated(evidence.group(1)), trailer.conflicting)
    conflict = _CONFLICT.fullmatch(line)
    if conflict is not None:
        numbers = tuple(dict.fromkeys(int(n) for n in re.findall(r"\d+", conflict.group(1))))
        return Trailer(trailer.evidence, numbers if len(numbers) > 1 else ())
    return None


def split(answer: str) -> Split:
    """The answer without its trailer lines at the end, and what they said."""
    body = answer.rstrip()
    trailer = Trailer()
    read_any = False
    while True:
        starts = [match.end() for match in _LINE_START.finditer(body)]
        read = None
        for start in starts[-3:]:  # the trailer's line is one of the last few
            read = _read_line(body[start:], trailer)
            if read is not None:
                body, trailer, read_any = body[:start].rstrip(), read, True
                break
        if read is None:
            return Split(body if read_any else answer, trailer)


# What a trailer line reads as while it is being written, decoration left out.
_FORMS = (
    "evidence: answered",
    "evidence: partial",
    "evidence: none",
    "evidence: not in documents",
    "evidence: not in the documents",
    "evidence: not_in_documents",
)
_CONFLICT_SO_FAR = re.compile(r"conflicts?:? ?[\d ,\[\]&.andvsoe]*")


def _may_become_trailer(text: str) -> bool:
    """Whether `text`, the end of an answer so far from a line's start, is or may become a
    trailer line."""
    if _read_line(text, Trailer()) is not None:
        return True
    if "\n" in text.strip():
        return False
    plain = " ".join(re.sub(r"[*_>#`]", " ", text.lower()).split()).replace(" :", ":")
    if not plain:
        return False
    colon_optional = plain.replace("evidence ", "evidence: ", 1)
    return any(form.startswith(colon_optional) for form in _FORMS) or bool(
        _CONFLICT_SO_FAR.fullmatch(plain)
    )


class TrailerFilter:
    """Holds back, as the answer streams, what may be a trailer line at its end; `flush` gives
    back what turned out not to be one."""

    def __init__(self) -> None:
        self._held = ""
        # The last character let through: whether the next piece starts a line or a sentence.
        self._before = "\n"

    def feed(self, piece: str) -> str:
        text = self._held + piece
        if not text:
            return ""
        framed = self._before + text
        for match in _LINE_START.finditer(framed):
            start = match.end() - 1
            if 0 <= start < len(text) and _may_become_trailer(text[start:]):
                held_from = max(0, match.start() - 1) if match.start() > 0 else 0
                return self._let_through(text[:held_from], text[held_from:])
        return self._let_through(text, "")

    def _let_through(self, shown: str, held: str) -> str:
        self._held = held
        if shown:
            self._before = shown[-1]
        return shown

    def flush(self) -> str:
        """What was held and is not a trailer (the caller reads the trailer off the whole
        answer with `split`)."""
        held, self._held = self._held, ""
        return held if split(held).body == held else ""
