"""Which of a question's words pick BM25 candidates in a wide scope."""

from __future__ import annotations

from types import SimpleNamespace

from docchat.retrieval.lexical import QuestionWords, WordStatistics, select_words, tsquery_of

STATISTICS = WordStatistics(
    shares={"year": 0.40, "citi": 0.30, "warsaw": 0.001, "river": 0.02},
    rarest_share=0.0005,
    rows=100_000,
)


def test_words_the_statistics_do_not_list_always_pick_and_common_ones_are_estimated() -> None:
    words = select_words(["year", "warsaw", "zygmunt", "citi"], STATISTICS, 50_000, 500)
    # zygmunt (unlisted, ~50 matches) and warsaw (~100) fit the budget; year and citi do not.
    assert words.picking == ["zygmunt", "warsaw"]
    assert words.common == {"citi": 0.30 * 50_000, "year": 0.40 * 50_000}


def test_listed_words_join_rarest_first_while_the_budget_allows() -> None:
    words = select_words(["year", "river", "warsaw"], STATISTICS, 10_000, 2_500)
    assert words.picking == ["warsaw", "river"]
    assert set(words.common) == {"year"}


def test_the_rarest_word_picks_even_when_every_word_is_common() -> None:
    words = select_words(["year", "citi"], STATISTICS, 10_000, 10)
    assert words.picking == ["citi"] and set(words.common) == {"year"}


def test_without_statistics_every_word_picks() -> None:
    empty = WordStatistics.from_row(None)
    words = select_words(["year", "citi"], empty, 10_000, 10)
    assert words.picking == ["year", "citi"] and words.common == {}


def test_statistics_are_read_from_the_pg_stats_row() -> None:
    row = SimpleNamespace(lexemes=["a", "b"], shares=[0.5, 0.25, 0.25, 0.5, 0.0], rows=1000.0)
    statistics = WordStatistics.from_row(row)
    assert statistics.shares == {"a": 0.5, "b": 0.25}
    assert statistics.rarest_share == 0.25 and statistics.rows == 1000.0


def test_lexemes_are_quoted_for_the_tsquery() -> None:
    assert tsquery_of(["it's", "a\\b", "x"]) == "'it''s' | 'a\\\\b' | 'x'"


def test_when_the_rarest_word_is_too_common_its_partner_is_the_next_rarest() -> None:
    words = select_words(["year", "citi", "river"], STATISTICS, 10_000, 10)
    assert words.picking == ["river"] and words.partner == "citi"
    # With the partner; then with any other word of the question; then alone.
    assert words.queries() == [
        "('river') & 'citi'",
        "('river' & ('citi' | 'year'))",
        "'river'",
    ]


def test_a_two_word_question_goes_from_the_pair_to_the_rarest_alone() -> None:
    words = select_words(["citi", "river"], STATISTICS, 10_000, 10)
    assert words.queries() == ["('river') & 'citi'", "'river'"]


def test_no_partner_while_the_picking_words_fit_the_budget() -> None:
    words = select_words(["year", "river", "warsaw"], STATISTICS, 10_000, 2_500)
    assert words.partner is None and words.queries() == ["'warsaw' | 'river'"]
    lonely = select_words(["citi"], STATISTICS, 10_000, 10)
    assert lonely.picking == ["citi"] and lonely.partner is None


def test_several_picking_words_need_the_partner_together() -> None:
    """tsquery's & binds before |: without parentheses only the last picking word would need
    the partner."""
    words = select_words(["zygmunt", "wawel", "citi", "year"], STATISTICS, 10_000, 10)
    assert words.picking == ["zygmunt", "wawel"] and words.partner == "citi"
    paired, two_at_least, alone = words.queries()
    assert paired == "('zygmunt' | 'wawel') & 'citi'"
    # Two picking words together count as two words of the question.
    assert (
        two_at_least == "('zygmunt' & ('wawel' | 'citi' | 'year')) | ('wawel' & ('citi' | 'year'))"
    )
    assert alone == "'zygmunt' | 'wawel'"


def test_a_name_read_otherwise_in_another_language_counts_there_and_once() -> None:
    """Issue 67: an English question's "Kellmünz" is `kellmunz` in a German chunk."""
    readings = [
        ("english", 1, "kellmünz"),
        ("german", 1, "kellmunz"),
        ("french", 1, "kellmünz"),
        ("english", 2, "lindenhagen"),
        ("german", 2, "lindenhag"),
        ("dutch", 2, "lindenhag"),
    ]
    own = ["bridg", "kellmünz", "lindenhagen"]
    words = QuestionWords.of(own, readings, "english", "english")
    assert words.everywhere == own
    assert words.variants == [
        ("dutch", "lindenhag"),
        ("german", "kellmunz"),
        ("german", "lindenhag"),
    ]
    # One word each: the name's readings count once in the question's weight.
    assert words.groups == {
        "bridg": 0,
        "kellmünz": 1,
        "lindenhagen": 2,
        "kellmunz": 1,
        "lindenhag": 2,
    }
    # A German question: its names as the installation's language reads them count everywhere.
    german = QuestionWords.of(["kellmunz"], readings[:3], "german", "english")
    assert german.everywhere == ["kellmunz", "kellmünz"] and german.variants == []
    assert german.groups == {"kellmunz": 0, "kellmünz": 0}
