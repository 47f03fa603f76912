import { lazy, Suspense, useCallback, useEffect, useRef, useState } from "react";
import { createPortal } from "react-dom";
import { api, DOCUMENT_GONE, openDocument, type Schemas, type Source } from "../api/client";
import PassageText from "./PassageText";

type Passage = Schemas["PassageRead"];
// pdf.js comes with the page view, not with the app.
const PdfPage = lazy(() => import("./PdfPage"));
// Chunks shown on each side of the cited one, and loaded per "Earlier"/"Later".
const AROUND = 3;

/** The chunk a source cites, from its id (`{document}_{n}` or `{document}_v{version}_{n}`);
 * null for a whole file read inline. */
export function citedIndex(source: Source): number | null {
  const match = /_(\d+)$/.exec(source.chunk_id);
  return match ? Number(match[1]) : null;
}

/** Chunks overlap (the end of one is the start of the next): each is shown without the text
 * the one before it already showed. */
function withoutOverlap(previous: string | undefined, text: string): string {
  if (!previous) return text;
  for (let size = Math.min(previous.length, text.length, 400); size > 20; size--) {
    if (previous.endsWith(text.slice(0, size))) return text.slice(size);
  }
  return text;
}

// Lines that keep their own line: table rows, list items, headings.
const OWN_LINE = /^\s*(\||[-*•] |\d+[.)] |#)/;

/** Text extracted from PDFs breaks where the page's lines ended: those breaks are joined,
 * paragraphs (blank lines), table rows, list items and headings kept. */
export function reflow(text: string): string {
  return text.replace(/([^\n])\n(?!\n)(?=([^\n]*))/g, (match, before: string, next: string, offset: number) => {
    const lineStart = text.lastIndexOf("\n", offset) + 1;
    const line = text.slice(lineStart, offset + 1);
    return OWN_LINE.test(line) || OWN_LINE.test(next) ? match : `${before} `;
  });
}

/** Where the source's highlight lies in the cited passage as shown (its first `cut` characters,
 * shown with the passage before, left out; reflowing keeps every offset); null when it is not
 * all there. */
export function sentenceSpan(source: Source, cut: number, shownLength: number): { start: number; end: number } | null {
  const highlight = source.highlight;
  if (!highlight) return null;
  const start = highlight.start - cut;
  const end = highlight.end - cut;
  return start >= 0 && end <= shownLength && start < end ? { start, end } : null;
}

function place(passage: Passage): string {
  return [passage.page != null ? `Page ${passage.page}` : null, passage.location].filter(Boolean).join(" · ");
}

/** The document's text around a cited passage, the passage marked; Escape or the button goes
 * back to the answer. */
