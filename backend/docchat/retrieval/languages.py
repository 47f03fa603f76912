"""Which language a text is written in, and how PostgreSQL's full-text search should read it.

Each chunk is indexed with the text search configuration of its own language (German words
stemmed as German, French stop words dropped as French) and each question is analysed in its
language, so a library of several languages is searched as each of them should be. The language
is told by `py3langid` (langid.py's model: 97 languages, trained on several domains, about a
millisecond a passage, no download: the model is inside the package), limited to the languages
PostgreSQL has a stemmer for and to Chinese, Japanese and Korean; a text too short or too mixed
to tell keeps the installation's configured language (`RAG_LEXICAL_LANGUAGE`).

PostgreSQL's parser keeps a run of Chinese or Japanese characters as one word (they are written
without spaces), so such runs are indexed, and asked, as their overlapping pairs of characters
("全新世" -> "全新 新世"): the usual way search engines read these scripts without a dictionary.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

# ISO 639-1 code -> PostgreSQL text search configuration (those PostgreSQL ships with).
CONFIGURATIONS = {
    "ar": "arabic",
    "hy": "armenian",
    "eu": "basque",
    "ca": "catalan",
    "da": "danish",
    "nl": "dutch",
    "en": "english",
    "fi": "finnish",
    "fr": "french",
    "de": "german",
    "el": "greek",
    "hi": "hindi",
    "hu": "hungarian",
    "id": "indonesian",
    "ga": "irish",
    "it": "italian",
    "lt": "lithuanian",
    "ne": "nepali",
    "no": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "es": "spanish",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
}
# Written without spaces between words: no stemmer, words as pairs of characters.
CJK = {"zh": "simple", "ja": "simple", "ko": "simple"}
# Below this confidence (langid's normalised probability) the configured language is kept:
# "Super Bowl 50" or "Tesla" alone are no language.
MIN_CONFIDENCE = 0.5
# Fewer words than this are no language: "Question one" reads as Italian, "First question" as
# French. (Real questions are longer: 4 of SQuAD's 10,570 are told as another language.)
MIN_WORDS = 4
MIN_CJK_CHARACTERS = 4
# Characters read to tell a passage's language: a chunk's first lines are enough, and the
# cost grows with the length.
SAMPLE_CHARS = 400
# Chinese characters (with the compatibility block), Japanese kana; Hangul is written with
# spaces between words and is left to the parser.
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}")
_CJK_CHARACTER = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


@lru_cache(maxsize=1)
def _identifier() -> Any:
    import py3langid
    from py3langid.langid import LanguageIdentifier

    model = Path(py3langid.__file__).parent / "data" / "model.npz.xz"
    identifier = LanguageIdentifier.from_modelpath(model, norm_probs=True)
    identifier.set_languages([*CONFIGURATIONS, *CJK])
    return identifier


def load_identifier() -> None:
    """Read the language identifier's model now (about a second: it is stored compressed),
    so that the first question after a start does not wait for it."""
    _identifier()


def language_of(text: str) -> str | None:
    """The ISO 639-1 code of the language `text` is written in, or None when it cannot be
    told with confidence (too short, a bare name, a mix)."""
    return _language_of_sample(text[:SAMPLE_CHARS])


# A question is told once for its search and for its translation.
@lru_cache(maxsize=256)
def _language_of_sample(sample: str) -> str | None:
    if len(_CJK_CHARACTER.findall(sample)) < MIN_CJK_CHARACTERS and (
        len(_WORD.findall(sample)) < MIN_WORDS
    ):
        return None
    code, confidence = _identifier().classify(sample)
    return str(code) if confidence >= MIN_CONFIDENCE else None


def configuration(language: str | None, default: str) -> str:
    """The PostgreSQL text search configuration for a language code: `default` when there is
    no language, `simple` (words as written) when PostgreSQL has no stemmer for it."""
    if language is None:
        return default
    return CONFIGURATIONS.get(language) or CJK.get(language) or "simple"


def configuration_of(text: str, default: str) -> str:
    """The text search configuration to read `text` with."""
    return configuration(language_of(text), default)


def _pairs(run: re.Match[str]) -> str:
    characters = run.group()
    return " ".join(characters[i : i + 2] for i in range(len(characters) - 1))


def is_cjk(word: str) -> bool:
    """Whether `word` is a run of Chinese or Japanese characters (read as pairs)."""
    return _CJK_RUN.fullmatch(word) is not None


def segmented(text: str) -> str:
    """`text` with each run of Chinese or Japanese characters written as its overlapping pairs
    of characters, separated by spaces; everything else as it was."""
    return _CJK_RUN.sub(_pairs, text)


_WORD = re.compile(r"\w+", re.UNICODE)


def is_name(word: str, first: bool) -> bool:
    """Whether `word` reads as a name, an acronym or a number (`first`: it opens the text)."""
    capitals = sum(character.isupper() for character in word)
    # The first word's capital is the sentence's; an acronym's ("HT", "IPCC") is its own.
    return any(c.isdigit() for c in word) or capitals > 1 or (capitals == 1 and not first)


def names_in(text: str) -> str:
    """The words of `text` that are names, acronyms or numbers ("Duskmoor", "IPCC", "1887"):
    what a question shares with a passage in another language."""
    words = _WORD.findall(text)
    return " ".join(word for index, word in enumerate(words) if is_name(word, index == 0))


# Languages named in English for a model asked to translate into them.
_CJK_NAMES = {"zh": "Chinese", "ja": "Japanese", "ko": "Korean"}


def name_of(code: str) -> str:
    """The English name of a language of `CONFIGURATIONS` or `CJK` ("de" -> "German")."""
    return _CJK_NAMES.get(code) or CONFIGURATIONS.get(code, code).capitalize()


def language_code(configuration_name: str) -> str | None:
    """The ISO 639-1 code of a text search configuration's language ("german" -> "de")."""
    return next((code for code, name in CONFIGURATIONS.items() if name == configuration_name), None)
