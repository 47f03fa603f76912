"""Tool-calling retrieval: the model asks for `semantic_search`, the server decides the scope.

The tool's schema has no document or file ids, and any the model sends anyway are ignored:
the search always runs over the ids the server resolved for this conversation.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from docchat.llm.client import ToolCall
from docchat.retrieval.context import (
    ContextEntry,
    TokenBudget,
    dated,
    documents_of,
    format_context,
    source_of,
)
from docchat.retrieval.index import ScoredChunk, SearchScope
from docchat.retrieval.passage_identity import HEADER_CHARS, DocumentIdentities, DocumentIdentity
from docchat.retrieval.retriever import Retriever

TOOL_NAME = "semantic_search"
MAX_TOOL_TOP_K = 20
SEMANTIC_SEARCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": (
            "Search the user's documents for passages relevant to a query. Returns numbered "
            "passages, each after a line naming its source; in the answer, put a passage's "
            "number in brackets after the sentence that uses it."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for, in plain words"},
                "top_k": {
                    "type": "integer",
                    "description": "How many passages to return (default 4, at most 20)",
                    "minimum": 1,
                    "maximum": MAX_TOOL_TOP_K,
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
}


def _error(message: str) -> str:
    return json.dumps({"error": message})


@dataclass
class ToolRetrieval:
    """Runs the model's search calls over a fixed document scope, numbering what it finds."""

    retriever: Retriever
    documents: SearchScope
    default_top_k: int
    # What the passages found may spend; passages read inline are already in `entries`.
    budget: TokenBudget
    entries: list[ContextEntry] = field(default_factory=list)
    # False when the user chose the documents or the chat is already about them (see Question).
    require_match: bool = True
    # The passages' headers: their documents' dates and collections, as `reader` sees them.
    identities: DocumentIdentities | None = None
    reader: uuid.UUID | None = None
    searches: int = 0
    unavailable: str | None = None
    _numbers: dict[str, int] = field(default_factory=dict)
    _known: dict[uuid.UUID, DocumentIdentity] = field(default_factory=dict)

    def _parse(self, call: ToolCall) -> tuple[str, int] | str:
        if call.name != TOOL_NAME:
            return f"Unknown tool {call.name!r}; the only tool is {TOOL_NAME}"
        try:
            arguments = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            return "The arguments are not valid JSON"
        if not isinstance(arguments, dict):
            return "The arguments must be a JSON object"
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return "`query` must be a non-empty string"
        top_k = arguments.get("top_k", self.default_top_k)
        if not isinstance(top_k, int) or isinstance(top_k, bool):
            top_k = self.default_top_k
        return query, max(1, min(top_k, MAX_TOOL_TOP_K))

    async def run(self, call: ToolCall) -> str:
        """The tool message content for one call: numbered passages, or an error for the model."""
        parsed = self._parse(call)
        if isinstance(parsed, str):
            return _error(parsed)
        query, top_k = parsed
        hits = await self.search_in(query, self.documents, top_k)
        if isinstance(hits, str):
            return _error(hits)
        found = self.numbered(hits)
        if not found:
            return "No matching passages were found."
        return await self.formatted(found)

    def seed(self, entries: Sequence[ContextEntry]) -> None:
        """Start from passages already numbered (those the question's own search found)."""
        for entry in entries:
            self.entries.append(entry)
            if entry.source.chunk_id:
                self._numbers[entry.source.chunk_id] = entry.number

    async def search_in(
        self, query: str, documents: SearchScope, top_k: int
    ) -> list[ScoredChunk] | str:
        """The passages `query` finds in `documents` (this scope, or a part of it), or why none
        could be searched for."""
        self.searches += 1
        result = await self.retriever.search(
            query, documents, top_k, require_match=self.require_match
        )
        if result.unavailable:
            self.unavailable = result.unavailable
            return "Document search is unavailable right now; answer without it"
        return result.chunks

    def numbered(self, hits: Sequence[ScoredChunk]) -> list[ContextEntry]:
        """The passages of `hits`, each numbered once (a passage found again keeps its number;
        a new one is dropped once the budget is spent)."""
        found: list[ContextEntry] = []
        for hit in hits:
            number = self._numbers.get(hit.chunk.id)
            if number is None:
                if not self.budget.take(hit.chunk.text, header=HEADER_CHARS):
                    continue
                number = len(self.entries) + 1
                self._numbers[hit.chunk.id] = number
                self.entries.append(ContextEntry(number, hit.chunk.text, source_of(hit)))
            found.append(self.entries[number - 1])
        return found

    async def formatted(self, entries: list[ContextEntry]) -> str:
        """`entries` as the model reads them, each after its header."""
        await self._learn_identities(entries)
        return format_context(entries, self._known)

    @property
    def dated_entries(self) -> list[ContextEntry]:
        """The passages found, each source with its document's date (`context.dated`)."""
        return dated(self.entries, self._known)

    async def _learn_identities(self, entries: list[ContextEntry]) -> None:
        """The identities of the documents of `entries` not known yet (one query, if any)."""
        unknown = [d for d in documents_of(entries) if d not in self._known]
        if self.identities is not None and unknown:
            self._known.update(await self.identities.identities(unknown, self.reader))
            for document in unknown:  # gone since: a header with its name, asked no more
                self._known.setdefault(document, DocumentIdentity())


def assistant_tool_message(content: str, calls: list[ToolCall]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content or None,
        "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ],
    }