export default function DocumentViewer({ source, onClose }: { source: Source; onClose(): void }) {
  const cited = citedIndex(source);
  // A PDF's cited page can be drawn as it looks, with the passage highlighted on it.
  const drawable = source.page != null && /\.pdf$/i.test(source.document_name);
  const [view, setView] = useState<"text" | "page">("text");
  const [passages, setPassages] = useState<Passage[]>([]);
  const [total, setTotal] = useState(0);
  // The document's reader wrote Markdown (Word, HTML, Markdown files…): shown rendered.
  const [markdown, setMarkdown] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // Deleted since, or no longer shared with the reader (the list of messages said so, or the
  // text could not be loaded): the answer keeps only its quote.
  const [gone, setGone] = useState(source.readable === false);
  const dialog = useRef<HTMLDivElement>(null);
  const textView = useRef<HTMLDivElement>(null);

  const load = useCallback(
    async (skip: number, limit: number) => {
      const { data, error: failure, response } = await api.GET("/api/v1/documents/{document_id}/passages", {
        params: { path: { document_id: source.document_id }, query: { skip: Math.max(0, skip), limit } },
      });
      if (!data) {
        if (response.status === 404) setGone(true);
        else setError(failure ? "The document's text could not be loaded" : null);
        return;
      }
      setTotal(data.total);
      setMarkdown(data.markdown);
      setPassages((current) =>
        [...current, ...data.items]
          .filter((p, i, all) => all.findIndex((q) => q.chunk_index === p.chunk_index) === i)
          .sort((a, b) => a.chunk_index - b.chunk_index),
      );
    },
    [source.document_id],
  );

  useEffect(() => {
    if (!gone) void load((cited ?? 0) - AROUND, AROUND * 2 + 1);
  }, [load, cited, gone]);

  useEffect(() => {
    dialog.current?.focus();
  }, []);

  useEffect(() => {
    const found = (selector: string) => textView.current?.querySelector(`[data-testid=${selector}]`);
    (found("cited-sentence") ?? found("cited-passage"))?.scrollIntoView?.({ block: "center" });
  }, [passages.length]);

  const first = passages[0]?.chunk_index ?? 0;
  const last = passages[passages.length - 1]?.chunk_index ?? -1;
  // Drawn at the end of the page, not inside the panel that opened it: that panel's own layer
  // (on phones, under the "Hide panel" button) would cover parts of it.
  return createPortal(
    <div className="viewer-backdrop" onClick={onClose}>
      <div
        ref={dialog}
        className="viewer"
        role="dialog"
        aria-modal="true"
        aria-labelledby="viewer-title"
        tabIndex={-1}
        onClick={(event) => event.stopPropagation()}
        onKeyDown={(event) => event.key === "Escape" && onClose()}
      >
        <header className="viewer-head">
          <h2 id="viewer-title">{source.document_name}</h2>
          <div className="row">
            {source.page != null && !gone && (
              <button onClick={() => openDocument(source.document_id, source.page ?? null).catch((e: Error) => setError(e.message))}>
                Open the original at page {source.page}
              </button>
            )}
            <button className="primary" onClick={onClose}>
              Back to the answer
            </button>
          </div>
        </header>
        {error && (
          <p role="alert" className="error">
            {error}
          </p>
        )}
        {gone && (
          <p className="muted viewer-note" data-testid="document-gone">
            {DOCUMENT_GONE} The answer keeps the passage it quoted:
          </p>
        )}
        {gone && <blockquote className="gone-quote">{source.content_preview}</blockquote>}
        {drawable && !gone && (
          <div className="view-switch" role="group" aria-label="Show">
            <button aria-pressed={view === "text"} onClick={() => setView("text")}>
              Text
            </button>
            <button aria-pressed={view === "page"} onClick={() => setView("page")}>
              Page {source.page}
            </button>
          </div>
        )}
        {view === "page" && source.page != null && (
          <div className="viewer-page" tabIndex={0} role="region" aria-label={`Page ${source.page} of ${source.document_name}`}>
            <Suspense fallback={<p className="muted small">Loading the page viewer…</p>}>
              <PdfPage
                documentId={source.document_id}
                documentName={source.document_name}
                page={source.page}
                passage={source.highlight?.text ?? passages.find((passage) => passage.chunk_index === cited)?.text ?? source.content_preview}
                row={source.highlight?.row != null}
              />
            </Suspense>
          </div>
        )}
        <div
          ref={textView}
          className={`viewer-text${markdown ? " markdown" : ""}`}
          data-testid="viewer-text"
          tabIndex={0}
          role="region"
          aria-label={`Text of ${source.document_name}`}
          hidden={view === "page"}
        >
          {first > 0 && (
            <button className="link" onClick={() => void load(first - AROUND * 2, AROUND * 2)}>
              Earlier text
            </button>
          )}
          {passages.map((passage, index) => {
            const previous = passages[index - 1]?.chunk_index === passage.chunk_index - 1 ? passages[index - 1].text : undefined;
            const unique = withoutOverlap(previous, passage.text);
            // Markdown keeps its line breaks (they end rows and items); a PDF's are joined.
            const shown = markdown ? unique : reflow(unique);
            const label = place(passage);
            const isCited = passage.chunk_index === cited;
            const sentence = isCited ? sentenceSpan(source, passage.text.length - unique.length, shown.length) : null;
            return (
              <section key={passage.chunk_index} className="viewer-passage" data-chunk={passage.chunk_index}>
                {label && (index === 0 || label !== place(passages[index - 1])) && <p className="viewer-place muted small">{label}</p>}
                <PassageText text={shown} markdown={markdown} cited={isCited} sentence={sentence} />
              </section>
            );
          })}
          {last + 1 < total && (
            <button className="link" onClick={() => void load(last + 1, AROUND * 2)}>
              Later text
            </button>
          )}
        </div>
      </div>
    </div>,
    document.body,
  );
}
