"""German compounds indexed with their parts: a passage about the "Brückenbau" is found by a
search for "Brücke" or "Bau".

German writes as one word what English writes as several ("Baumeister", master builder;
"Einwohnerzahl", number of inhabitants), and a question, above all one translated word by word
from English (`word_by_word`), names the parts. PostgreSQL's German configuration stems a
compound whole, so without its parts such a passage shares no word with the question. A German
chunk's indexed text gets the parts of its compounds appended (its stored text and its length
for BM25 stay its own).

The split is the frequency-based one of Koehn and Knight ("Empirical Methods for Compound
Splitting", EACL 2003): of the ways to cut a word in two known words, with a linking element
("Verkehr-s-sicherheit") dropped, the one whose parts' geometric mean frequency is highest, and
no split at all when the whole word is more common than that (so "Erklärung" and "Bevölkerung"
stay whole). A word is cut once: cutting its parts again finds words in their pieces
("Kindergarten" -> "Kinder" + "Garten" -> "gar" + "ten"). The frequencies are wordfreq's
(`word_frequency`), looked up case-folded as wordfreq writes them ("strasse").
"""

from __future__ import annotations

import math
import re
from functools import cache, lru_cache

from docchat.retrieval.word_frequency import frequencies

# The languages whose chunks get their compounds' parts (ISO 639-1, as `languages` tells them).
COMPOUNDING = frozenset({"de"})
# The shortest part: shorter ones ("ab", "um") are prefixes, not words.
SHORTEST_PART = 3
# Words rarer than this (about 10 in 100 million) are not parts: fragments and misspellings.
RAREST_PART = 1e-7
# German's linking elements between parts ("Verkehr-s-sicherheit", "Straße-n-bahn").
LINKS = ("s", "es", "n", "en", "e")
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)


@cache
def _known(language: str) -> dict[str, float]:
    # A few tens of MB for German, read once by the process that indexes German chunks.
    return frequencies(language, RAREST_PART)


@lru_cache(maxsize=65_536)
def parts(word: str, language: str) -> tuple[str, ...]:
    """The two parts of `word` (in lower case) if it reads as a compound of `language`, else
    ()."""
    if language not in COMPOUNDING or len(word) < 2 * SHORTEST_PART:
        return ()
    known = _known(language)
    word = word.lower()
    best: tuple[str, ...] = ()
    best_score = known.get(word.casefold(), 0.0)
    for cut in range(SHORTEST_PART, len(word) - SHORTEST_PART + 1):
        tail = word[cut:]
        tail_share = known.get(tail.casefold(), 0.0)
        if not tail_share:
            continue
        for head in _heads(word[:cut]):
            head_share = known.get(head.casefold(), 0.0)
            score = math.sqrt(head_share * tail_share)
            if score > best_score:
                best, best_score = (head, tail), score
    return best


def _heads(head: str) -> list[str]:
    """A first part as written and without each linking element it may end with."""
    heads = [head]
    heads += [head[: -len(link)] for link in LINKS if head.endswith(link)]
    return [candidate for candidate in heads if len(candidate) >= SHORTEST_PART]


def with_parts(text: str, language: str | None) -> str:
    """`text` with the parts of its compounds appended, for the index; as it was in a language
    whose compounds are not split, or when it has none."""
    if language not in COMPOUNDING:
        return text
    found = [part for word in _WORD.findall(text) for part in parts(word, language)]
    return f"{text}\n{' '.join(found)}" if found else text
