"""A question that names its documents: by file name, kind or year (retrieval.named_in_question)."""

from __future__ import annotations

import pytest

from docchat.extraction.kinds import FileKind
from docchat.retrieval.filters import DocumentFilters, FilterError
from docchat.retrieval.named_in_question import (
    filters_named,
    names,
    question_words,
    speaks_of_documents,
)

COMPARE = "Compare what the 2023 and 2024 handbooks say about remote work"


@pytest.mark.parametrize(
    ("question", "filename", "named"),
    [
        ("What does notes.txt say about Friday?", "notes.txt", True),
        (
            "Compare what the 2023 and 2024 handbooks say about remote work",
            "handbook-2023.pdf",
            True,
        ),
        (
            "Compare what the 2023 and 2024 handbooks say about remote work",
            "handbook_2024.docx",
            True,
        ),
        (
            "Compare what the 2023 and 2024 handbooks say about remote work",
            "handbook-2022.pdf",
            False,
        ),
        ("Which team won Super Bowl 50?", "Super_Bowl_50.txt", True),
        ("Which team won the Super Bowl?", "Super_Bowl_50.txt", False),
        # "a" of "contract-a" names it only in the name's order.
        ("Which contracts set a penalty?", "contract-a.md", False),
        ("What does contract A say?", "contract-a.md", True),
        ("What does the final draft say?", "draft-final.docx", False),
        # One word is too common to name a document by: its file name must be written out.
        ("What do my notes say about Friday?", "notes.txt", False),
        ("Report the amounts", "report.pdf", False),
        # Numbers alone name nothing.
        ("What happened in 2023 on day 12?", "2023-12.pdf", False),
    ],
)
def test_a_document_is_named_by_its_file_name_or_every_word_of_it(
    question: str, filename: str, named: bool
) -> None:
    assert names(question, filename) is named


def test_a_kind_counts_only_where_the_question_speaks_of_documents() -> None:
    assert filters_named("What do the PDFs say about leave?").kinds == (FileKind.pdf,)
    assert FileKind.xlsx in filters_named("Search my spreadsheets for the totals").kinds
    assert filters_named("In the Markdown files, who cooks?").kinds == (FileKind.markdown,)
    assert filters_named("How do I export a chart to PDF?").empty
    assert filters_named("Which slides of the deck are wrong?").empty


def test_a_year_counts_only_next_to_a_document() -> None:
    assert filters_named("Compare the 2023 and 2024 handbooks").years == (2023, 2024)
    assert filters_named("Summarise the reports from 2021").years == (2021,)
    assert filters_named("What happened in 1998?").empty
    assert filters_named("Who won the 1998 World Cup?").empty


def test_question_words_are_folded_and_bounded() -> None:
    assert question_words("The Handbooks, the handbook and HANDBOOK") == ["the", "handbook", "and"]
    assert len(question_words(" ".join(f"word{n}" for n in range(200)))) == 40


def test_years_as_a_filter() -> None:
    assert DocumentFilters.parse({"year": 2023}).years == (2023,)
    assert DocumentFilters.parse({"year": ["2024", 2023]}).years == (2023, 2024)
    assert DocumentFilters.parse({"year": [2023, 2024]}).describe() == "of 2023 or 2024"
    for bad in ["last year", [True], list(range(2000, 2020))]:
        with pytest.raises(FilterError):
            DocumentFilters.parse({"year": bad})


def test_a_name_names_a_document_only_in_a_question_that_speaks_of_documents() -> None:
    # Measured: SQuAD questions about "Harvard or the University of Chicago" were narrowed to
    # those two articles and lost the other documents they needed.
    assert not speaks_of_documents("Which is older, Harvard or the University of Chicago?")
    assert not speaks_of_documents("Where did Tesla work before he moved to the United States?")
    assert speaks_of_documents("What does the Harvard article say about its founding?")
    assert speaks_of_documents("What penalty does contract-b.txt set?")
    assert speaks_of_documents("Compare what the 2023 and 2024 handbooks say")
    assert speaks_of_documents("According to the minutes, who approved it?")
