"""How a question of several parts is split into what research mode searches one by one."""

from __future__ import annotations

from docchat.answers import research
from docchat.answers.research import MAX_PARTS, MAX_QUESTION_CHARS, parts_of


def _queries(question: str) -> list[str]:
    return [part.query for part in parts_of(question)]


def test_clauses_after_a_comma_or_a_conjunction_are_parts() -> None:
    assert _queries(
        "What does VACUUM FULL do differently from plain VACUUM, and can I run VACUUM inside "
        "a transaction block?"
    ) == [
        "What does VACUUM FULL do differently from plain VACUUM",
        "can I run VACUUM inside a transaction block",
    ]
    assert _queries("Who founded the Yuan dynasty and when did Kublai proclaim it?") == [
        "Who founded the Yuan dynasty",
        "when did Kublai proclaim it Yuan",
    ]


def test_a_part_that_says_it_is_searched_with_the_names_of_the_others() -> None:
    parts = parts_of("What is the default maintenance_work_mem, and why would I raise it?")
    assert [part.text for part in parts] == [
        "What is the default maintenance_work_mem",
        "why would I raise it",
    ]
    assert parts[1].query == "why would I raise it maintenance_work_mem"


def test_a_short_leading_phrase_is_the_setting_of_every_part() -> None:
    assert _queries(
        "In pg_hba.conf, which line is used when several match, and how do I reload it?"
    ) == [
        "In pg_hba.conf which line is used when several match",
        "In pg_hba.conf how do I reload it",
    ]


def test_names_joined_by_or_or_compared_are_searched_one_by_one() -> None:
    assert _queries("Which city is larger, Fresno or Jacksonville?") == [
        "Which city is larger, Fresno",
        "Which city is larger, Jacksonville",
    ]
    assert _queries("How do Regulations and Directives differ in direct effect?") == [
        "How do Regulations differ in direct effect",
        "How do Directives differ in direct effect",
    ]
    listed = "What are the defaults of temp_buffers, work_mem and maintenance_work_mem?"
    assert _queries(listed) == [
        "What are the defaults of temp_buffers",
        "What are the defaults of work_mem",
        "What are the defaults of maintenance_work_mem",
    ]


def test_one_name_with_and_in_it_stays_whole() -> None:
    assert parts_of("When did the French and Indian War end?") == []
    assert parts_of("Who founded the Victoria and Albert Museum?") == []


def test_a_question_of_one_part_has_none() -> None:
    assert parts_of("How many columns can a multicolumn index have?") == []
    assert parts_of("   ") == []


def test_a_long_list_of_clauses_is_capped() -> None:
    question = ", and ".join(f"what is setting_{index}" for index in range(10))
    assert len(parts_of(question)) == MAX_PARTS


def test_a_message_longer_than_a_question_is_searched_whole() -> None:
    """30,000 characters of names ("How do Word0, Word1, ... differ") took 120 s to split."""
    names = " ".join(f"Word{index}," for index in range(3000))
    assert parts_of(f"How do {names} differ?") == []
    question = "What is A, and what is B?"
    assert parts_of(question + " " * MAX_QUESTION_CHARS) != []  # white space does not count
    assert parts_of(question + " Filler." * (MAX_QUESTION_CHARS // 8)) == []


def test_a_brief_whose_parts_are_each_answered_in_part_is_partial() -> None:
    # Before: every part listed as unanswered made the brief "not in the documents", even
    # when each had quotes that answer it in part.
    both_partial = research._verdict(["a", "b"], lacking=0, parts=2)
    assert both_partial.evidence == "partial"
    assert research._verdict(["a", "b"], lacking=2, parts=2).evidence == "not_in_documents"
    assert research._verdict(["a"], lacking=1, parts=2).evidence == "partial"
    assert research._verdict([], lacking=0, parts=2).evidence == "answered"
