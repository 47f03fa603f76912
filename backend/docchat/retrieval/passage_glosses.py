"""Passages in German, French, Spanish and Chinese read in English too: their dictionary
gloss, for BM25 and, for Chinese, for an embedder that reads English only.

An English question shares little with a passage in another language but its names and
numbers: with Chinese, nothing but its numbers, as BM25 reads Chinese as pairs of characters
and the bundled embedding model (all-MiniLM-L6-v2, trained on English) maps Chinese text to
vectors that say little of its meaning. The question is glossed into the documents' languages
for the search (`answers/search_queries.py`), but one gloss of a short question misses the
passage's own words as often as it meets them. So the passage is also written the other way,
once, when it is indexed: the dictionaries' English for each of its words (`word_by_word`,
"维苏威火山在1781年爆发了" -> "... volcano exist 1781 year break out erupt explode"). BM25
reads the gloss as English beside the passage's own words, and an embedder that cannot read
the passage's language (`llm.embeddings.reads`) embeds the gloss instead. The passage shown
and quoted stays its own text. Measured on XQuAD (docs/retrieval-quality.md), the English
questions' recall@4 with no model went from 0.611 to 0.893 over Chinese documents and from
0.879 to 0.926 over German ones, and questions in the documents' own language gained too.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from docchat.retrieval.languages import language_of
from docchat.retrieval.word_by_word import LANGUAGES, MOST_PASSAGE_WORDS, Glossary

# The languages whose passages are also indexed as their English gloss: those with a dictionary
# into English.
GLOSSED = frozenset(LANGUAGES)
# PostgreSQL's text search configuration the gloss is read with.
GLOSS_CONFIGURATION = "english"
# How long indexing waits for the dictionaries when the service has just started and compiles
# them (about a minute); after that a passage is indexed without its gloss.
READY_WAIT_SECONDS = 180.0
# Translations of each word in the English an answer's evidence is checked in: all a word's
# senses, as its usual one may come late in the dictionary (German "Stunden": classes, lessons,
# periods, hours), and a check of words is lenient on purpose.
EVIDENCE_TRANSLATIONS_PER_WORD = 8
# How many passages' English glosses answers keep (`PassageGlosses.english`).
RECENT_GLOSSES = 256


@dataclass(frozen=True)
class PassageGlosses:
    """English glosses of passages in `GLOSSED` languages, from the installed dictionaries."""

    glossary: Glossary
    ready_wait_seconds: float = READY_WAIT_SECONDS
    _recent: OrderedDict[str, str | None] = field(
        default_factory=OrderedDict, init=False, repr=False, compare=False
    )
    _lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )

    async def ready(self) -> None:
        """Wait, off the event loop and at most `ready_wait_seconds`, for the dictionaries."""
        await asyncio.to_thread(self.glossary.wait_ready, self.ready_wait_seconds)

    async def ready_for(self, texts: Sequence[str]) -> None:
        """`ready`, when one of `texts` is to be glossed: called before the transaction that
        writes their rows, which must not stay open while the dictionaries compile (a worker's
        holds its job's row, which its heartbeats write)."""
        languages = await asyncio.to_thread(lambda: {language_of(text) for text in texts})
        if languages & GLOSSED:
            await self.ready()

    def english(self, text: str) -> str | None:
        """The English gloss of a passage or quote read in an answer (`answers.evidence`), in
        whatever language it is written; None when it is not glossed, or while the
        dictionaries are not open yet: never waits for them. An answer reads the same passage
        several times (which it is about, its quotes, its verdict): the last glosses are kept."""
        with self._lock:
            if text in self._recent:
                self._recent.move_to_end(text)
                return self._recent[text]
        language = language_of(text)
        if language not in GLOSSED:
            english = None
        elif not self.glossary.directions:
            return None  # not open yet: not kept, it will be once they are
        else:
            english = self.glossary.gloss(
                text,
                language,
                most_words=MOST_PASSAGE_WORDS,
                per_word=EVIDENCE_TRANSLATIONS_PER_WORD,
            )
        with self._lock:
            self._recent[text] = english
            if len(self._recent) > RECENT_GLOSSES:
                self._recent.popitem(last=False)
        return english

    def of(self, text: str, language: str | None) -> str | None:
        """The passage's English gloss, or None when its language is not glossed or there is
        no dictionary for it. Blocks while the dictionaries are compiled: call it off the
        event loop."""
        if language not in GLOSSED:
            return None
        if not self.glossary.wait_ready(self.ready_wait_seconds):
            return None
        return self.glossary.gloss(text, language, most_words=MOST_PASSAGE_WORDS)
