"""Research mode's tools: what a model that calls tools may do to research a question, all
inside the asker's scope.

- `search_documents`: a search, optionally narrowed by filters (name, kind, dates, collection,
  language: `retrieval.filters`);
- `list_documents`: the documents that match filters, with their dates, sizes and passages;
- `read_document`: a part of a document (a page range, a section by heading or place, from a
  passage on), a few passages at most;
- `finish`: the research is done (with what it could not find, if anything).

A document is named by a handle the tools gave (`D1`, `D2`: in a search's results or a
listing), never by an id: a handle the research was not shown is refused, so no call can
reach past the scope the server resolved. The same call made twice is refused too (its result
is already in the conversation). Every passage found or read is numbered once for the answer
to cite (`ToolRetrieval`), within the answer's token budget.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from docchat.answers.meta import ResearchStep, StepPassage
from docchat.extraction.kinds import FORMATS
from docchat.llm.client import ToolCall
from docchat.retrieval.context import ContextEntry
from docchat.retrieval.filters import (
    CatalogueEntry,
    DocumentCatalogue,
    DocumentFilters,
    FilterError,
)
from docchat.retrieval.index import Chunk, DocumentRef, ScoredChunk
from docchat.retrieval.lexical import LexicalIndex
from docchat.retrieval.passage_identity import one_line
from docchat.retrieval.tools import MAX_TOOL_TOP_K, ToolRetrieval

SEARCH = "search_documents"
LIST = "list_documents"
READ = "read_document"
FINISH = "finish"
# Documents one listing shows (the total says how many more match).
MAX_LISTED = 30
# Passages one read returns (about 1,000 characters each): a part, not a whole document.
READ_PASSAGES = 4
# Passages a step keeps to open (its record is saved with the answer).
STEP_PASSAGES = 12
QUERY_CHARS = 300
SECTION_CHARS = 120
_HANDLE = re.compile(r"^\s*D?(\d{1,4})\s*$", re.IGNORECASE)
_PAGES = re.compile(r"^\s*(\d{1,5})\s*(?:[-–]\s*(\d{1,5}))?\s*$")

_FILTERS: dict[str, Any] = {
    "type": "object",
    "description": "Only documents that match every filter given",
    "properties": {
        "name": {"type": "string", "description": "A piece of the file name"},
        "kind": {
            "type": "string",
            "description": "A kind of file: pdf, docx, xlsx, pptx, csv, markdown, text, html, "
            "epub, image",
        },
        "date_from": {"type": "string", "description": "Dated on or after (2024-01-31 or 2024)"},
        "date_to": {"type": "string", "description": "Dated on or before (2024-12-31 or 2024)"},
        "collection": {"type": "string", "description": "A shared collection, by name"},
        "language": {"type": "string", "description": "A language code, such as en or de"},
    },
    "additionalProperties": False,
}


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> Any:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


RESEARCH_TOOLS: list[dict[str, Any]] = [
    _tool(
        SEARCH,
        "Search the user's documents for passages about a query; returns numbered passages "
        "and the handles (D1, D2...) of their documents.",
        {
            "query": {"type": "string", "description": "What to look for, in plain words"},
            "top_k": {"type": "integer", "minimum": 1, "maximum": MAX_TOOL_TOP_K},
            "filters": _FILTERS,
        },
        ["query"],
    ),
    _tool(
        LIST,
        "List the user's documents that match filters: handle, name, kind, date, size.",
        {"filters": _FILTERS},
        [],
    ),
    _tool(
        READ,
        'Read part of a document by its handle: pages ("3-4"), a section by its heading, or '
        "from a passage number of the document on; returns a few numbered passages.",
        {
            "document": {"type": "string", "description": "A handle such as D2"},
            "pages": {"type": "string", "description": "A page or a range, such as 3-4"},
            "section": {"type": "string", "description": "A heading, slide or sheet name"},
            "from_passage": {"type": "integer", "minimum": 0},
        },
        ["document"],
    ),
    _tool(
        FINISH,
        "Stop researching: the passages found answer every part of the question, or nothing "
        "more can be found. Then write the answer.",
        {"not_covered": {"type": "string", "description": "Parts nothing was found for"}},
        [],
    ),
]
TOOL_NAMES = frozenset(tool["function"]["name"] for tool in RESEARCH_TOOLS)


class Refused(Exception):
    """A call the tools do not run, with what the model is told."""


@dataclass(frozen=True)
class Outcome:
    """A tool call's result for the model, and the step a person follows."""

    content: str
    step: ResearchStep
    finished: bool = False
    not_covered: str | None = None


def error(message: str) -> str:
    return json.dumps({"error": message})


