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

from docchat.chats.turns import Turn
from docchat.components import Components
from docchat.llm import prompts
from docchat.retrieval.context import ContextEntry, estimate_tokens, source_of
from docchat.retrieval.schemas import PREVIEW_CHARS
from docchat.retrieval.vectorstore import Chunk, ScoredChunk

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


def asks_for_whole_documents(question: str, scope: str) -> bool:
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
    used = 0
    for part in parts:
        tokens = estimate_tokens(part.text)
        if tokens > budget_tokens:
            part = Part(part.text[: budget_tokens * 4], part.first)
            tokens = budget_tokens
        if groups and used + tokens <= budget_tokens:
            groups[-1].append(part)
            used += tokens
        else:
            groups.append([part])
            used = tokens
    return groups


async def _notes(components: Components, turn: Turn, group: list[Part], max_tokens: int) -> Part:
    passages = "\n\n".join(part.text for part in group)
    completion = await components.llm.complete(
        prompts.notes_messages(turn.question, passages),
        model=turn.options.model,
        max_tokens=max_tokens,
        temperature=0.0,
    )
    return Part(completion.content.strip() or passages[: max_tokens * 4], group[0].first)


async def _condense(
    components: Components, turn: Turn, parts: list[Part], budget: int
) -> tuple[list[Part], int] | None:
    """Parts condensed until they fit `budget`, and the model calls it took; None when that
    would take more than `whole_document_max_calls` (checked before each round, so a document
    too long to summarise costs no call at all)."""
    calls = 0
    cap = components.settings.rag.whole_document_max_calls
    # Notes of one group must leave room for two more beside them in the next round.
    note_tokens = max(64, min(components.settings.llm.max_tokens, budget // 3))
    for _ in range(MAX_ROUNDS):
        if sum(estimate_tokens(part.text) for part in parts) <= budget:
            break
        groups = _pack(parts, budget)
        if calls + len(groups) > cap:
            return None
        # Each round calls the model once per group, one after the other: local servers
        # answer one request at a time anyway, and order keeps the notes in reading order.
        parts = [await _notes(components, turn, group, note_tokens) for group in groups]
        calls += len(groups)
    return parts, calls


def _entry(number: int, part: Part, condensed: bool) -> ContextEntry:
    source = source_of(ScoredChunk(part.first, 1.0))
    if condensed:
        source = source.model_copy(update={"content_preview": part.text[:PREVIEW_CHARS]})
    return ContextEntry(number=number, text=part.text, source=source)


async def whole_document_entries(
    components: Components, turn: Turn, meta: dict[str, object], budget: int
) -> list[ContextEntry] | None:
    """The documents in full (or condensed) as context; None when they cannot be read whole."""
    if len(turn.documents) > MAX_DOCUMENTS or budget < MIN_BUDGET_TOKENS:
        return None
    chunks = await components.lexical.document_chunks(turn.documents)
    if not chunks or {chunk.document_id for chunk in chunks} != {d.id for d in turn.documents}:
        # Documents indexed before the lexical index existed have no text here yet.
        return None
    # Stitching hundreds of chunks is CPU work: not on the event loop.
    parts = await asyncio.to_thread(_parts, chunks, components.settings.rag.chunk_overlap)
    condensing = await _condense(components, turn, parts, budget)
    if condensing is None:
        meta["whole_documents_skipped"] = "too_long"
        logger.info("whole documents chat=%s: too long to condense, searching", turn.chat_id)
        return None
    condensed, calls = condensing
    entries = [_entry(n, part, calls > 0) for n, part in enumerate(condensed, start=1)]
    total = 0
    fitting: list[ContextEntry] = []
    for entry in entries:  # what MAX_ROUNDS could not condense enough is left out
        total += estimate_tokens(entry.text)
        if total > budget and fitting:
            break
        fitting.append(entry)
    meta.update(
        retrieval_mode="whole_documents",
        retrieval_count=len(fitting),
        whole_document_chunks=len(chunks),
        map_reduce_calls=calls,
    )
    logger.info(
        "whole documents chat=%s documents=%d chunks=%d calls=%d",
        turn.chat_id,
        len(turn.documents),
        len(chunks),
        calls,
    )
    return fitting
