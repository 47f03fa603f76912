"""The answer cache: a model's answer reused when the same person asks the same question of the
same prompt.

Off by default (`RAG_ANSWER_CACHE`). Every entry belongs to the person whose question it
answered: it is found only by their own questions (its `user_id`, and the key, which names
them) and goes with their account. No answer crosses people: a general answer can hold what
its asker told the model (a password in their question), and an answer found at all tells that
someone asked. An answer is found in two steps:

1. Its **context key**: a hash of the asker and of everything that reached the model but the
   question's own words: the system prompt with the numbered passages (their text, so a new
   version of a document changes it), the history and the chat's summary, the model, the
   answer settings, the kind of scope and its identity (a listed scope's documents with their
   versions; a wide one's condition and size as last counted). A passage the asker can no
   longer read is not found by their search, so its prompt differs: an answer built from
   documents they cannot read now is never theirs.
2. The **question**: the same words (ignoring case, punctuation and articles), or an embedding
   similarity of at least `RAG_ANSWER_CACHE_SIMILARITY` with the same question words,
   negations and numbers ("When was it founded?" is not "Where was it founded?", 0.957).

A reused answer gets its sources from the asker's own search (the same passages, numbered the
same), is marked `meta.cached`, is recorded and audited as any answer, and counts no tokens.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.answers import repository
from docchat.answers.models import CachedAnswer
from docchat.answers.values import Plan, Question
from docchat.config import AnswerCacheSettings, LLMSettings
from docchat.db import utcnow
from docchat.llm.embeddings import CachedVectors
from docchat.retrieval.index import DocumentScope, SearchScope

# Part of every key: a new version makes every entry kept under an older rule unreachable.
# 2 (issue 67): keys name their asker (version 1 ones were shared by everyone with the scope).
KEY_VERSION = 2
# Candidates compared per lookup: the latest answers kept for one context.
CANDIDATES = 20
_PUNCTUATION = re.compile(r"[^\w\s]")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
# What makes two similar questions different ones: what they ask, negations, comparisons,
# numbers.
_DECISIVE = re.compile(
    r"\b(?:who|whom|whose|what|when|where|why|how|which|not|no|never|without|before|after|"
    r"first|last|most|least|more|less)\b|\d+(?:[.,]\d+)?"
)


def normalised(question: str) -> str:
    lowered = _ARTICLES.sub(" ", _PUNCTUATION.sub(" ", question.casefold()))
    return " ".join(lowered.split())


def decisive_words(question: str) -> list[str]:
    return sorted(_DECISIVE.findall(question.casefold().replace("n't", " not")))


def _scope_identity(documents: SearchScope) -> Any:
    scope = DocumentScope.of(documents)
    if scope.refs is not None:
        return sorted((str(ref.id), ref.version) for ref in scope.refs)
    assert scope.condition is not None
    parameters = sorted((name, repr(value)) for name, value in scope.condition.parameters.items())
    return [scope.condition.sql, parameters, scope.size, scope.totals]


def context_key(
    user_id: uuid.UUID, question: Question, plan: Plan, llm: LLMSettings
) -> bytes | None:
    """The key of the asker and everything but the question's words, or None for an answer
    that is not reused: no model call (quoted, fixed), tool mode, research with tools,
    documents read inline, file parts."""
    if (
        plan.fixed_answer is not None
        or plan.tools is not None
        or plan.research is not None
        or question.inline_documents
    ):
        return None
    if not all(isinstance(message.get("content"), str) for message in plan.messages):
        return None
    options = question.options
    payload = {
        "version": KEY_VERSION,
        "user": str(user_id),
        "prompt": plan.messages[:-1],
        # The model as named, where it runs, and how it samples (the server's default unless
        # the request says).
        "model": [options.model, llm.base_url, llm.temperature],
        "settings": [
            options.rag_enabled,
            options.top_k,
            options.strict,
            options.retrieval,
            options.answer_mode,
            options.research,
            options.reformulate,
            options.temperature,
            plan.max_tokens,
        ],
        "scope": [question.scope, _scope_identity(question.documents)],
    }
    encoded = json.dumps(payload, sort_keys=True, default=str).encode()
    return hashlib.sha256(encoded).digest()


@dataclass(frozen=True)
class Reused:
    content: str
    model: str


def worth_keeping(plan: Plan) -> bool:
    """An answer the model wrote as asked, once `produce` is over: not one it wrote again after
    a bare "[1]", nor the quotes or the fixed text given in place of a failed answer (reused,
    they would come back as a model's answer, without the retry and the reason in `meta`)."""
    return plan.fixed_answer is None and not plan.extracted and not plan.meta.answer_retried


@dataclass
class AnswerCache:
    settings: AnswerCacheSettings
    llm: LLMSettings
    sessionmaker: async_sessionmaker[AsyncSession]
    vectors: CachedVectors

    @property
    def enabled(self) -> bool:
        return self.settings.answer_cache

    def key(self, user_id: uuid.UUID, question: Question, plan: Plan) -> bytes | None:
        return context_key(user_id, question, plan, self.llm) if self.enabled else None

    async def find(self, user_id: uuid.UUID, key: bytes, question: str) -> Reused | None:
        """A kept answer of `user_id`'s for `question` under `key`, still fresh; its use is
        counted."""
        oldest = utcnow() - timedelta(seconds=self.settings.answer_cache_seconds)
        async with self.sessionmaker() as session:
            candidates = await repository.newest_answers(session, user_id, key, oldest, CANDIDATES)
            found = await self._matching(candidates, question)
            if found is None:
                return None
            await repository.count_hit(session, found.id)
            await session.commit()
            return Reused(found.content, found.model)

    async def _matching(self, candidates: list[CachedAnswer], question: str) -> CachedAnswer | None:
        if not candidates:
            return None
        same = normalised(question)
        for candidate in candidates:
            if candidate.normalised == same:
                return candidate
        [vector] = await self.vectors.of([question])
        decisive = decisive_words(question)
        best: tuple[float, CachedAnswer] | None = None
        for candidate in candidates:
            if decisive_words(candidate.question) != decisive:
                continue
            similarity = float(np.dot(vector, np.asarray(candidate.vector, dtype=np.float32)))
            if similarity >= self.settings.answer_cache_similarity and (
                best is None or similarity > best[0]
            ):
                best = (similarity, candidate)
        return best[1] if best is not None else None

    async def keep(
        self, user_id: uuid.UUID, key: bytes, question: str, content: str, model: str
    ) -> None:
        """Keep a finished answer for `user_id`'s reuse; expired ones go as it is written."""
        [vector] = await self.vectors.of([question])
        oldest = utcnow() - timedelta(seconds=self.settings.answer_cache_seconds)
        async with self.sessionmaker() as session:
            await repository.delete_older(session, oldest)
            repository.add(
                session,
                CachedAnswer(
                    user_id=user_id,
                    context_key=key,
                    question=question,
                    normalised=normalised(question),
                    vector=[float(value) for value in vector],
                    content=content,
                    model=model,
                ),
            )
            await session.commit()