def _arguments(call: ToolCall) -> dict[str, Any]:
    if call.name not in TOOL_NAMES:
        raise Refused(f"Unknown tool {call.name!r}; the tools are {', '.join(sorted(TOOL_NAMES))}")
    try:
        arguments = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        raise Refused("The arguments are not valid JSON") from None
    if not isinstance(arguments, dict):
        raise Refused("The arguments must be a JSON object")
    return arguments


def _filters(arguments: dict[str, Any]) -> DocumentFilters:
    given = arguments.get("filters") or {}
    if not isinstance(given, dict):
        raise Refused("`filters` must be an object")
    try:
        return DocumentFilters.parse(given)
    except FilterError as exc:
        raise Refused(str(exc)) from None


def _pages(value: Any) -> tuple[int | None, int | None]:
    if value is None or value == "":
        return None, None
    if isinstance(value, int) and not isinstance(value, bool):
        return value, value
    found = _PAGES.match(value) if isinstance(value, str) else None
    if found is None:
        raise Refused('`pages` must be a page or a range, such as "3" or "3-4"')
    first = int(found.group(1))
    last = int(found.group(2)) if found.group(2) else first
    return min(first, last), max(first, last)


def _passages_of(entries: Sequence[ContextEntry]) -> list[StepPassage] | None:
    kept = [
        StepPassage(
            document_id=str(entry.source.document_id),
            filename=entry.source.document_name,
            page=entry.source.page,
            location=entry.source.location,
        )
        for entry in entries[:STEP_PASSAGES]
    ]
    return kept or None


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


