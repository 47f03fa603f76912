"""Citation post-processing: keep cited sources, merge same (document, page), renumber [n]."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from docchat.retrieval.schemas import Source

MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
# A marker with the spaces before it, so that removing it leaves no gap ("word [9]." -> "word.").
SPACED_MARKER = re.compile(r"([ \t]*)\[(\d+(?:\s*,\s*\d+)*)\]")
REPEATED_MARKER = re.compile(r"(\[\d+\])(?:\s*\1)+")
# Code (fenced blocks, inline spans) is never a citation: `items[1]` stays as written.
CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)
# What may still become a marker when more text arrives: "[", "[1", "[1, 2".
MARKER_PREFIX = re.compile(r"\[(?:\d+(?:\s*,\s*\d*)*)?\Z")
# Phrases with which a model says the context did not hold the answer (seed 001's check), in
# English and in the languages most asked in after it. Each is specific: a phrase that an
# ordinary answer may hold ("does not contain") would take its sources away.
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
    # German
    "enthalten keine informationen",
    "enthält keine informationen",
    "keine informationen über",
    "keine informationen zu",
    "keine angaben zu",
    "nicht genügend informationen",
    "wird nicht erwähnt",
    "werden nicht erwähnt",
    "konnte ich nicht finden",
    "kann ich nicht finden",
    "konnte keine informationen",
    # French
    "ne contiennent pas d'information",
    "ne contient pas d'information",
    "ne contiennent aucune information",
    "ne contient aucune information",
    "aucune information sur",
    "aucune information concernant",
    "pas d'information sur",
    "n'est pas mentionné",
    "ne sont pas mentionnés",
    "je n'ai pas trouvé",
    "je ne trouve pas",
    "pas assez d'informations",
    "informations insuffisantes",
    # Spanish
    "no contienen información",
    "no contiene información",
    "no hay información sobre",
    "ninguna información sobre",
    "no se menciona",
    "no encontré",
    "no he encontrado",
    "no puedo encontrar",
    "no hay suficiente información",
    "información insuficiente",
    # Italian
    "non contengono informazioni",
    "non contiene informazioni",
    "nessuna informazione su",
    "non viene menzionat",
    "non ho trovato",
    "informazioni insufficienti",
    # Portuguese
    "não contêm informações",
    "não contém informações",
    "nenhuma informação sobre",
    "não é mencionad",
    "não encontrei",
    "informações insuficientes",
    # Dutch
    "bevatten geen informatie",
    "bevat geen informatie",
    "geen informatie over",
    "wordt niet genoemd",
    "kon ik niet vinden",
    "onvoldoende informatie",
    # Russian
    "не содержат информации",
    "не содержит информации",
    "нет информации о",
    "не упоминается",
    "не удалось найти",
    "недостаточно информации",
    # Chinese
    "没有提供相关信息",
    "没有相关信息",
    "没有提到",
    "未提及",
    "没有找到相关",
    "无法找到",
    "信息不足",
    # Japanese
    "記載されていません",
    "情報はありません",
    "情報がありません",
    "見つかりませんでした",
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


def _outside_code(text: str, change: Callable[[str], str]) -> str:
    """`text` with `change` applied to everything but its code spans and blocks."""
    parts: list[str] = []
    last = 0
    for match in CODE.finditer(text):
        parts.append(change(text[last : match.start()]))
        parts.append(match.group())
        last = match.end()
    parts.append(change(text[last:]))
    return "".join(parts)


def _prose(text: str) -> str:
    """`text` with its code blanked out, for finding markers."""
    return CODE.sub(" ", text)


def strip_markers(answer: str) -> str:
    """The answer without [n] markers (an answer with no sources must not point at any)."""
    return _outside_code(answer, lambda prose: SPACED_MARKER.sub("", prose)).strip()


_CONTENT = re.compile(r"[^\W_]", re.UNICODE)


def is_bare(answer: str) -> bool:
    """Whether the answer holds nothing besides [n] markers, white space and punctuation: a
    model that replied "[1]" gave no answer (code counts as content)."""
    return not _CONTENT.search(strip_markers(answer))


def may_be_bare(partial: str) -> bool:
    """Whether an answer that begins with `partial` may still be bare: it is so far, counting
    what may become a marker at its end ("[1") as one."""
    return is_bare(MARKER_PREFIX.sub("", partial))


class MarkerFilter:
    """Removes [n] markers from an answer as it streams (for an answer with no sources).

    A piece ending in what may be the start of a marker ("[", "[1") is held back until the
    next piece settles it, and so are the spaces before it, so that the streamed text reads as
    `strip_markers` of the whole. Text in code spans passes untouched.
    """

    def __init__(self) -> None:
        self._held = ""
        self._in_code = False

    def feed(self, piece: str) -> str:
        text, self._held = self._held + piece, ""
        out: list[str] = []
        spaces = ""
        position = 0
        while position < len(text):
            char = text[position]
            if char == "`":
                self._in_code = not self._in_code
            elif char == "[" and not self._in_code:
                marker = MARKER.match(text, position)
                if marker is not None:
                    spaces, position = "", marker.end()  # drop the marker and its spaces
                    continue
                if MARKER_PREFIX.match(text, position):
                    self._held = spaces + text[position:]
                    return "".join(out)
            if char in " \t":
                spaces += char
            else:
                out.append(spaces + char)
                spaces = ""
            position += 1
        self._held = spaces
        return "".join(out)

    def flush(self) -> str:
        held, self._held = self._held, ""
        return held


def apply_citations(answer: str, candidates: Sequence[Source]) -> CitedAnswer:
    """Renumber the answer's markers over the sources it actually cites.

    Markers pointing at no candidate are removed; two candidates from the same document and
    page (or location) become one source; numbering follows the order of first citation.
    """
    new_number: dict[int, int] = {}
    by_place: dict[tuple[str, int | None, str | None], int] = {}
    sources: list[Source] = []
    for match in MARKER.finditer(_prose(answer)):
        for raw in match.group(1).split(","):
            number = int(raw)
            if number in new_number or not 1 <= number <= len(candidates):
                continue
            source = candidates[number - 1]
            place = (str(source.document_id), source.page, source.location)
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

    content = _outside_code(
        answer, lambda prose: REPEATED_MARKER.sub(r"\1", SPACED_MARKER.sub(renumber, prose))
    )
    return CitedAnswer(content=content.strip(), sources=sources)


def _distinctive(text: str, ignore: frozenset[str] = frozenset()) -> set[str]:
    words = {word.lower() for word in WORD.findall(text)}
    return {word for word in words if word not in STOPWORDS and word not in ignore}


def has_markers(answer: str, candidate_count: int) -> bool:
    return any(
        1 <= int(raw) <= candidate_count
        for match in MARKER.finditer(_prose(answer))
        for raw in match.group(1).split(",")
    )


# A figure as written, and the word after it ("8 bytes"; "1887" alone).
_FIGURE_AND_UNIT = re.compile(r"(?<![\w.,-])(\d+(?:[.,]\d+)*)(?![\w-])(?:\s+([^\W\d_]+))?")
# The first letters of a unit that make it the same one ("byte", "bytes").
_UNIT_PREFIX = 4


def _gives_figure(passage: str, figure: str, unit: str | None) -> bool:
    """Whether the passage gives the figure as a number of its own ("16-bit" does not give
    16 bytes), followed by the same unit when the sentence gives one."""
    number = rf"(?<![\w.,-]){re.escape(figure)}(?![\w-]|[.,]\d)"
    if unit is not None and unit.lower() not in STOPWORDS:
        number += rf"\s+{re.escape(unit[:_UNIT_PREFIX])}"
    return re.search(number, passage, re.IGNORECASE) is not None


# What a short answer gives besides the question's words: code (`nextval`) and names (a
# capitalised word after the sentence's first).
_CODE_WORDS = re.compile(r"`([^`\n]+)`")
_NAME_WORD = re.compile(r"(?<=\s)[A-Z][\w'’-]*")


def _answers_from_it(
    sentence: str, passage: str, vocabulary: set[str], asked: frozenset[str]
) -> bool:
    """Whether a sentence that restates the question with a short answer takes that answer
    from the passage ("The bigint type takes 8 bytes of storage."; "The function that ... is
    `nextval`."): it gives a figure, a name or code the question does not, the passage gives
    every figure of it with its unit (the year asked about too: "In 2019 they got 30 days" is
    not borne out by a passage without 2019) and every such name or code, and they share two
    of the question's words."""
    words = _distinctive(sentence)
    figures = _FIGURE_AND_UNIT.findall(sentence)
    named = (
        {
            word.lower()
            for found in (*_CODE_WORDS.findall(sentence), *_NAME_WORD.findall(sentence))
            for word in WORD.findall(found)
        }
        - asked
        - STOPWORDS
    )
    new_figures = {figure for figure, _ in figures} - asked
    return (
        bool(new_figures or named)
        and named <= vocabulary
        and all(_gives_figure(passage, figure, unit or None) for figure, unit in figures)
        and len(words & asked & vocabulary) >= MIN_SHARED_WORDS
    )


def infer_citations(answer: str, passages: Sequence[str], question: str) -> str:
    """Add [n] markers to sentences that plainly restate passage n (for models that never cite).

    A sentence cites a passage when they share enough distinctive words that the question
    did not already contain, or when it restates the question with a short answer the passage
    gives (`_answers_from_it`); sentences without such overlap stay unmarked.
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
            if (
                words
                and len(shared := words & vocabulary) >= MIN_SHARED_WORDS
                and len(shared) / len(words) >= MIN_SHARED_FRACTION
            )
            or _answers_from_it(sentence, passages[number - 1], vocabulary, asked)
        ]
        if numbers:
            markers = "".join(f"[{n}]" for n in numbers)
            body = sentence.rstrip()
            end = body[-1] if body and body[-1] in ".!?" else ""
            sentence = f"{body[: len(body) - len(end)]} {markers}{end}"
        marked.append(sentence)
    return " ".join(marked)
