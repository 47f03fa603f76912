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


WORD = re.compile(r"[^\W_]{3,}|\d+", re.UNICODE)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
STOPWORDS = frozenset(
    (
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "with",
        "that",
        "this",
        "from",
        "have",
        "has",
        "had",
        "not",
        "but",
        "you",
        "your",
        "its",
        "their",
        "they",
        "them",
        "there",
        "which",
        "what",
        "when",
        "where",
        "who",
        "how",
        "why",
        "can",
        "could",
        "would",
        "should",
        "will",
        "also",
        "into",
        "than",
        "then",
        "been",
        "being",
        "about",
        "over",
        "under",
        "more",
        "most",
        "such",
        "only",
        "other",
        "some",
        "any",
        "each",
        "all",
        "der",
        "die",
        "das",
        "und",
        "ist",
        "sind",
        "mit",
        "von",
        "les",
        "des",
        "une",
        "est",
        "pour",
        "dans",
        "que",
        "qui",
    )
)
# A sentence is attributed to a passage when it shares this many distinctive words with it...
MIN_SHARED_WORDS = 2
# ...and they are at least this share of the sentence's distinctive words.
MIN_SHARED_FRACTION = 0.4


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


def _distinctive(text: str, ignore: frozenset[str] = frozenset()) -> set[str]:
    words = {word.lower() for word in WORD.findall(text)}
    return {word for word in words if word not in STOPWORDS and word not in ignore}


def has_markers(answer: str, candidate_count: int) -> bool:
    return any(
        1 <= int(raw) <= candidate_count
        for match in MARKER.finditer(answer)
        for raw in match.group(1).split(",")
    )


def infer_citations(answer: str, passages: Sequence[str], question: str) -> str:
    """Add [n] markers to sentences that plainly restate passage n (for models that never cite).

    A sentence cites a passage when they share enough distinctive words that the question
    did not already contain; sentences without such overlap stay unmarked.
    """
    asked = frozenset(_distinctive(question))
    passage_words = [_distinctive(passage) for passage in passages]
    sentences = SENTENCE_END.split(answer.strip())
    marked = []
    for sentence in sentences:
        words = _distinctive(sentence, asked)
        numbers = [
            number
            for number, vocabulary in enumerate(passage_words, start=1)
            if words
            and len(shared := words & vocabulary) >= MIN_SHARED_WORDS
            and len(shared) / len(words) >= MIN_SHARED_FRACTION
        ]
        if numbers:
            markers = "".join(f"[{n}]" for n in numbers)
            body = sentence.rstrip()
            end = body[-1] if body and body[-1] in ".!?" else ""
            sentence = f"{body[: len(body) - len(end)]} {markers}{end}"
        marked.append(sentence)
    return " ".join(marked)
