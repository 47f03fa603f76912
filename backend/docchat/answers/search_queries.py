"""What a question is searched with: its words (with a follow-up, the conversation's, or rewritten
by the model when reformulation is on), and their translation into the documents' language when
the question is written in another one.

Both model calls go through the answer's `MeteredLLM` (their tokens are the answer's), and each
may fail without failing the answer: the search then goes on without it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from docchat.answers.meta import AnswerMeta
from docchat.kit.errors import DocchatError
from docchat.llm import prompts
from docchat.llm.usage import MeteredLLM
from docchat.retrieval import followups, languages
from docchat.retrieval.offline_translator import OfflineTranslator

logger = logging.getLogger(__name__)

# Apertium's pairs and the dictionaries installed translate into English.
OFFLINE_TRANSLATION_INTO = "en"


@dataclass(frozen=True)
class Asked:
    """The question as the search queries are written from it."""

    text: str
    # Earlier messages, oldest first.
    history: list[dict[str, Any]]
    model: str
    reformulate: bool


@dataclass(frozen=True)
class SearchQueries:
    query: str
    # The query in the documents' language; None when it needs no translation (or got none).
    translated: str | None = None

    @property
    def wordings(self) -> list[str]:
        return [self.query] if self.translated is None else [self.query, self.translated]


@dataclass(frozen=True)
class QueryWriter:
    """Writes the search queries of a question (`queries`)."""

    # RAG_TRANSLATE_QUESTIONS, and the documents' language (RAG_LEXICAL_LANGUAGE).
    translate: bool
    documents_language: str
    # The built-in demo model cannot translate: the offline translator does.
    builtin_model: bool
    translator: OfflineTranslator | None = None

    async def queries(self, asked: Asked, llm: MeteredLLM, meta: AnswerMeta) -> SearchQueries:
        query = await self._search_query(asked, llm, meta)
        return SearchQueries(query, await self._translated(query, asked, llm, meta))

    async def _search_query(self, asked: Asked, llm: MeteredLLM, meta: AnswerMeta) -> str:
        """The question's words, or with a follow-up, the conversation's: rewritten by the
        model when reformulation is on, else with the previous question (`followups`)."""
        with_conversation = followups.search_query(asked.text, asked.history)
        if not (asked.reformulate and asked.history):
            return with_conversation
        messages = prompts.reformulation_messages(asked.history, asked.text)
        rewritten, meta.reformulation_ms = await _model_query(
            llm, messages, asked.model, max_tokens=100, purpose="query reformulation"
        )
        if rewritten is None:
            return with_conversation
        return rewritten or asked.text

    async def _translated(
        self, query: str, asked: Asked, llm: MeteredLLM, meta: AnswerMeta
    ) -> str | None:
        """The query in the documents' language (the installation's, `RAG_LEXICAL_LANGUAGE`)
        when the question is written in another one: the bundled embedding model reads English
        only, and a German question shares little but its names with an English passage. A
        connected model translates it; without one (the built-in demo model), or when its call
        fails, Apertium or the installed dictionaries do (`translation`). None when there is
        nothing to translate."""
        if not self.translate:
            return None
        target = languages.language_code(self.documents_language)
        language = languages.language_of(asked.text)
        if target is None or language is None or language == target:
            return None
        translated = None
        if not self.builtin_model:
            messages = prompts.translation_messages(query, self.documents_language.capitalize())
            translated, meta.translation_ms = await _model_query(
                llm, messages, asked.model, max_tokens=200, purpose="question translation"
            )
            meta.translated_by = "model" if translated and translated != query else None
        if meta.translated_by is None:
            translated = await self._translated_offline(query, language, target, meta)
        if not translated or translated == query:
            return None
        meta.translated_query = translated[:500]
        return translated

    async def _translated_offline(
        self, query: str, language: str, target: str, meta: AnswerMeta
    ) -> str | None:
        if self.translator is None or target != OFFLINE_TRANSLATION_INTO:
            return None
        started = time.perf_counter()
        translation = await self.translator.translate(query, language)
        if translation is None or translation.text == query:
            return None
        meta.translated_by = translation.by
        meta.translation_ms = _ms_since(started)
        return translation.text


async def _model_query(
    llm: MeteredLLM,
    messages: list[dict[str, Any]],
    model: str,
    *,
    max_tokens: int,
    purpose: str,
) -> tuple[str | None, float]:
    """A search query the model writes (a follow-up made standalone, a translation): its
    text, or None when the call failed (the search goes on without it), and the
    milliseconds the call took."""
    started = time.perf_counter()
    try:
        reply = await llm.complete(messages, model=model, max_tokens=max_tokens, temperature=0.0)
    except DocchatError as exc:
        logger.warning("%s failed, searching without it: %s", purpose, exc)
        return None, _ms_since(started)
    return reply.content.strip(), _ms_since(started)


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)
