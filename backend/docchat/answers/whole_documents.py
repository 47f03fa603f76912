"""Whole-document answers: "summarise this file", "compare both documents".

Four retrieved chunks cannot summarise a report, so a request to summarise or compare whole
documents reads the documents in full, in order, from the lexical index's copy of their
text. When that text fits the context budget the model sees all of it as numbered passages;
when it does not, it is condensed map-reduce style: each part that fits is turned into notes
by the model (map), and notes that still do not fit are condensed again, until they do; the
answer is then written from the notes, each citable with its document and first page.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass

from docchat.answers.meta import AnswerMeta
from docchat.config import AnswerSettings, IndexingSettings, LLMSettings
from docchat.llm import prompts
from docchat.llm.usage import MeteredLLM
from docchat.retrieval.context import ContextEntry, TokenBudget, source_of
from docchat.retrieval.highlight import preview_of
from docchat.retrieval.index import Chunk, DocumentScope, ScoredChunk, SearchScope
from docchat.retrieval.lexical import LexicalIndex
from docchat.retrieval.passage_identity import HEADER_CHARS

logger = logging.getLogger(__name__)

# More documents than this is a search, not a reading.
MAX_DOCUMENTS = 5
# Condensing rounds before giving up on the rest (each round packs several parts into one).
MAX_ROUNDS = 4
# Below this much room (a very long conversation), search for passages instead.
MIN_BUDGET_TOKENS = 300

_ASKS_FOR_WHOLE = re.compile(
    r"\b(summar(y|ies|i[sz]e[sd]?|i[sz]ing)|overview|tl;?dr|gist|outline|key points|main points|"
    r"compare|comparison|contrast|differences? between|similarit(y|ies) between|"
    r"what (is|are) (this|these|the) (document|file|report|paper|article)s? about)\b",
    re.IGNORECASE,
)
_NAMES_DOCUMENTS = re.compile(
    r"\b(this|these|the|both|all|each|two|my)\s+(\w+\s+)?"
    r"(document|file|pdf|report|paper|article|text|book|chapter|manual|notes?)s?\b",
    re.IGNORECASE,
)


def asks_for_whole_documents(question: str, scope: str | None) -> bool:
    """A request about documents as wholes: chosen documents, or ones the question names."""
    if not _ASKS_FOR_WHOLE.search(question):
        return False
    return scope in {"message", "chat"} or bool(_NAMES_DOCUMENTS.search(question))


def without_overlap(previous: str, text: str, overlap: int) -> str:
    """`text` less the start it repeats from the end of `previous` (chunks overlap)."""
    for size in range(min(overlap, len(previous), len(text)), 0, -1):
        if previous.endswith(text[:size]):
            return text[size:].lstrip()
    return text


@dataclass(frozen=True)
class Part:
    text: str
    first: Chunk


def _parts(chunks: list[Chunk], overlap: int) -> list[Part]:
    parts: list[Part] = []
    for chunk in chunks:
        text = chunk.text
        if parts and parts[-1].first.document_id == chunk.document_id:
            text = without_overlap(parts[-1].text, text, overlap)
        parts.append(Part(text, chunk))
    return parts


def _pack(parts: list[Part], budget_tokens: int) -> list[list[Part]]:
    """Consecutive parts grouped so that each group fits `budget_tokens` (a lone big part is
    cut to fit)."""
    groups: list[list[Part]] = []
    room = TokenBudget(0)
    for part in parts:
        if groups and room.take(part.text):
            groups[-1].append(part)
            continue
        room = TokenBudget(budget_tokens)
        if not room.take(part.text):
            part = Part(room.cut(part.text), part.first)
        groups.append([part])
    return groups


def _entry(number: int, part: Part, condensed: bool) -> ContextEntry:
    source = source_of(ScoredChunk(part.first, 1.0))
    if condensed:
        source = source.model_copy(update={"content_preview": preview_of(part.text)})
    return ContextEntry(number=number, text=part.text, source=source)


def _fit(parts: list[Part], budget_tokens: int) -> bool:
    """Whether the parts fit `budget_tokens` as passages, each with its header line."""
    room = TokenBudget(budget_tokens)
    return all(room.take(part.text, header=HEADER_CHARS) for part in parts)


class WholeDocuments:
    """Reads documents in full for one answer, condensing them with the answer's model."""

    def __init__(
        self,
        llm: MeteredLLM,
        lexical: LexicalIndex,
        *,
        answers: AnswerSettings,
        indexing: IndexingSettings,
        llm_settings: LLMSettings,
    ) -> None:
        self.llm = llm
        self.lexical = lexical
        self.answers = answers
        self.indexing = indexing
        self.llm_settings = llm_settings

    async def _notes(self, request: str, model: str, group: list[Part], max_tokens: int) -> Part:
        passages = "\n\n".join(part.text for part in group)
        completion = await self.llm.complete(
            prompts.notes_messages(request, passages),
            model=model,
            max_tokens=max_tokens,
            temperature=0.0,
        )
        return Part(completion.content.strip() or passages[: max_tokens * 4], group[0].first)

    async def _condense(
        self, request: str, model: str, parts: list[Part], budget_tokens: int
    ) -> tuple[list[Part], int] | None:
        """Parts condensed until they fit the budget, and the model calls it took; None when
        that would take more than `whole_document_max_calls` (checked before each round, so a
        document too long to summarise costs no call at all)."""
        calls = 0
        cap = self.answers.whole_document_max_calls
        # Notes of one group must leave room for two more beside them in the next round.
        note_tokens = max(64, min(self.llm_settings.max_tokens, budget_tokens // 3))
        for _ in range(MAX_ROUNDS):
            if _fit(parts, budget_tokens):
                break
            groups = _pack(parts, budget_tokens)
            if calls + len(groups) > cap:
                return None
            # Each round calls the model once per group, one after the other: local servers
            # answer one request at a time anyway, and order keeps the notes in reading order.
            parts = [await self._notes(request, model, group, note_tokens) for group in groups]
            calls += len(groups)
        return parts, calls

    async def entries(
        self,
        request: str,
        documents: SearchScope,
        *,
        model: str,
        label: str,
        meta: AnswerMeta,
        budget: TokenBudget,
    ) -> list[ContextEntry] | None:
        """The documents in full (or condensed) as context, spent from `budget`; None when
        they cannot be read whole (then the answer searches instead)."""
        listed = DocumentScope.of(documents).refs
        if listed is None or len(listed) > MAX_DOCUMENTS:
            return None
        if budget.remaining_tokens < MIN_BUDGET_TOKENS:
            return None
        chunks = await self.lexical.document_chunks(listed)
        if not chunks or {chunk.document_id for chunk in chunks} != {d.id for d in listed}:
            # Documents indexed before the lexical index existed have no text here yet.
            return None
        # Stitching hundreds of chunks is CPU work: not on the event loop.
        parts = await asyncio.to_thread(_parts, chunks, self.indexing.chunk_overlap)
        condensing = await self._condense(request, model, parts, budget.remaining_tokens)
        if condensing is None:
            meta.whole_documents_skipped = "too_long"
            logger.info("whole documents chat=%s: too long to condense, searching", label)
            return None
        condensed, calls = condensing
        fitting: list[ContextEntry] = []
        for number, part in enumerate(condensed, start=1):
            # What MAX_ROUNDS could not condense enough is left out (the first part stays).
            if not budget.take(part.text, header=HEADER_CHARS) and fitting:
                break
            fitting.append(_entry(number, part, calls > 0))
        meta.retrieval_mode = "whole_documents"
        meta.retrieval_count = len(fitting)
        meta.whole_document_chunks = len(chunks)
        meta.map_reduce_calls = calls
        logger.info(
            "whole documents chat=%s documents=%d chunks=%d calls=%d",
            label,
            len(listed),
            len(chunks),
            calls,
        )
        return fitting
