"""Questions translated into English with no model: Apertium, else the dictionaries (issue 41).
Apertium is Debian's, installed by scripts/test.sh (ensure_translation)."""

from __future__ import annotations

from pathlib import Path

import uvloop

from docchat.retrieval.offline_translator import Apertium, OfflineTranslator
from docchat.retrieval.word_by_word import Glossary


async def test_apertium_translates_spanish_and_french_through_spanish() -> None:
    apertium = Apertium()
    assert apertium.languages == {"es", "fr"}, "apertium-eng-spa and apertium-fr-es"
    spanish = await apertium.translate("¿Cuándo dimitió Pachauri como presidente del IPCC?", "es")
    assert spanish is not None
    assert "president of the IPCC" in spanish
    french = await apertium.translate("À quelle température les fours sont-ils chauffés ?", "fr")
    assert french is not None
    assert "temperature" in french
    assert "ovens" in french


async def test_without_apertium_the_dictionaries_translate(compiled_glossary: Path) -> None:
    glossary = Glossary(compiled_glossary, Path("/usr/share/dictd"))
    assert glossary.wait_ready(120)
    translator = OfflineTranslator(glossary, Apertium(command=None))
    translation = await translator.translate("¿Qué hace el médico?", "es")
    assert translation is not None
    assert translation.by == "dictionary"
    with_apertium = OfflineTranslator(glossary)
    translation = await with_apertium.translate("¿Qué hace el médico?", "es")
    assert translation is not None
    assert translation.by == "apertium"
    german = await with_apertium.translate("Wann legt die Fähre ab?", "de")  # no pair: words
    assert german is not None
    assert german.by == "dictionary"
    assert "ferry" in german.text


async def test_a_failing_apertium_is_no_translation(tmp_path: Path) -> None:
    failing = Apertium(command="false")  # exits 1, as a broken installation would
    failing.modes = Path("/usr/share/apertium/modes")
    assert await failing.translate("¿Qué hace el médico?", "es") is None
    missing = Apertium(modes=tmp_path)  # no pairs installed
    assert missing.languages == frozenset()
    assert await missing.translate("¿Qué hace el médico?", "es") is None


def test_apertium_translates_under_the_server_s_event_loop() -> None:
    """Found starting the service: under uvloop (uvicorn's loop) a child's standard input is
    a socket, Apertium's script read nothing from it, and Spanish questions fell back to the
    dictionaries."""
    spanish = uvloop.run(Apertium().translate("¿Cuánto dura la travesía en invierno?", "es"))
    assert spanish is not None
    assert "winter" in spanish


async def test_a_question_with_a_lone_surrogate_is_still_translated() -> None:
    """A JSON string may carry "\\ud800"; it cannot be encoded for Apertium as it is."""
    spanish = await Apertium().translate("¿Cuándo dimitió Pachauri\ud800?", "es")
    assert spanish is not None
    assert "Pachauri" in spanish
