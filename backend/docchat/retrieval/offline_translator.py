"""A question in another language, translated into English on this machine, with no model.

Two ways, the better first:

- **Apertium**, the rule-based machine translation system (Debian's `apertium` with
  `apertium-eng-spa`, and `apertium-fr-es` for French, translated through Spanish): whole
  sentences, with their grammar ("¿Quién volvió a convertir a Harvard en una institución de
  investigación líder?" -> "Who went back to convert to Harvard in an institution of
  investigation leader?"), in about 0.1 s a question. It has no German or Chinese to English.
- **Dictionaries**, word by word (`word_by_word`): German, French, Spanish and Chinese.

A connected model translates better than both (`answers.search_queries` asks it first);
these are for the built-in demo model and for a model call that failed.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from docchat.retrieval.word_by_word import Glossary

logger = logging.getLogger(__name__)

TranslatedBy = Literal["model", "apertium", "dictionary"]
# Apertium's language pairs, one after the other, that take a language into English.
APERTIUM_CHAINS = {"es": ("spa-eng",), "fr": ("fr-es", "spa-eng")}
APERTIUM_MODES = Path("/usr/share/apertium/modes")
APERTIUM_PACKAGES = ("apertium", "apertium-eng-spa", "apertium-fr-es")
APERTIUM_TIMEOUT_SECONDS = 5.0
# A question is a sentence or two; Apertium's time grows with the text.
LONGEST_TRANSLATED_CHARS = 2_000


@dataclass(frozen=True)
class Translation:
    text: str
    by: TranslatedBy


@dataclass
class Apertium:
    """Apertium's command, for the languages whose pairs into English are installed."""

    command: str | None = field(default_factory=lambda: shutil.which("apertium"))
    modes: Path = APERTIUM_MODES

    @property
    def languages(self) -> frozenset[str]:
        if self.command is None:
            return frozenset()
        return frozenset(
            language
            for language, chain in APERTIUM_CHAINS.items()
            if all((self.modes / f"{pair}.mode").is_file() for pair in chain)
        )

    async def translate(self, text: str, language: str) -> str | None:
        """`text` in English, or None when the pair is missing or Apertium failed."""
        if language not in self.languages or self.command is None:
            return None
        translated = text[:LONGEST_TRANSLATED_CHARS]
        for pair in APERTIUM_CHAINS[language]:
            # -u: an unknown word is written as it was, without Apertium's "*" mark.
            result = await self._run(self.command, "-u", pair, text=translated)
            if result is None:
                return None
            translated = result
        return " ".join(translated.split()) or None

    @staticmethod
    async def _run(*command: str, text: str) -> str | None:
        # In a thread with the standard library's pipes, not the event loop's: under uvloop
        # (the server's loop) a child's standard input is a socket, which Apertium's shell
        # script does not read ("USAGE: apertium-destxt", nothing out, exit status 0).
        try:
            done = await asyncio.to_thread(
                subprocess.run,
                command,
                input=text.encode(errors="replace"),
                capture_output=True,
                timeout=APERTIUM_TIMEOUT_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired:
            logger.warning("apertium %s took over %.0f s", command[-1], APERTIUM_TIMEOUT_SECONDS)
            return None
        except OSError as exc:
            logger.warning("apertium %s could not start: %s", command[-1], exc)
            return None
        if done.returncode != 0 or not done.stdout.strip():
            errors = done.stderr.decode(errors="replace")[:200]
            logger.warning("apertium %s failed: %s", command[-1], errors or "no output")
            return None
        return done.stdout.decode("utf-8", errors="replace")


@dataclass
class OfflineTranslator:
    """Apertium where it has the language, else the dictionaries word by word."""

    glossary: Glossary
    apertium: Apertium = field(default_factory=Apertium)

    def prepare(self) -> None:
        self.glossary.prepare()

    @property
    def languages(self) -> frozenset[str]:
        return self.apertium.languages | self.glossary.languages

    async def translate(self, text: str, language: str) -> Translation | None:
        translated = await self.apertium.translate(text, language)
        if translated:
            return Translation(translated, "apertium")
        try:
            # A few to a few hundred lookups: off the event loop.
            glossed = await asyncio.to_thread(
                self.glossary.gloss, text[:LONGEST_TRANSLATED_CHARS], language
            )
        except (sqlite3.Error, ValueError):  # a damaged file: the question is searched as asked
            logger.exception("the dictionaries could not translate a question")
            return None
        return Translation(glossed, "dictionary") if glossed else None
