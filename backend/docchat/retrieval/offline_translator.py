"""A question translated on this machine, with no model: into English from German, French,
Spanish and Chinese, and from English into each of them (English is the pivot: a German
question about French documents goes through its English).

Two ways, the better first:

- **Apertium**, the rule-based machine translation system (Debian's `apertium` with
  `apertium-eng-spa`, both ways, and `apertium-fr-es` for French, translated through Spanish):
  whole sentences, with their grammar ("¿Quién volvió a convertir a Harvard en una institución
  de investigación líder?" -> "Who went back to convert to Harvard in an institution of
  investigation leader?"), in about 0.1 s a question. It has no German or Chinese.
- **Dictionaries**, word by word (`word_by_word`): German, French, Spanish and Chinese, both
  ways.

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
ENGLISH = "en"
# Apertium's language pairs, one after the other, that take a language into English, and
# English into a language.
APERTIUM_CHAINS = {"es": ("spa-eng",), "fr": ("fr-es", "spa-eng")}
APERTIUM_CHAINS_FROM_ENGLISH = {"es": ("eng-spa",), "fr": ("eng-spa", "es-fr")}
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
        """The languages it translates into English."""
        return self._installed(APERTIUM_CHAINS)

    @property
    def targets(self) -> frozenset[str]:
        """The languages it translates English into."""
        return self._installed(APERTIUM_CHAINS_FROM_ENGLISH)

    def _installed(self, chains: dict[str, tuple[str, ...]]) -> frozenset[str]:
        if self.command is None:
            return frozenset()
        return frozenset(
            language
            for language, chain in chains.items()
            if all((self.modes / f"{pair}.mode").is_file() for pair in chain)
        )

    async def translate(self, text: str, language: str, target: str = ENGLISH) -> str | None:
        """`text`, written in `language`, in `target` (one of them English), or None when the
        pair is missing or Apertium failed."""
        if language == ENGLISH:
            chain = APERTIUM_CHAINS_FROM_ENGLISH.get(target) if target in self.targets else None
        else:
            chain = APERTIUM_CHAINS.get(language) if target == ENGLISH else None
            chain = chain if language in self.languages else None
        if chain is None:
            return None
        return await self.translate_pair(text, chain)

    async def translate_pair(self, text: str, chain: tuple[str, ...]) -> str | None:
        """`text` through Apertium's pairs `chain` (mode names: "spa-eng"), one after the
        other; None when Apertium is missing or failed."""
        if self.command is None:
            return None
        translated = text[:LONGEST_TRANSLATED_CHARS]
        for pair in chain:
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
        """The languages it translates into English."""
        return self.apertium.languages | self.glossary.languages

    @property
    def targets(self) -> frozenset[str]:
        """The languages it translates English into."""
        return self.apertium.targets | self.glossary.targets

    async def translate(
        self, text: str, language: str, target: str = ENGLISH
    ) -> Translation | None:
        """`text`, written in `language`, in `target`; one of the two is English."""
        translated = await self.apertium.translate(text, language, target)
        if translated:
            return Translation(translated, "apertium")
        try:
            # A few to a few hundred lookups: off the event loop.
            glossed = await asyncio.to_thread(
                self.glossary.gloss, text[:LONGEST_TRANSLATED_CHARS], language, target
            )
        except (sqlite3.Error, ValueError):  # a damaged file: the question is searched as asked
            logger.exception("the dictionaries could not translate a question")
            return None
        return Translation(glossed, "dictionary") if glossed else None
