"""A question of several parts, split into what can be searched one at a time (issue 70).

"What does VACUUM FULL do differently from plain VACUUM, and can I run VACUUM inside a
transaction block?" is two questions; "Which city had more people, Fresno or Jacksonville?" is
one question asked of two things. One search for the whole finds the passages of whichever part
its words lean to: the research brief searches each part as well. The split is by the words
alone (English): clauses that start with a question word or an auxiliary after a comma or a
conjunction, and names joined by "and", "or" or "versus". The document whose passage the whole
question finds first is then read further: the question and each part searched in it alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from docchat.answers import conflicts, extractive
from docchat.answers.evidence import Gloss, Verdict, no_gloss
from docchat.answers.extractive import names_in
from docchat.answers.meta import ResearchSearch
from docchat.retrieval.context import ContextEntry
from docchat.retrieval.index import DocumentRef, ScoredChunk, SearchScope
from docchat.retrieval.retriever import Retriever

BRIEF_INTRODUCTION = (
    "Your question has {count} parts: I searched the documents for each of them as well as for "
    "the whole ({passages} passages read)."
)
PART_NOT_ANSWERED = "The passages found do not answer this part"
# The whole question is searched this many times deeper than each part: it is the one search
# that sees how the parts relate ("why does A block what B does not?").
WHOLE_DEPTH = 2
# The most parts a question is searched in (the whole question is searched besides).
MAX_PARTS = 6
# The document the whole question's best passage comes from is searched again on its own,
# the whole question this many times as deep as a part, and each part as deep as a part: what a
# question needs often sits in several sections of the one page that answers it (the steps of
# a bulk load, the places refugees settled), which a search of every document ranks below
# other pages' near matches. Over the research set this read every fact of 92.6% of the
# questions, against 83.8% for one search reading more passages (bench.eval_research).
LEADING_DEPTH = 4
# Research reads this many times the passages of a plain question (RAG_MAX_CONTEXT_TOKENS),
# within the model's window.
CONTEXT_FACTOR = 2
# A longer message (pasted text, a list of hundreds of names) is searched whole: reading its
# names and clauses cost 100 s of the event loop for 30,000 characters of names.
MAX_QUESTION_CHARS = 600
_QUESTION_WORDS = r"(?:what|which|who|whom|whose|when|where|why|how)"
_OPENERS = (
    rf"(?:(?:in|with|for|from|to|by|at|on|of|under|after|before|since|until)\s+)?"
    rf"{_QUESTION_WORDS}|is|are|was|were|do|does|did|can|could|should|will|would|has|have|had|"
    "must|may"
)
# A new clause: after a comma (with or without a conjunction), or a bare conjunction, before a
# question word (maybe after a preposition: "and with which episode") or an auxiliary; after
# ", and" or ", but" whatever follows; a semicolon; a question mark inside the text.
_CLAUSE_BREAK = re.compile(
    rf"\s*,\s*(?:(?:and|but|or|and also|as well as)\s+)?(?=(?:{_OPENERS})\b)"
    rf"|\s+(?:and|but|and also|as well as)\s+(?=(?:{_OPENERS})\b)"
    r"|\s*,\s*(?:and|but)\s+|\s*;\s*|\?\s+(?=\S)",
    re.IGNORECASE,
)
_OPENS_QUESTION = re.compile(rf"(?:{_OPENERS})\b", re.IGNORECASE)
_PRONOUN = re.compile(
    r"\b(?:it|its|they|them|their|this|that|these|those|he|him|his|she|her|each|one)\b",
    re.IGNORECASE,
)
_COMMA = r",\s*"
_CONJUNCTION = r",?\s+(?:and|or|versus|vs\.?)\s+"
# Words that ask about each of several things joined by "and" ("how do Regulations and
# Directives differ"); without one, "the French and Indian War" is one name.
_COMPARING = re.compile(
    r"\b(?:differ\w*|difference|compare\w*|compared|versus|vs|each|both|between|more|less|"
    r"older|newer|larger|smaller|bigger|better|worse|faster|slower)\b",
    re.IGNORECASE,
)
# A proper name ("Warsaw", "Super Bowl"), not a term of code ("SELECT", "work_mem").
_PROPER = re.compile(r"[A-Z][a-z]+(?:[ '’-][A-Za-z][a-z]*)*")
# A name in code: a setting, a function ("work_mem", "now()").
_IDENTIFIER = re.compile(r"_|\(\)")
# A leading phrase as short as this is the setting of every part ("In pg_hba.conf, which ...").
_SETTING_WORDS = 4


@dataclass(frozen=True)
class Part:
    """One part of a question: as the question words it, and as it is searched."""

    text: str
    query: str


def parts_of(question: str) -> list[Part]:
    """The parts of `question` to search one by one; none when it has only one part, or is
    longer than `MAX_QUESTION_CHARS`."""
    text = " ".join(question.split()).rstrip("?. ")
    if not text or len(text) > MAX_QUESTION_CHARS:
        return []
    clauses = [clause.strip(" ,") for clause in _CLAUSE_BREAK.split(text)]
    clauses = [clause for clause in clauses if clause]
    setting = ""
    first = clauses[0]
    if (
        len(clauses) > 1
        and len(first.split()) <= _SETTING_WORDS
        and not _OPENS_QUESTION.match(first)
    ):
        setting = clauses.pop(0)
    names = names_in(question)
    parts: list[Part] = []
    for clause in clauses:
        for piece in _by_name(clause, names):
            part = Part(piece, _query(piece, clause, setting, names))
            if part not in parts:
                parts.append(part)
    return parts[:MAX_PARTS] if len(parts) > 1 else []


def _query(piece: str, clause: str, setting: str, names: Sequence[str]) -> str:
    """What is searched for `piece` (of `clause`): with the question's setting, and, when it
    says "it", with the names of the other clauses ("and which lock does it take?"); when it
    names nothing, with their proper names ("and who sang the anthem?")."""
    query = f"{setting} {piece}".strip()
    told = f"{setting} {clause}".lower()
    others = [name for name in names if name.lower() not in told]
    if _PRONOUN.search(piece):
        return " ".join([query, *others])
    if not any(name in piece for name in names):
        # "... and how far back does the first mention of the city go?": the place, person or
        # thing the other clauses name (not their terms of code, which are no subject).
        return " ".join([query, *(name for name in others if _PROPER.fullmatch(name))])
    return query


def _by_name(clause: str, names: Sequence[str]) -> list[str]:
    """`clause` once for each of the names it joins ("Fresno or Jacksonville", "A, B and C",
    "how do A and B differ"), the list replaced by that name; the clause itself when it joins
    none."""
    words = [name for name in names if not name[0].isdigit()]  # "the mid-2010s, Fresno or ..."
    if len(words) < 2:
        return [clause]
    name = "|".join(re.escape(name) for name in sorted(words, key=len, reverse=True))
    listed = re.compile(rf"(?<![\w-])(?:{name})(?:{_COMMA}(?:{name}))*{_CONJUNCTION}(?:{name})\b")
    found = listed.search(clause)
    if found is None:
        return [clause]
    items = re.findall(rf"\b(?:{name})\b", found.group(0))
    alternatives = re.search(r"\b(?:or|versus|vs)\b", found.group(0)) is not None
    settings = all(_IDENTIFIER.search(item) for item in items)  # "work_mem and temp_buffers"
    if not (alternatives or settings or len(items) > 2 or _COMPARING.search(clause)):
        return [clause]
    before, after = clause[: found.start()], clause[found.end() :]
    return [f"{before}{item}{after}" for item in dict.fromkeys(items)]


@dataclass(frozen=True)
class Found:
    """What one part's search found."""

    part: Part
    chunks: list[ScoredChunk]


