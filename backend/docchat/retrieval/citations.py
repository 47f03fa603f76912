"""Citation post-processing: keep cited sources, merge same (document, page), renumber [n]."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from docchat.retrieval.schemas import Source

MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
# A marker with the spaces before it, so that removing it leaves no gap ("word [9]." -> "word.").
SPACED_MARKER = re.compile(r"([ \t]*)\[(\d+(?:\s*,\s*\d+)*)\]")
REPEATED_MARKER = re.compile(r"(\[\d+\])(?:\s*\1)+")
# Phrases with which a model says the context did not hold the answer (seed 001's check).
INSUFFICIENT_PHRASES = (
    "do not contain information",
    "does not contain information",
    "don't contain information",
    "doesn't contain information",
    "do not contain any information",
    "does not contain any information",
    "do not provide information",
    "does not provide information",
    "not mentioned in the",
    "no information about",
    "no relevant information",
    "not enough information",
    "insufficient information",
    "cannot find",
    "can't find",
    "could not find",
    "couldn't find",
    "is not in the provided",
    "are not in the provided",
)


@dataclass(frozen=True)
class CitedAnswer:
    content: str
    sources: list[Source]


def says_information_is_missing(answer: str) -> bool:
    lowered = answer.lower().replace("’", "'")
    return any(phrase in lowered for phrase in INSUFFICIENT_PHRASES)


def strip_markers(answer: str) -> str:
    return SPACED_MARKER.sub("", answer).strip()


def apply_citations(answer: str, candidates: Sequence[Source]) -> CitedAnswer:
    """Renumber the answer's markers over the sources it actually cites.

    Markers pointing at no candidate are removed; two candidates from the same document and
    page become one source; numbering follows the order of first citation.
    """
    new_number: dict[int, int] = {}
    by_place: dict[tuple[str, int | None], int] = {}
    sources: list[Source] = []
    for match in MARKER.finditer(answer):
        for raw in match.group(1).split(","):
            number = int(raw)
            if number in new_number or not 1 <= number <= len(candidates):
                continue
            source = candidates[number - 1]
            place = (str(source.document_id), source.page)
            if place not in by_place:
                sources.append(source)
                by_place[place] = len(sources)
            new_number[number] = by_place[place]

    def renumber(match: re.Match[str]) -> str:
        numbers: list[int] = []
        for raw in match.group(2).split(","):
            mapped = new_number.get(int(raw))
            if mapped is not None and mapped not in numbers:
                numbers.append(mapped)
        return match.group(1) + "".join(f"[{n}]" for n in numbers) if numbers else ""

    content = REPEATED_MARKER.sub(r"\1", SPACED_MARKER.sub(renumber, answer))
    return CitedAnswer(content=content.strip(), sources=sources)
