"""Chinese passages read in English too (issue 69: English questions over Chinese documents):
their dictionary gloss, and the rows an upgrade writes again to add it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from docchat.config import TranslationSettings
from docchat.retrieval.compounds import COMPOUNDING
from docchat.retrieval.models import OUTDATED_ROWS
from docchat.retrieval.passage_glosses import GLOSSED, PassageGlosses
from docchat.retrieval.word_by_word import MOST_WORDS, Glossary

MIGRATIONS = Path(__file__).parents[2] / "migrations" / "versions"


def _glosses(compiled: Path) -> PassageGlosses:
    """Over the run's compiled dictionaries, opened with the folder they were compiled from
    (another folder's dictionaries would have them compiled again)."""
    folder = TranslationSettings(_env_file=None).dictionary_folder  # type: ignore[call-arg]
    return PassageGlosses(Glossary(compiled, folder))


def test_a_chinese_passage_is_glossed_whole_in_english(compiled_glossary: Path) -> None:
    glosses = _glosses(compiled_glossary)
    gloss = glosses.of("维苏威火山在1781年爆发了。", "zh")
    assert gloss is not None and {"volcano", "erupt", "1781"} <= set(gloss.split())
    # Longer than a question: every word of a passage, not only its first hundred.
    passage = "河流" * MOST_WORDS + "火山"
    assert "volcano" in (glosses.of(passage, "zh") or "")


def test_passages_in_every_language_with_a_dictionary_are_glossed_but_english(
    compiled_glossary: Path,
) -> None:
    glosses = _glosses(compiled_glossary)
    german = glosses.of("Die Überfahrt dauert zwei Stunden.", "de")
    assert german is not None and {"crossing", "lasts"} <= set(german.split())
    assert glosses.of("The ferry leaves at eight.", "en") is None
    assert glosses.of("The ferry leaves at eight.", None) is None


def test_an_answer_reads_a_passage_in_english_with_every_sense_of_its_words(
    compiled_glossary: Path, tmp_path: Path
) -> None:
    """`english` (the evidence verdict's) finds the language itself, keeps every sense of a
    word (German "Stunden" is "hours" only after "classes, lessons, periods"), and never waits
    for dictionaries that are not open yet."""
    glosses = _glosses(compiled_glossary)
    assert glosses.glossary.wait_ready(120)
    english = glosses.english("Die Überfahrt dauert zwei Stunden.")
    assert english is not None and {"crossing", "hours"} <= set(english.split())
    assert "hours" not in (glosses.of("Die Überfahrt dauert zwei Stunden.", "de") or "")
    assert glosses.english("The crossing takes two hours.") is None
    unopened = PassageGlosses(Glossary(tmp_path / "glossary.sqlite", tmp_path / "none"))
    assert unopened.english("Die Überfahrt dauert zwei Stunden.") is None


def test_the_rows_written_again_are_those_of_the_split_and_glossed_languages() -> None:
    """The partial index (the newest migration that builds it) and the upgrade find the rows
    whose vector the current version writes otherwise."""
    for language in (*COMPOUNDING, *GLOSSED):
        assert f"'{language}'" in OUTDATED_ROWS
    spec = importlib.util.spec_from_file_location(
        "glosses_migration", MIGRATIONS / "20261129_0035_passage_glosses.py"
    )
    assert spec is not None and spec.loader is not None
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    assert migration.OUTDATED == OUTDATED_ROWS