@dataclass(frozen=True)
class Leading:
    """The document the whole question's best passage comes from (in the asker's scope: the
    passage was found there)."""

    document: DocumentRef
    filename: str

    @classmethod
    def of(cls, whole: Sequence[ScoredChunk]) -> Leading | None:
        if not whole:
            return None
        chunk = whole[0].chunk
        return cls(DocumentRef(chunk.document_id, chunk.owner_id, chunk.version), chunk.filename)


async def search_parts(
    retriever: Retriever,
    parts: Sequence[Part],
    documents: SearchScope,
    top_k: int,
    leading: Leading | None = None,
) -> list[Found]:
    """Each part searched on its own, and again in the `leading` document alone, one after
    the other (as `Retriever.search_wordings` does: a search's statements and the next one's
    never share a connection at once). A part may find nothing that passes the similarity
    floor; the match floor is the whole question's."""
    scopes = [documents, *([[leading.document]] if leading is not None else [])]
    found = []
    for part in parts:
        rankings = []
        for scope in scopes:
            result = await retriever.search(part.query, scope, top_k, require_match=False)
            rankings.append([] if result.unavailable else result.chunks)
        found.append(Found(part, _in_turns(rankings)))
    return found


@dataclass(frozen=True)
class Within:
    """What the whole question found when searched in the leading document alone."""

    leading: Leading
    chunks: list[ScoredChunk]


