// The answer renderer: an answer's Markdown with its citations, its footer (versions, badges,
// sources) and its actions.
import { useMemo, useState } from "react";
import Markdown from "react-markdown";
import remarkGfm from "remark-gfm";
import remarkMath from "remark-math";
import type { Message, Source } from "../api/client";
import { dollarMath, linkCitations } from "../citations";
import AnswerActions from "./AnswerActions";
import CitationLink, { CiteContext } from "./CitationLink";
import { Code, CodeBlock } from "./RichCode";
import { ResearchSteps } from "./ResearchSteps";
import SearchLanguages from "./SearchLanguages";

// The Markdown components are defined once, outside any render: components created anew on
// every render would be new element types to React, which would then replace every citation
// button, taking the keyboard focus away from the one just activated.
const MARKDOWN_COMPONENTS = { a: CitationLink, code: Code, pre: CodeBlock };
// Tables, strikethrough and task lists (GitHub's Markdown), and $math$.
const REMARK_PLUGINS = [remarkGfm, remarkMath];

/** An answer's Markdown, its [n] markers buttons that preview and open their sources. */
export function AnswerText({
  message,
  onCite,
}: {
  message: { content: string; sources?: (Source | null)[] | null };
  onCite(n: number): void;
}) {
  const citing = useMemo(() => ({ onCite, sources: message.sources ?? [] }), [onCite, message.sources]);
  return (
    <CiteContext.Provider value={citing}>
      <Markdown components={MARKDOWN_COMPONENTS} remarkPlugins={REMARK_PLUGINS}>
        {linkCitations(dollarMath(message.content), message.sources?.length ?? 0)}
      </Markdown>
    </CiteContext.Provider>
  );
}

/** Why an answer is not drawn from the documents, in the reader's words. */
// Why an answer quotes the documents instead of being written by the model.
const EXTRACTIVE_REASONS: Record<string, string> = {
  requested: "the best-matching sentences, no language model used",
  builtin_model: "no language model is connected (set LLM_BASE_URL for written answers)",
  uncited: "the model's answer cited nothing, so the passages are quoted instead",
  bare: "the model answered with passage numbers only, twice, so the passages are quoted instead",
};

/** The badge an answer's footer shows: what the documents support. The documents not
 * answering is said as such, never as a "General answer": nothing general was written (the demo
 * model is not asked for facts). */
export function answerBadge(message: Pick<Message, "meta" | "sources">): {
  kind: "quoted" | "answered" | "partial" | "nearest" | "not-in-documents" | "general";
  text: string;
} {
  const evidence = message.meta?.evidence;
  const notAnswered = evidence === "not_in_documents";
  if (message.sources?.length) {
    if (notAnswered) return { kind: "nearest", text: "Nearest passages, not an answer" };
    if (evidence === "partial") return { kind: "partial", text: "Partly answered by the documents" };
    return message.meta?.answer_mode === "generative"
      ? { kind: "answered", text: "Answered from the documents" }
      : { kind: "quoted", text: "Quoted from the documents" };
  }
  return notAnswered
    ? { kind: "not-in-documents", text: "Not in your documents" }
    : { kind: "general", text: "General answer" };
}

/** "Sources disagree": each side of each disagreement with its date, the newest marked; each
 * side's number opens its source. */
function Disagreement({
  message,
  onShowSources,
}: {
  message: Message;
  onShowSources(sources: Source[] | null, highlighted: number | null): void;
}) {
  const conflicts = message.meta?.conflicts ?? [];
  if (!conflicts.length) return null;
  return (
    <aside className="disagreement" role="note" aria-label="Sources disagree">
      <strong>Sources disagree</strong>
      {conflicts.map((conflict, index) => (
        <ul key={index}>
          {conflict.sides.map((side) => (
            <li key={side.source}>
              <button className="link" onClick={() => onShowSources(message.sources ?? null, side.source)}>
                [{side.source}]
              </button>{" "}
              {side.value}
              {side.date && <span className="muted small"> · {side.date}</span>}
              {side.newest && <span className="badge newest">newest</span>}
            </li>
          ))}
        </ul>
      ))}
    </aside>
  );
}

/** A research answer's citations by document: each document once, with its [n]. */
function CitedDocuments({
  message,
  onShowSources,
}: {
  message: Message;
  onShowSources(sources: Source[] | null, highlighted: number | null): void;
}) {
  const documents = message.meta?.cited_documents ?? [];
  if (documents.length < 2) return null;
  return (
    <ul className="cited-documents small" aria-label="Cited documents" data-testid="cited-documents">
      {documents.map((document) => (
        <li key={document.document_id}>
          <span className="cited-name">{document.filename}</span>{" "}
          {document.citations.map((number) => (
            <button key={number} className="link" onClick={() => onShowSources(message.sources ?? null, number)}>
              [{number}]
            </button>
          ))}
        </li>
      ))}
    </ul>
  );
}

const GENERAL_REASONS: Record<string, string> = {
  no_documents: "there are no documents to search yet",
  no_filter_match: "no document matches the filters",
  no_match: "no passage of the documents matched the question",
  not_cited: "the answer did not use the passages found",
  insufficient_information: "the documents do not say",
  rag_disabled: "documents were switched off for this message",
  retrieval_unavailable: "the document search was unavailable",
};