@dataclass
class ResearchTools:
    """Runs one research answer's tool calls over its scope, and keeps its steps."""

    passages: ToolRetrieval
    catalogue: DocumentCatalogue
    lexical: LexicalIndex
    reader: uuid.UUID | None = None
    steps: list[ResearchStep] = field(default_factory=list)
    _handles: dict[int, DocumentRef] = field(default_factory=dict)
    _names: dict[uuid.UUID, str] = field(default_factory=dict)
    _handle_of: dict[uuid.UUID, int] = field(default_factory=dict)
    _made: dict[str, int] = field(default_factory=dict)

    def record(self, step: ResearchStep) -> ResearchStep:
        self.steps.append(step)
        return step

    def _step(self, action: Any, said: str, **details: Any) -> ResearchStep:
        return ResearchStep(number=len(self.steps) + 1, action=action, said=said, **details)

    async def run(self, call: ToolCall) -> Outcome:
        """One call, run or refused, and recorded as a step."""
        try:
            arguments = _arguments(call)
            key = f"{call.name} {json.dumps(arguments, sort_keys=True)}"
            earlier = self._made.get(key)
            if earlier is not None:
                raise Refused(
                    f"This call was already made (step {earlier}) and its result is above; "
                    "search for something else, read another part, or call finish"
                )
            outcome = await self._run(call.name, arguments)
            self._made[key] = outcome.step.number
        except Refused as refused:
            said = f"Refused a call of {one_line(call.name, 40)}: {refused}"
            outcome = Outcome(error(str(refused)), self._step("refused", said))
        self.record(outcome.step)
        return outcome

    async def _run(self, name: str, arguments: dict[str, Any]) -> Outcome:
        if name == SEARCH:
            return await self._search(arguments)
        if name == LIST:
            return await self._list(arguments)
        if name == READ:
            return await self._read(arguments)
        not_covered = arguments.get("not_covered")
        not_covered = one_line(not_covered, 300) if isinstance(not_covered, str) else None
        step = self._step("finish", "Finished researching")
        return Outcome("Finished.", step, finished=True, not_covered=not_covered or None)

    # -- the tools -------------------------------------------------------------------------

    async def _search(self, arguments: dict[str, Any]) -> Outcome:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            raise Refused("`query` must be a non-empty string")
        query = one_line(query, QUERY_CHARS)
        top_k = arguments.get("top_k", self.passages.default_top_k)
        if not isinstance(top_k, int) or isinstance(top_k, bool):
            top_k = self.passages.default_top_k
        filters = _filters(arguments)
        described = filters.describe() or None
        where = f" ({described})" if described else ""
        scope = self.passages.documents
        if not filters.empty:
            scope = await self.catalogue.narrowed(scope, filters, self.reader)
            if not scope:
                said = f"Searched '{query}'{where}: no document matches"
                step = self._step("search", said, query=query, filters=described)
                return Outcome("No document matches these filters.", step)
        hits = await self.passages.search_in(query, scope, max(1, min(top_k, MAX_TOOL_TOP_K)))
        if isinstance(hits, str):
            raise Refused(hits)
        self.know([hit.chunk for hit in hits])
        found = self.passages.numbered(hits)
        said = f"Searched '{query}'{where}: {_count(len(found), 'passage', 'passages')}"
        step = self._step(
            "search", said, query=query, filters=described, passages=_passages_of(found)
        )
        if not found:
            return Outcome("No matching passages were found.", step)
        return Outcome(await self._shown(found), step)

    async def _list(self, arguments: dict[str, Any]) -> Outcome:
        filters = _filters(arguments)
        described = filters.describe() or None
        listing = await self.catalogue.listing(
            self.passages.documents, filters, self.reader, MAX_LISTED
        )
        lines = [self._listed(entry) for entry in listing.entries]
        more = listing.total - len(listing.entries)
        if more > 0:
            lines.append(f"... and {more} more: narrow the filters to see them.")
        matching = f" {described}" if described else ""
        said = f"Listed documents{matching}: {listing.total}"
        step = self._step("list", said, filters=described)
        return Outcome("\n".join(lines) or "No document matches these filters.", step)

    def _listed(self, entry: CatalogueEntry) -> str:
        handle = self._handle(entry.ref, entry.filename)
        parts = [f'D{handle} "{one_line(entry.filename, 80)}"']
        if entry.kind is not None:
            parts.append(FORMATS[entry.kind].label)
        if entry.document_date is not None:
            parts.append(f"dated {entry.document_date.isoformat()}")
        if entry.uploaded is not None:
            parts.append(f"uploaded {entry.uploaded.isoformat()}")
        if entry.pages:
            parts.append(_count(entry.pages, "page", "pages"))
        if entry.passages:
            parts.append(_count(entry.passages, "passage", "passages"))
        parts.append(f"{max(1, round(entry.size_bytes / 1024))} KB")
        return " · ".join(parts)

    async def _read(self, arguments: dict[str, Any]) -> Outcome:
        named = arguments.get("document")
        found = _HANDLE.match(str(named)) if isinstance(named, str | int) else None
        ref = self._handles.get(int(found.group(1))) if found else None
        if ref is None:
            raise Refused(
                "Unknown document: name one by the handle (such as D2) that a search or a "
                "listing gave"
            )
        pages = _pages(arguments.get("pages"))
        section = arguments.get("section")
        if section is not None and not isinstance(section, str):
            raise Refused("`section` must be a string")
        section = one_line(section, SECTION_CHARS) if section else None
        start = arguments.get("from_passage", 0)
        if not isinstance(start, int) or isinstance(start, bool):
            raise Refused("`from_passage` must be a number")
        chunks = await self.lexical.document_part(
            ref, pages=pages, place=section, start=start, limit=READ_PASSAGES
        )
        self.know(chunks)
        read = self.passages.numbered([ScoredChunk(chunk, 0.0) for chunk in chunks])
        name = self._names.get(ref.id, "")
        part = _part(pages, section, start)
        said = f"Read {one_line(name, 80)}{part}: {_count(len(read), 'passage', 'passages')}"
        step = self._step("read", said, document=name, passages=_passages_of(read))
        if not read:
            if chunks:
                return Outcome(error("The passages' budget is spent: call finish"), step)
            return Outcome(f"Nothing of D{self._handle_of[ref.id]} is there.", step)
        return Outcome(await self._shown(read), step)

    # -- documents' handles ----------------------------------------------------------------

    def _handle(self, ref: DocumentRef, name: str) -> int:
        handle = self._handle_of.get(ref.id)
        if handle is None:
            handle = self._handle_of[ref.id] = len(self._handles) + 1
            self._handles[handle] = ref
            self._names[ref.id] = name
        return handle

    def know(self, chunks: Sequence[Chunk]) -> None:
        """Give handles to the documents of passages found or read (the research may read
        more of them)."""
        for chunk in chunks:
            self._handle(
                DocumentRef(chunk.document_id, chunk.owner_id, chunk.version), chunk.filename
            )

    def handles(self) -> str:
        """The documents known so far with their handles: 'D1 = "a.pdf"; D2 = "b.pdf"'."""
        return "; ".join(self._named(ref.id) for ref in self._handles.values())

    def _named(self, document: uuid.UUID) -> str:
        return f'D{self._handle_of[document]} = "{one_line(self._names[document], 80)}"'

    async def _shown(self, entries: list[ContextEntry]) -> str:
        """Passages as the model reads them, then the handles of their documents."""
        handles = dict.fromkeys(
            self._named(entry.source.document_id)
            for entry in entries
            if entry.source.document_id in self._handle_of
        )
        text = await self.passages.formatted(entries)
        return f"{text}\n\nDocuments: {'; '.join(handles)}" if handles else text


def _part(pages: tuple[int | None, int | None], section: str | None, start: int) -> str:
    if pages[0] is not None:
        return f" p. {pages[0]}" if pages[0] == pages[1] else f" pp. {pages[0]}-{pages[1]}"
    if section:
        return f" '{section}'"
    return f" from passage {start}" if start else ""
