"""Extractive answers quote the passages' best sentences, each with the marker of its passage."""

from __future__ import annotations

import re
import uuid

from docchat.answers import extractive
from docchat.retrieval.context import ContextEntry, source_of
from docchat.retrieval.index import Chunk, ScoredChunk

FERRY = (
    "The harbour office is open from eight to four. The Lumen ferry to Varholm leaves at "
    "09:15 every weekday and returns at 17:40."
)
LIGHTHOUSE = (
    "The Skerry Point lighthouse was built by the engineer Marta Ellison in 1871. "
    "Its light can be seen for 22 nautical miles."
)
POTTERY = "Ancient pottery from the valley was fired in open pits. Glazes came later."
SHEET = (
    "| Region | Manager | Revenue |\n"
    "| --- | --- | --- |\n"
    "| North | Ines Alder | 120 |\n"
    "| South | Tomas Riva | 340 |"
)


def _entries(*texts: str, location: str | None = None) -> list[ContextEntry]:
    entries = []
    for number, text in enumerate(texts, start=1):
        chunk = Chunk(
            document_id=uuid.uuid4(),
            chunk_index=0,
            text=text,
            page=None,
            owner_id=uuid.uuid4(),
            visibility="private",
            filename=f"doc{number}.md",
            location=location,
        )
        entries.append(ContextEntry(number, text, source_of(ScoredChunk(chunk, 0.5))))
    return entries


def _quoted(answer: str) -> dict[int, str]:
    """Each quote block's marker number and its text."""
    return {
        int(match.group(2)): match.group(1)
        for match in re.finditer(r"^> (.*) \[(\d+)\]$", answer, re.MULTILINE)
    }


def test_the_best_sentence_is_quoted_with_the_marker_of_its_passage() -> None:
    entries = _entries(POTTERY, FERRY, LIGHTHOUSE)
    result = extractive.answer("When does the Lumen ferry to Varholm leave?", entries)
    assert result is not None
    answer, _ = result
    quoted = _quoted(answer)
    assert 2 in quoted and "09:15" in quoted[2]
    assert answer.startswith(extractive.INTRODUCTION)


def test_the_sentence_under_a_heading_is_quoted_not_the_heading() -> None:
    """Seen in a keyless installation: a Markdown guide's "## Parking" was quoted as the answer
    to a question about parking, instead of the sentence that says where and for how much."""
    guide = (
        "# Harbour guide\n\n## Ferries\n\nThe night ferry leaves at 23:40 from pier 4.\n\n"
        "## Parking\n\nLong-stay parking is behind the fish market and costs 6 euros a day."
    )
    result = extractive.answer("Where do I park for a week?", _entries(guide))
    assert result is not None
    assert _quoted(result[0]) == {
        1: "Long-stay parking is behind the fish market and costs 6 euros a day."
    }


def test_an_extractive_answer_never_cites_a_passage_it_does_not_quote() -> None:
    questions = [
        "When does the Lumen ferry to Varholm leave?",
        "Who built the Skerry Point lighthouse?",
        "How far can the light be seen?",
        "How was the pottery fired?",
        "What is the capital of Peru?",
    ]
    entries = _entries(POTTERY, FERRY, LIGHTHOUSE)
    for question in questions:
        result = extractive.answer(question, entries)
        assert result is not None
        answer, quotes = result
        markers = {int(n) for n in re.findall(r"\[(\d+)\]", answer)}
        quoted = _quoted(answer)
        assert markers == set(quoted), question
        for number, text in quoted.items():
            passage = entries[number - 1].text
            assert text.strip("…") in " ".join(passage.split()), question
        assert len(quotes) <= extractive.MAX_QUOTES


def test_quotes_follow_the_order_of_their_passages() -> None:
    entries = _entries(LIGHTHOUSE, FERRY)
    result = extractive.answer("Lighthouse built by Marta Ellison; Lumen ferry to Varholm", entries)
    assert result is not None
    numbers = [int(n) for n in re.findall(r"\[(\d+)\]", result[0])]
    assert numbers == sorted(numbers)


def test_a_table_row_is_quoted_as_columns_and_values() -> None:
    entries = _entries(SHEET, location="Sales, rows 2-3")
    result = extractive.answer("What revenue did Tomas Riva make?", entries)
    assert result is not None
    answer, quotes = result
    assert "Region: South; Manager: Tomas Riva; Revenue: 340 [1]" in answer
    assert quotes[0].highlight.row == 3


def test_passages_without_text_give_no_extractive_answer() -> None:
    assert extractive.answer("anything?", _entries("   ")) is None
