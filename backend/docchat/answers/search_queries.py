"""What a question is searched with: its words (with a follow-up, the conversation's, or rewritten
by the model when reformulation is on), and their translation into each language its documents
are written in, English (the installation's language) as the pivot.

The model calls go through the answer's `MeteredLLM` (their tokens are the answer's), and each
may fail without failing the answer: the search then goes on without it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from docchat.answers.meta import AnswerMeta
from docchat.kit.errors import DocchatError
from docchat.llm import prompts
from docchat.llm.usage import MeteredLLM
from docchat.retrieval import followups, languages
from docchat.retrieval.index import SearchScope
from docchat.retrieval.offline_translator import OfflineTranslator, Translation

logger = logging.getLogger(__name__)

# Apertium's pairs and the dictionaries installed translate into and out of English: a question
# in another language reaches a third one through its English.
PIVOT = "en"


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
    # The question's language (ISO 639-1), when it was told or assumed (the installation's).
    language: str | None = None
    # The query in each other language searched, by ISO code, in the order searched.
    translations: dict[str, str] = field(default_factory=dict)

    @property
    def translated(self) -> str | None:
        """The first translation, if any."""
        return next(iter(self.translations.values()), None)

    @property
    def wordings(self) -> list[str]:
        return [self.query, *self.translations.values()]

    @property
    def languages(self) -> list[str | None] | None:
        """Each wording's language, when there are translations, for `search_wordings` to
        rank with it only the passages in that language; None for the English one, which ranks
        every passage. Measured (`bench.eval_languages`): a German question as written ranks
        English passages holding its names above the one that answers (recall@4 0.762 ->
        0.841 with its own language's passages only), but an English question as written still
        ranks German passages better than their dictionary gloss does (the embedding model reads
        English), and searched beside its translation both count (docs/retrieval-quality.md)."""
        if not self.translations:
            return None
        codes = [self.language, *self.translations]
        return [None if code == PIVOT else code for code in codes]


ScopeLanguages = Callable[[SearchScope], Awaitable[frozenset[str]]]


@dataclass(frozen=True)
class QueryWriter:
    """Writes the search queries of a question (`queries`)."""

    # RAG_TRANSLATE_QUESTIONS, and the installation's language (RAG_LEXICAL_LANGUAGE).
    translate: bool
    documents_language: str
    # The built-in demo model cannot translate: the offline translator does.
    builtin_model: bool
    translator: OfflineTranslator | None = None
    # The languages a scope's documents are written in (`LexicalIndex.languages_in`).
    scope_languages: ScopeLanguages | None = None

    async def queries(
        self,
        asked: Asked,
        llm: MeteredLLM,
        meta: AnswerMeta,
        documents: SearchScope | None = None,
    ) -> SearchQueries:
        """The question's search queries over `documents`; `meta` says in which languages it
        was searched (`languages_searched`) and in which of its documents' it could only be
        searched as written (`searched_as_written`)."""
        query = await self._search_query(asked, llm, meta)
        installation = languages.language_code(self.documents_language)
        language = languages.language_of(asked.text) or installation
        wanted = await self._wanted(language, installation, documents)
        translations: dict[str, str] = {}
        if self.translate and language is not None and wanted:
            translations = await self._translations(query, language, wanted, asked, llm, meta)
        if documents:
            meta.languages_searched = [language, *translations] if language else None
            scope = await self._languages_of(documents)
            as_written = sorted(scope - {language} - set(translations))
            meta.searched_as_written = as_written or None
        return SearchQueries(query, language, translations)

    async def _languages_of(self, documents: SearchScope) -> frozenset[str]:
        if self.scope_languages is None:
            return frozenset()
        return await self.scope_languages(documents)

    async def _wanted(
        self, language: str | None, installation: str | None, documents: SearchScope | None
    ) -> list[str]:
        """The languages to translate the question into: the installation's (the pivot, and
        what the bundled embedding model reads), then each other of its documents', in the
        order of their codes."""
        found = await self._languages_of(documents) if documents else frozenset()
        ordered = ([installation] if installation else []) + sorted(found - {installation})
        return [code for code in ordered if code != language]

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

    async def _translations(
        self,
        query: str,
        language: str,
        wanted: list[str],
        asked: Asked,
        llm: MeteredLLM,
        meta: AnswerMeta,
    ) -> dict[str, str]:
        """The query in each `wanted` language it could be translated into: the bundled
        embedding model reads English only, and a question shares little but its names with a
        passage in another language. A connected model translates it (one call a language, at
        once); without one (the built-in demo model), or where its call fails, this machine
        does (`offline_translator`: Apertium or the dictionaries, into or out of English, and
        through English between two other languages). The first translation is shown in
        `meta.translated_query`, with what made it (`translated_by`)."""
        started = time.perf_counter()
        made: dict[str, Translation] = {}
        if not self.builtin_model:
            made = await self._by_model(query, wanted, asked, llm)
        missing = [code for code in wanted if code not in made]
        if missing:
            made |= await self._offline(query, language, missing, made)
        translations = {
            code: made[code].text for code in wanted if code in made and made[code].text != query
        }
        if translations:
            first = next(iter(translations))
            meta.translated_query = translations[first][:500]
            meta.translated_by = made[first].by
            meta.translation_ms = _ms_since(started)
        return translations

    async def _by_model(
        self, query: str, wanted: list[str], asked: Asked, llm: MeteredLLM
    ) -> dict[str, Translation]:
        names = {code: languages.name_of(code) for code in wanted}
        replies = await asyncio.gather(
            *(
                _model_query(
                    llm,
                    prompts.translation_messages(query, name),
                    asked.model,
                    max_tokens=200,
                    purpose="question translation",
                )
                for name in names.values()
            )
        )
        return {
            code: Translation(text, "model")
            for code, (text, _) in zip(names, replies, strict=True)
            if text and text != query
        }

    async def _offline(
        self, query: str, language: str, wanted: list[str], made: dict[str, Translation]
    ) -> dict[str, Translation]:
        """The query in each `wanted` language this machine translates it into: directly when
        one side is English, else through its English (the model's, when it made one)."""
        if self.translator is None:
            return {}
        found: dict[str, Translation] = {}
        english = query if language == PIVOT else None
        if PIVOT in made:
            english = made[PIVOT].text
        elif english is None:
            into_english = await self.translator.translate(query, language, PIVOT)
            if into_english is not None:
                english = into_english.text
                found[PIVOT] = into_english
        for code in wanted:
            if code == PIVOT or english is None:
                continue
            translation = await self.translator.translate(english, PIVOT, code)
            if translation is not None and translation.text:
                found[code] = translation
        return {code: found[code] for code in wanted if code in found}


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
