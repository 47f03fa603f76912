"""What a question says of the documents it is about: a kind ("in the PDFs"), a year ("the
2023 reports") or a document by its name ("what does handbook-2023 say"), read as filters
that narrow the documents it searches (`AnswerEngine._filtered`).

Only phrases that speak of documents count: "export it to PDF" names no kind and "what
happened in 1998" no year, while "in my PDFs" and "reports from 1998" do. A document is named
by its file name as written ("notes.txt"), or, for a name of two or more words, by those words
in its order ("Super Bowl 50") or, when each is distinctive, anywhere ("the 2023 and 2024
handbooks"), and only in a question that speaks of documents ("what does ... say", "the ...
report", a file name): elsewhere a name's words are the question's topic. The engine keeps the
whole scope when what is named matches nothing.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from docchat.extraction.kinds import FileKind
from docchat.retrieval.filters import KIND_NAMES, DocumentFilters

# Words of a document's name (or a question) that the name rule compares, at most this many
# from a question (the catalogue's first look is a LIKE per word).
QUESTION_WORDS_COMPARED = 40
_WORD = re.compile(r"[^\W_]+", re.UNICODE)

_DOCUMENT_NOUNS = (
    r"documents?|files?|reports?|minutes|contracts?|memos?|letters?|invoices?|handbooks?|"
    r"polic(?:y|ies)|notes|e-?mails?|statements?|papers?|agreements?|proposals?|budgets?|"
    r"plans?|editions?|versions?|articles?|manuals?|guides?|pages?"
)
# A question that speaks of documents: a document noun, a file name with its extension, or
# what a text does ("what does X say", "according to X"). Without one, the words of a name are
# the question's topic ("Which is older, Harvard or the University of Chicago?"), not a
# reference to that document.
_SPEAKS_OF_DOCUMENTS = re.compile(
    rf"\b(?:{_DOCUMENT_NOUNS}|says?|said|mentions?|according\s+to)\b"
    r"|\b[\w-]+\.(?:pdf|docx?|xlsx?|pptx?|csv|md|txt|html?|epub|od[tsp]|png|jpe?g|tiff?)\b",
    re.IGNORECASE,
)
_YEAR = r"(?:19|20)\d{2}"
# "reports from 2023", "documents dated 2021 or 2022"; "the 2023 and 2024 handbooks".
_NOUN_THEN_YEARS = re.compile(
    rf"\b(?:{_DOCUMENT_NOUNS})\s+(?:from|of|dated|for|in)\s+((?:{_YEAR})(?:\s*(?:,|and|or|to)\s*{_YEAR})*)\b",
    re.IGNORECASE,
)
_YEARS_THEN_NOUN = re.compile(
    rf"\b((?:{_YEAR})(?:\s*(?:,|and|or)\s*{_YEAR})*)\s+(?:{_DOCUMENT_NOUNS})\b", re.IGNORECASE
)
# "in the PDFs", "across my spreadsheets", "what do our Word documents say".
_KIND_WORDS: dict[str, str] = {
    "pdfs?": "pdf",
    "pdf (?:files|documents)": "pdf",
    "spreadsheets?": "spreadsheet",
    "excel (?:files|sheets|workbooks)": "xlsx",
    "csv files?": "csv",
    "slides|slide decks?|presentations?": "slides",
    "word (?:files|documents)": "word",
    "markdown files?": "markdown",
    "text files?|txt files?": "text",
    "images|scans|photos": "image",
    "e-?books|epubs?": "epub",
    "web pages|html (?:files|pages)": "html",
}
_DETERMINER = r"(?:the|my|our|all(?:\s+the|\s+my|\s+our)?|these|those|your)"
_KIND_PHRASE = re.compile(
    rf"\b(?:(?:in|from|across|among|of|within|through|search)\s+{_DETERMINER}\s+|"
    rf"(?:in|from|across|among|within|through|search)\s+|{_DETERMINER}\s+)"
    r"(" + "|".join(f"(?:{words})" for words in _KIND_WORDS) + r")\b",
    re.IGNORECASE,
)


def speaks_of_documents(question: str) -> bool:
    """Whether `question` refers to documents as documents (see `_SPEAKS_OF_DOCUMENTS`): only
    then do the words of a document's name name it."""
    return _SPEAKS_OF_DOCUMENTS.search(question) is not None


def filters_named(question: str) -> DocumentFilters:
    """The kinds and years `question` names its documents by (empty filters when none)."""
    return DocumentFilters(kinds=_kinds_named(question), years=_years_named(question))


def _kinds_named(question: str) -> tuple[FileKind, ...]:
    kinds: list[FileKind] = []
    for match in _KIND_PHRASE.finditer(question):
        said = match.group(1).lower()
        for words, name in _KIND_WORDS.items():
            if re.fullmatch(words, said):
                kinds.extend(KIND_NAMES[name])
                break
    return tuple(dict.fromkeys(kinds))


def _years_named(question: str) -> tuple[int, ...]:
    years: list[int] = []
    for pattern in (_NOUN_THEN_YEARS, _YEARS_THEN_NOUN):
        for match in pattern.finditer(question):
            years.extend(int(year) for year in re.findall(_YEAR, match.group(1)))
    return tuple(sorted(set(years)))


def _folded(word: str) -> str:
    """A word as names and questions are compared: lower case, a plural's "s" dropped."""
    word = word.lower()
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def question_words(question: str) -> list[str]:
    """The words of `question` that a name it names holds one of (folded, each once): every
    such name has a word of three letters or more, and a name written out holds its words."""
    words = dict.fromkeys(_folded(word) for word in _WORD.findall(question))
    return [word for word in words if len(word) >= 3][:QUESTION_WORDS_COMPARED]


def names(question: str, filename: str) -> bool:
    """Whether `question` names the document `filename`: its whole name as written; the words
    of a name of two or more (one of them a word, not a number) one after the other ("Super
    Bowl 50"); or, when each of them is distinctive (no short or common word such as "a" of
    "contract-a"), every one of them anywhere ("the 2023 and 2024 handbooks")."""
    if len(filename) >= 5 and filename.lower() in question.lower():
        return True
    words = [_folded(word) for word in _WORD.findall(PurePosixPath(filename).stem)]
    if len(words) < 2 or not any(word.isalpha() and len(word) >= 3 for word in words):
        return False
    asked = [_folded(word) for word in _WORD.findall(question)]
    if _in_order(words, asked):
        return True
    return all(_distinctive(word) for word in words) and set(words) <= set(asked)


def _in_order(words: list[str], asked: list[str]) -> bool:
    width = len(words)
    return any(asked[start : start + width] == words for start in range(len(asked) - width + 1))


# Words too common to name a document by unless they stand in its name's order.
_COMMON = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "from",
        "into",
        "about",
        "over",
        "under",
        "this",
        "that",
        "these",
        "those",
        "what",
        "which",
        "who",
        "how",
        "when",
        "where",
        "why",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "not",
        "all",
        "any",
        "new",
        "old",
        "final",
        "draft",
        "copy",
    ]
)


def _distinctive(word: str) -> bool:
    if word.isdigit():
        return len(word) >= 2
    return len(word) >= 3 and word not in _COMMON
