"""Extractive answers quote the passages' best sentences, each with the marker of its passage."""

from __future__ import annotations

import dataclasses
import re
import uuid

import pytest

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
    answer = result.text
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
    assert _quoted(result.text) == {
        1: "Long-stay parking is behind the fish market and costs 6 euros a day."
    }


def test_an_extractive_answer_never_cites_a_passage_it_does_not_quote() -> None:
    questions = [
        "When does the Lumen ferry to Varholm leave?",
        "Who built the Skerry Point lighthouse?",
        "How far can the light be seen?",
        "How was the pottery fired?",
    ]
    entries = _entries(POTTERY, FERRY, LIGHTHOUSE)
    for question in questions:
        result = extractive.answer(question, entries)
        assert result is not None
        answer, quotes = result.text, result.quotes
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
    numbers = [int(n) for n in re.findall(r"\[(\d+)\]", result.text)]
    assert numbers == sorted(numbers)


def test_a_table_row_is_quoted_as_columns_and_values() -> None:
    entries = _entries(SHEET, location="Sales, rows 2-3")
    result = extractive.answer("What revenue did Tomas Riva make?", entries)
    assert result is not None
    answer, quotes = result.text, result.quotes
    assert "Region: South; Manager: Tomas Riva; Revenue: 340 [1]" in answer
    assert quotes[0].highlight.row == 3


def test_passages_without_text_give_no_extractive_answer() -> None:
    assert extractive.answer("anything?", _entries("   ")) is None


GLIMMERDAL = "The Glimmerdal drones survey the glacier every spring from the Glimmerdal hut."
BORGUND = "The drones are insured by Nordvakt Assurance against loss and collision."


def test_a_quote_is_never_about_something_else_than_the_question_names() -> None:
    """Seen in a keyless installation: "Who insures the Glimmerdal drones?" was answered with
    another deck's insurer."""
    question = "Who insures the Glimmerdal drones?"
    result = extractive.answer(question, _entries(BORGUND))
    assert result is not None
    answer, quotes = result.text, result.quotes
    assert quotes == [] and "Nordvakt" not in answer
    assert answer == extractive.NOT_ANSWERED.format(names="“Glimmerdal”")
    # With the Glimmerdal deck among the passages, only it may be quoted.
    result = extractive.answer(question, _entries(BORGUND, GLIMMERDAL))
    assert result is not None and set(_quoted(result.text)) == {2}


def test_a_name_in_the_documents_title_counts_as_mentioned() -> None:
    [entry] = _entries(BORGUND)
    titled = dataclasses.replace(
        entry, source=entry.source.model_copy(update={"document_name": "glimmerdal-fleet.pptx"})
    )
    result = extractive.answer("Who insures the Glimmerdal drones?", [titled])
    assert result is not None and "Nordvakt" in result.text


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("Who insures the Glimmerdal drones?", ["Glimmerdal"]),
        ("How long do sourdough loaves proof?", []),
        ("Glimmerdal drones: who insures them?", []),  # a sentence's first word may be any word
        ("Does the X200 pair with an iPhone?", ["X200", "iPhone"]),
        ("WHO INSURES THE DRONES?", []),
        ("Wie lange dauert die Probezeit bei der Firma?", []),  # German capitalises nouns
        ("When was Martin Luther King Jr. born?", ["Martin Luther King Jr"]),
        ("Does Acme insure the Glimmerdal drones?", ["Acme", "Glimmerdal"]),
        ("Who wrote the pg_trgm module?", ["pg_trgm"]),
    ],
)
def test_names_of_a_question(question: str, names: list[str]) -> None:
    assert extractive.names_in(question) == names


def test_a_passage_about_all_the_names_is_quoted_before_one_about_some() -> None:
    # Issue 67: Acme's passage about another deck was quoted for the Glimmerdal drones.
    other_deck = "Acme insures the Borgund drones against loss and collision."
    glimmerdal = "The Glimmerdal drones are insured by Acme through its marine branch."
    result = extractive.answer(
        "Does Acme insure the Glimmerdal drones?", _entries(other_deck, glimmerdal)
    )
    assert result is not None and [quote.entry.number for quote in result.quotes] == [2]
    assert result.verdict.evidence == "answered"

    only_other = extractive.answer("Does Acme insure the Glimmerdal drones?", _entries(other_deck))
    assert only_other is not None and only_other.verdict.evidence == "partial"
    assert "Glimmerdal" in only_other.text  # the answer says which name is missing


def test_a_longer_name_is_not_named_by_its_first_words() -> None:
    luther = "Martin Luther was born on 10 November 1483 in Eisleben."
    result = extractive.answer("When was Martin Luther King Jr. born?", _entries(luther))
    assert result is not None and result.verdict.evidence == "not_in_documents"
    assert "1483" not in result.text
    # A family name alone names the person.
    obama = "Obama was sworn in as president on 20 January 2009."
    sworn = extractive.answer("When was Barack Obama sworn in?", _entries(obama))
    assert sworn is not None and sworn.verdict.evidence == "answered"


def test_the_translation_of_a_question_brings_no_names() -> None:
    matched = "Wer versichert die Drohnen?\nWho insures the Glimmerdal drones?"
    result = extractive.answer(matched, _entries(BORGUND), asked="Wer versichert die Drohnen?")
    assert result is not None and "Nordvakt" in result.text


BOURSE_DE = "Die erste Börse in Warschau wurde 1817 gegründet. Sie lag am Bankplatz."
# What the dictionaries give for its first sentence (`PassageGlosses.english`).
BOURSE_GLOSS = "the first stock exchange bourse in Warsaw was became 1817 founded established"


def test_a_passage_in_another_language_names_what_its_english_gloss_names() -> None:
    """Over XQuAD's German paragraphs, 54 of 276 English questions whose paragraph was found
    were answered "none of their passages mentions “Warsaw”": the names were looked for in
    "Warschau" alone."""
    question = "When was Warsaw's first stock exchange established?"
    entries = _entries(BOURSE_DE)
    alone = extractive.answer(question, entries)
    assert alone is not None and not alone.quotes
    assert alone.verdict.evidence == "not_in_documents"

    def gloss(text: str) -> str | None:
        return BOURSE_GLOSS if "Warschau" in text else None

    glossed = extractive.answer(question, entries, gloss=gloss)
    assert glossed is not None and glossed.verdict.evidence == "answered", glossed
    assert "1817" in glossed.text and "[1]" in glossed.text


def test_a_table_row_is_quoted_under_its_caption_which_says_what_its_figures_count() -> None:
    """The FBI's report: the row alone says "Handgun: 56,941", its caption that these are
    background checks; without it the answer was judged partial ("do not give the number of
    checks")."""
    table = (
        "NICS Firearm Background Checks November - 2015\n"
        "| State / Territory | Permit | Handgun |\n| --- | --- | --- |\n"
        "| Texas | 21,550 | 56,941 |\n| Utah | 10,429 | 4,314 |"
    )
    entries = _entries(table, location="table 1, rows 48-49")
    result = extractive.answer("How many handgun checks did Texas have in November 2015?", entries)
    assert result is not None
    assert _quoted(result.text) == {
        1: "NICS Firearm Background Checks November - 2015 — State / Territory: Texas; "
        "Permit: 21,550; Handgun: 56,941"
    }
    assert result.verdict.evidence == "answered", result.verdict
