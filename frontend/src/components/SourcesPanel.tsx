import { useState } from "react";
import { openDocument, type Source } from "../api/client";

interface Props {
  sources: Source[] | null;
  highlighted: number | null;
}

export default function SourcesPanel({ sources, highlighted }: Props) {
  const [error, setError] = useState<string | null>(null);
  if (!sources?.length) {
    return <p className="muted">Select an answer with citations to see its sources here.</p>;
  }
  return (
    <ol className="sources" aria-label="Sources">
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {sources.map((source, index) => (
        <li key={source.chunk_id} id={`source-${index + 1}`} className={highlighted === index + 1 ? "highlight" : ""}>
          <div className="source-head">
            <span className="badge">[{index + 1}]</span>
            <strong>{source.document_name}</strong>
            {source.page != null && <span className="page">page {source.page}</span>}
            {source.location && <span className="page location">{source.location}</span>}
            {source.similarity != null && <span className="muted"> · {Math.round(source.similarity * 100)}% match</span>}
          </div>
          {source.content_preview && <blockquote>{source.content_preview}</blockquote>}
          <button
            onClick={() => openDocument(source.document_id, source.page ?? null).catch((e: Error) => setError(e.message))}
            // The visible words first (speech control users say what they see), then which file.
            aria-label={`${openLabel(source)} (${source.document_name})`}
          >
            {openLabel(source)}
          </button>
        </li>
      ))}
    </ol>
  );
}

function openLabel(source: Source): string {
  return `Open document${source.page != null ? ` at page ${source.page}` : ""}`;
}
