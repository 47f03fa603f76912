"""Follow-ups searched with the previous question, without a model call (issue 41)."""

from __future__ import annotations

import pytest

from docchat.retrieval.followups import refers_back, search_query


@pytest.mark.parametrize(
    "question",
    [
        "When did they arrive in Normandy?",
        "What was its population in 1900?",
        "Who was his father?",
        "And the population?",
        "What about 1990?",
        "Where was Tesla's lab?  And hers?",
        "Why did these fail?",
        "What is this?",
        "How much does it cost?",
        "How long does it take?",
    ],
)
def test_a_question_that_points_back_or_says_too_little_refers_back(question: str) -> None:
    assert refers_back(question)


@pytest.mark.parametrize(
    "question",
    [
        "When did the Normans arrive in Normandy?",
        "Which team won Super Bowl 50?",
        "Is there a fee for the ferry ticket?",
        "Who designed the bridge that opened in 1932?",
        "How much do tickets cost?",
        "What is GDPR?",
        "And the weather in Oslo?",
        "Is it possible to export invoices as PDF?",
        "How long does it take to process a refund?",
        "What does this policy say about remote work?",
        "Что такое GDPR и кому он применяется?",
        "数据保护法适用于哪些公司？",
    ],
)
def test_a_question_that_names_its_subject_is_searched_as_asked(question: str) -> None:
    assert not refers_back(question)
    history = [{"role": "user", "content": "Who were the Normans?"}]
    assert search_query(question, history) == question


def test_a_follow_up_is_searched_with_the_previous_question() -> None:
    history = [
        {"role": "user", "content": "Who were the Normans?"},
        {"role": "assistant", "content": "A people of northern France [1]."},
    ]
    query = search_query("When did they arrive?", history)
    assert query == "Who were the Normans?\nWhen did they arrive?"
    # Nothing to take the subject from: as asked.
    assert search_query("When did they arrive?", []) == "When did they arrive?"
