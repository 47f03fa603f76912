import { useRef, useState } from "react";
import { DOCUMENT_GONE, openDocument, type Source } from "../api/client";
import { quoteOf } from "../citations";
import DocumentViewer from "./DocumentViewer";

interface Props {
  sources: Source[] | null;
  highlighted: number | null;
}

export default function SourcesPanel({ sources, highlighted }: Props) {
  const [error, setError] = useState<string | null>(null);
  const [viewing, setViewing] = useState<Source | null>(null);
  const opener = useRef<HTMLButtonElement | null>(null);
  if (!sources?.length) {
    return <p className="muted">Select an answer with citations to see its sources here.</p>;
  }
  return (
    <>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      <ol className="sources" aria-label="Sources">
      {sources.map((source, index) => (
        <li key={source.chunk_id} id={`source-${index + 1}`} className={highlighted === index + 1 ? "highlight" : ""}>
          <div className="source-head">
            <span className="badge">[{index + 1}]</span>
            <strong>{source.document_name}</strong>
            {source.page != null && <span className="page">page {source.page}</span>}
            {source.location && <span className="page location">{source.location}</span>}
            {source.similarity != null && <span className="muted"> · {Math.round(source.similarity * 100)}% match</span>}
          </div>
          {source.highlight ? (
            <blockquote className="cited-quote" data-testid="source-highlight">
              <mark>{quoteOf(source)}</mark>
            </blockquote>
          ) : (
            source.content_preview && <blockquote>{source.content_preview}</blockquote>
          )}
          <button
            onClick={(event) => {
              opener.current = event.currentTarget;
              setViewing(source);
            }}
            aria-label={`Show in the document (${source.document_name})`}
          >
            Show in the document
          </button>{" "}
          {source.readable === false ? (
            // Deleted, or no longer shared with the reader: opening it could only fail.
            <p className="muted small" data-testid="source-gone">
              {DOCUMENT_GONE}
            </p>
          ) : (
            <button
              onClick={() => openDocument(source.document_id, source.page ?? null).catch((e: Error) => setError(e.message))}
              // The visible words first (speech control users say what they see), then which file.
              aria-label={`${openLabel(source)} (${source.document_name})`}
            >
              {openLabel(source)}
            </button>
          )}
        </li>
      ))}
      </ol>
      {viewing && (
        <DocumentViewer
          source={viewing}
          onClose={() => {
            setViewing(null);
            opener.current?.focus(); // back where the reader was
          }}
        />
      )}
    </>
  );
}

function openLabel(source: Source): string {
  return `Open document${source.page != null ? ` at page ${source.page}` : ""}`;
}
