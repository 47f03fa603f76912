"""Telling a text's language, and reading Chinese and Japanese without spaces (issue 41)."""

from __future__ import annotations

import pytest

from docchat.retrieval.languages import (
    configuration,
    configuration_of,
    language_code,
    language_of,
    names_in,
    segmented,
)


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Wer sah den Kometen Virelith über Duskmoor zuerst?", "de"),
        ("Qui a vu la comète en premier ?", "fr"),
        ("¿Quién vio primero el cometa?", "es"),
        ("谁最先看到了彗星？", "zh"),
        ("How many days of holiday do employees get?", "en"),
    ],
)
def test_a_question_s_language_is_told(text: str, language: str) -> None:
    assert language_of(text) == language


# Short English read as Italian and French by the model (CI: "Question one" was translated).
@pytest.mark.parametrize(
    "text", ["Tesla", "Super Bowl 50", "1887", "", "?!", "Question one", "First question"]
)
def test_a_bare_name_or_number_is_no_language(text: str) -> None:
    assert language_of(text) is None
    assert configuration_of(text, "english") == "english"


def test_configurations_follow_postgresql_s_stemmers() -> None:
    assert configuration("de", "english") == "german"
    assert configuration("zh", "english") == "simple"  # no stemmer; pairs of characters
    assert configuration("vi", "english") == "simple"  # told, but PostgreSQL has no stemmer
    assert configuration(None, "french") == "french"
    assert language_code("german") == "de"
    assert language_code("simple") is None


def test_chinese_runs_are_read_as_pairs_of_characters() -> None:
    assert segmented("全新世莱茵河") == "全新 新世 世莱 莱茵 茵河"
    assert segmented("HT 避免参与圣战？") == "HT 避免 免参 参与 与圣 圣战？"
    assert segmented("Kein Chinesisch.") == "Kein Chinesisch."


def test_names_are_what_a_question_shares_with_another_language() -> None:
    assert names_in("Wer sah den Kometen Virelith über Duskmoor zuerst?") == (
        "Kometen Virelith Duskmoor"
    )
    # A sentence's first capital is not a name; an acronym's is.
    assert names_in("¿Cuándo dimitió Pachauri como presidente del IPCC?") == "Pachauri IPCC"
    assert names_in("HT 避免参与哪种类型的圣战？") == "HT"
    assert names_in("Wann fand der Super Bowl 50 statt?") == "Super Bowl 50"


def test_a_chinese_question_highlights_the_chinese_sentence_that_answers_it() -> None:
    from docchat.retrieval.highlight import highlight

    shipping = "沿岸的城市依靠航运和贸易发展起来，许多港口至今仍然非常繁忙，" * 6
    passage = (
        f"莱茵河是欧洲的重要河流，{shipping}。全新世莱茵河三角洲大约在八千年前开始形成。"
        f"河流的流速在整治工程之后明显增加，{shipping}。"
    )
    found = highlight(passage, "莱茵河三角洲是什么时候开始形成的？")
    assert found is not None
    assert "八千年前" in found.text
    assert passage[found.start : found.end] == found.text
