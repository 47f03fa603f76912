"""Recognising requests about whole documents, and stitching overlapping chunks."""

from __future__ import annotations

import pytest

from docchat.answers.whole_documents import asks_for_whole_documents, without_overlap


@pytest.mark.parametrize(
    ("question", "scope"),
    [
        ("Summarise this file", "all"),
        ("Can you compare both documents?", "all"),
        ("Give me an overview of the report.", "all"),
        ("What are the differences between the two contracts?", "message"),
        ("Summarize please", "message"),
        ("tl;dr", "chat"),
        ("Résume-moi ce document: summary please", "chat"),
    ],
)
def test_requests_about_whole_documents(question: str, scope: str) -> None:
    assert asks_for_whole_documents(question, scope)


@pytest.mark.parametrize(
    ("question", "scope"),
    [
        ("When does the ferry leave?", "all"),
        ("How do I compare two numbers in Python?", "all"),
        ("Summarize the French revolution for me", "all"),  # no document named or chosen
        ("What does the report say about the budget?", "all"),
    ],
)
def test_ordinary_questions_are_searched(question: str, scope: str) -> None:
    assert not asks_for_whole_documents(question, scope)


def test_without_overlap_drops_the_repeated_start() -> None:
    assert without_overlap("one two three four", "three four five six", 200) == "five six"
    assert without_overlap("one two", "three four", 200) == "three four"
    # Never more than the chunk overlap is removed.
    assert without_overlap("xyzabc", "abcabcZ", 3) == "abcZ"