/** An answer with its footer and actions; after regenerations, arrows go through its
 * versions (the latest first shown). */
export default function AnswerMessage({
  message: latest,
  onShowSources,
  onRegenerate,
}: {
  message: Message;
  onShowSources(sources: Source[] | null, highlighted: number | null): void;
  onRegenerate?: () => void;
}) {
  const versions = latest.versions ?? [];
  const [at, setAt] = useState(versions.length);
  const all = [...versions, null];
  const earlier = all[at];
  // An earlier version reads as an answer of its own: its words, sources and metadata.
  const message: Message = earlier ? { ...latest, ...earlier, status: "complete", feedback: null, versions: [] } : latest;
  const count = versions.length + 1;
  return (
    <article className="message assistant" data-testid="message-assistant">
      <AnswerText message={message} onCite={(n) => onShowSources(message.sources ?? null, n)} />
      <footer>
        {count > 1 && (
          <span className="versions" role="group" aria-label="Answer versions">
            <button className="icon" onClick={() => setAt(at - 1)} disabled={at === 0} aria-label="Previous version">
              ‹
            </button>
            <span className="small" aria-live="polite">
              {at + 1}/{count}
            </span>
            <button className="icon" onClick={() => setAt(at + 1)} disabled={at === count - 1} aria-label="Next version">
              ›
            </button>
          </span>
        )}
        {message.meta?.stopped && (
          <span
            className="badge stopped"
            title={
              message.meta.interrupted
                ? "The server stopped while writing this answer; this is as far as it got"
                : "Stopped before it finished; this is as far as it went"
            }
          >
            Stopped
          </span>
        )}
        {message.status === "streaming" ? (
          <span className="muted small">Still being written…</span>
        ) : message.sources?.length ? (
          <>
            <button className="link" onClick={() => onShowSources(message.sources ?? null, null)}>
              {message.sources.length} {message.sources.length === 1 ? "source" : "sources"}
            </button>
            <span className="quoted-answer">
              <span className={`badge ${answerBadge(message).kind}`} title={message.meta?.evidence_note ?? undefined}>
                {answerBadge(message).text}
              </span>
              {message.meta?.evidence_note && message.meta.evidence !== "answered" && (
                <span className="muted small"> · {message.meta.evidence_note}</span>
              )}
              {message.meta?.answer_mode === "extractive" && (
                <span className="muted small"> · {EXTRACTIVE_REASONS[message.meta.extractive_reason ?? "requested"]}</span>
              )}
            </span>
          </>
        ) : (
          !message.meta?.stopped && (
            <span className="general-answer">
              <span className={`badge ${answerBadge(message).kind}`}>{answerBadge(message).text}</span>
              {message.meta?.reason && GENERAL_REASONS[message.meta.reason] && (
                <span className="muted"> · {GENERAL_REASONS[message.meta.reason]}</span>
              )}
            </span>
          )
        )}
        {message.meta?.cached && (
          <span className="muted small" title="The same question had this answer with the same documents, history and model: no model call was made">
            {" "}· reused answer
          </span>
        )}
        {message.status !== "streaming" && message.meta?.filters && (
          <span className="muted small" data-testid="answer-filters" title="The documents searched were narrowed to these">
            {" "}· narrowed to: {message.meta.filters}
            {message.meta.documents_searched != null && ` (${message.meta.documents_searched} ${message.meta.documents_searched === 1 ? "document" : "documents"})`}
          </span>
        )}
        {message.status !== "streaming" && <SearchLanguages meta={message.meta} />}
        {message.status !== "streaming" && !message.meta?.research_steps?.length && <ResearchSearches meta={message.meta} />}
      </footer>
      {message.status !== "streaming" && <CitedDocuments message={message} onShowSources={onShowSources} />}
      {message.status !== "streaming" && <ResearchSteps meta={message.meta} />}
      {message.status !== "streaming" && <Disagreement message={message} onShowSources={onShowSources} />}
      {/* An earlier version is read, not rated or copied from here: the latest is the answer. */}
      {!earlier && <AnswerActions message={message} onRegenerate={onRegenerate} />}
    </article>
  );
}

/** "researched in 3 searches", with each search for a title; null for an answer of one search. */
export function researchNote(meta: Message["meta"]): { text: string; title: string } | null {
  const searches = meta?.research ?? [];
  if (searches.length < 2) return null;
  const title = searches
    .map((search) => `${searchTitle(search)}: ${search.passages} ${search.passages === 1 ? "passage" : "passages"}, ${search.new} new`)
    .join("\n");
  return { text: `researched in ${searches.length} searches`, title };
}

function searchTitle(search: NonNullable<NonNullable<Message["meta"]>["research"]>[number]): string {
  if (search.document) return `The whole question in ${search.document}`;
  return search.part ?? "The whole question";
}

function ResearchSearches({ meta }: { meta: Message["meta"] }) {
  const note = researchNote(meta);
  if (!note) return null;
  return (
    <span className="muted small" data-testid="research-searches" title={note.title}>
      {" "}· {note.text}
    </span>
  );
}