async def search_leading(
    retriever: Retriever, question: str, leading: Leading | None, top_k: int
) -> Within | None:
    """The whole question searched again in the `leading` document alone, `LEADING_DEPTH`
    times as deep as a part."""
    if leading is None:
        return None
    depth = top_k * LEADING_DEPTH
    result = await retriever.search(question, [leading.document], depth, require_match=False)
    return Within(leading, [] if result.unavailable else result.chunks)


def _in_turns(rankings: Sequence[Sequence[ScoredChunk]]) -> list[ScoredChunk]:
    """The passages of `rankings`, each once, the best of each ranking, then the second..."""
    order: dict[str, ScoredChunk] = {}
    for rank in range(max((len(ranking) for ranking in rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking):
                order.setdefault(ranking[rank].chunk.id, ranking[rank])
    return list(order.values())


def merged(
    question: str,
    whole: list[ScoredChunk],
    found: Sequence[Found],
    within: Within | None = None,
) -> tuple[list[ScoredChunk], list[ResearchSearch]]:
    """The passages of every search, each once, taken in turns (the best of each search, then
    the second of each, ...): a context budget that runs out cuts every search's last ones,
    not a whole part. And the searches as `meta.research` lists them."""
    searched = [item.chunks for item in found] + ([within.chunks] if within is not None else [])
    rankings = [whole, *searched]
    seen: set[str] = set()
    searches = []
    for query, part, document, ranking in [
        (question, None, None, whole),
        *((item.part.query, item.part.text, None, item.chunks) for item in found),
        *([(question, None, within.leading.filename, within.chunks)] if within else []),
    ]:
        ids = {hit.chunk.id for hit in ranking}
        searches.append(
            ResearchSearch(
                query=query, part=part, document=document, passages=len(ids), new=len(ids - seen)
            )
        )
        seen |= ids
    return _in_turns(rankings), searches


def brief(
    found: Sequence[Found], entries: Sequence[ContextEntry], gloss: Gloss = no_gloss
) -> extractive.Extracted | None:
    """The keyless research answer: each part as a heading, then the sentences its own
    passages quote for it (numbered as `entries`, every passage read); None when no part's
    passages answer it (the whole question's extractive answer stands then)."""
    by_chunk = {entry.source.chunk_id: entry for entry in entries}
    sections: list[str] = []
    quotes: list[extractive.Quote] = []
    unanswered: list[str] = []
    # Parts whose passages say nothing of them (no quote, or quotes about something else).
    lacking = 0
    disagreement: conflicts.Disagreement | None = None
    for item in found:
        own = [by_chunk[hit.chunk.id] for hit in item.chunks if hit.chunk.id in by_chunk]
        extracted = extractive.answer(item.part.query, own, asked=item.part.text, gloss=gloss)
        heading = f"**{_as_question(item.part.text)}**"
        if extracted is None or not extracted.quotes:
            unanswered.append(item.part.text)
            lacking += 1
            why = f" ({extracted.verdict.why})" if extracted is not None else ""
            sections.append(f"{heading}\n\n{PART_NOT_ANSWERED}{why}.")
            continue
        if extracted.verdict.evidence != "answered":
            unanswered.append(item.part.text)
            lacking += extracted.verdict.evidence == "not_in_documents"
        blocks = [
            f"> {extractive.quoted_text(quote.entry, quote.highlight)} [{quote.entry.number}]"
            for quote in extracted.quotes
        ]
        if extracted.disagreement is not None:
            blocks.append(conflicts.note(extracted.disagreement))
            disagreement = disagreement or extracted.disagreement
        sections.append("\n\n".join([heading, *blocks]))
        quotes.extend(extracted.quotes)
    if not quotes:
        return None
    introduction = BRIEF_INTRODUCTION.format(count=len(found), passages=len(entries))
    text = "\n\n".join([introduction, *sections])
    verdict = _verdict(unanswered, lacking=lacking, parts=len(found))
    return extractive.Extracted(text, quotes, verdict, disagreement)


def _verdict(unanswered: Sequence[str], *, lacking: int, parts: int) -> Verdict:
    """Answered when every part is; not in the documents when no part's passages speak of
    it; else partial (some parts unanswered, or each answered only in part)."""
    if not unanswered:
        return Verdict("answered")
    listed = "; ".join(f"“{_as_question(text)}”" for text in unanswered)
    if lacking == parts:
        return Verdict("not_in_documents", f"the passages found do not answer {listed}")
    return Verdict("partial", f"the passages found do not answer {listed}")


def _as_question(text: str) -> str:
    text = text.strip()
    return f"{text[:1].upper()}{text[1:]}?"
