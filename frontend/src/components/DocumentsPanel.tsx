import { useCallback, useEffect, useRef, useState, type DragEvent } from "react";
import { api, uploadDocument, type DocumentInfo } from "../api/client";

interface Upload {
  id: number;
  name: string;
  progress: number;
  error?: string;
}

interface Props {
  selected: string[];
  onSelectedChange(ids: string[]): void;
  chatId: string | null;
  linkedIds: string[];
  onLinked(): void;
  uploadUrl?: string;
}

const POLL_MS = 1500;
let nextUploadId = 0;

/** 1 -> "1st", 22 -> "22nd", 13 -> "13th". */
function ordinal(n: number): string {
  const tens = n % 100;
  const suffixes: Record<number, string> = { 1: "st", 2: "nd", 3: "rd" };
  const suffix = tens >= 11 && tens <= 13 ? "th" : (suffixes[n % 10] ?? "th");
  return `${n}${suffix}`;
}

export default function DocumentsPanel({ selected, onSelectedChange, chatId, linkedIds, onLinked, uploadUrl = "/api/v1/documents" }: Props) {
  const [documents, setDocuments] = useState<DocumentInfo[]>([]);
  const [uploads, setUploads] = useState<Upload[]>([]);
  const [dragging, setDragging] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const input = useRef<HTMLInputElement>(null);

  const refresh = useCallback(async () => {
    const { data } = await api.GET("/api/v1/documents", { params: { query: { limit: 100 } } });
    if (data) setDocuments(data.items);
  }, []);

  useEffect(() => {
    void refresh();
  }, [refresh]);

  // Live status: poll while anything is waiting or being processed.
  const processing = documents.some((d) => d.status === "queued" || d.status === "processing");
  useEffect(() => {
    if (!processing) return;
    const timer = window.setInterval(() => void refresh(), POLL_MS);
    return () => window.clearInterval(timer);
  }, [processing, refresh]);

  async function upload(files: FileList | File[]) {
    for (const file of Array.from(files)) {
      const id = nextUploadId++;
      setUploads((previous) => [...previous, { id, name: file.name, progress: 0 }]);
      const update = (patch: Partial<Upload>) =>
        setUploads((previous) => previous.map((u) => (u.id === id ? { ...u, ...patch } : u)));
      try {
        await uploadDocument(file, uploadUrl, (progress) => update({ progress }));
        setUploads((previous) => previous.filter((u) => u.id !== id));
        await refresh();
      } catch (caught) {
        update({ error: caught instanceof Error ? caught.message : "Upload failed" });
      }
    }
  }

  function onDrop(event: DragEvent) {
    event.preventDefault();
    setDragging(false);
    void upload(event.dataTransfer.files);
  }

  async function act(action: () => Promise<{ error?: unknown }>) {
    setError(null);
    const { error: failure } = await action();
    if (failure) setError((failure as { detail?: string }).detail ?? "That did not work");
    await refresh();
  }

  function toggle(id: string) {
    onSelectedChange(selected.includes(id) ? selected.filter((s) => s !== id) : [...selected, id]);
  }

  async function link(document: DocumentInfo) {
    if (!chatId) return;
    await act(() => api.POST("/api/v1/chats/{chat_id}/documents", { params: { path: { chat_id: chatId } }, body: { document_ids: [document.id] } }));
    onLinked();
  }

  async function unlink(document: DocumentInfo) {
    if (!chatId) return;
    await act(() =>
      api.DELETE("/api/v1/chats/{chat_id}/documents/{document_id}", { params: { path: { chat_id: chatId, document_id: document.id } } }),
    );
    onLinked();
  }

  return (
    <section aria-label="Documents" className="documents">
      <div
        className={`dropzone ${dragging ? "dragging" : ""}`}
        onDragOver={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={onDrop}
        onClick={() => input.current?.click()}
        onKeyDown={(e) => (e.key === "Enter" || e.key === " ") && input.current?.click()}
        role="button"
        tabIndex={0}
        aria-label="Upload documents: drop files here or press to choose"
      >
        Drop PDF, Markdown or text files here, or click to choose
        <input
          ref={input}
          type="file"
          multiple
          accept=".pdf,.md,.markdown,.txt,application/pdf,text/plain,text/markdown"
          hidden
          data-testid="file-input"
          onChange={(e) => e.target.files && void upload(e.target.files)}
        />
      </div>
      {uploads.map((u) => (
        <div key={u.id} className="upload">
          <span>{u.name}</span>
          {u.error ? (
            <span role="alert" className="error">
              {u.error}
            </span>
          ) : (
            <progress max={1} value={u.progress} aria-label={`Uploading ${u.name}`} />
          )}
        </div>
      ))}
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      <ul className="document-list">
        {documents.map((d) => (
          <li key={d.id} data-testid="document" data-status={d.status}>
            <label className="doc-name">
              <input
                type="checkbox"
                checked={selected.includes(d.id)}
                disabled={d.status === "failed"}
                onChange={() => toggle(d.id)}
                aria-label={`Use ${d.filename} for the next message`}
              />
              <span title={d.filename}>{d.filename}</span>
              {d.visibility === "shared" && <span className="badge">shared</span>}
              {d.visibility !== "shared" && d.owner_id == null && <span className="badge">shared with you</span>}
            </label>
            <div className="doc-status">
              <span className={`status ${d.status}`}>{d.status}</span>
              {d.status === "queued" && d.queue_position != null && (
                <span className="muted">{d.queue_position === 1 ? "next in line" : `${ordinal(d.queue_position)} in line`}</span>
              )}
              {d.status === "processing" && <progress max={1} value={d.progress} aria-label={`Processing ${d.filename}`} />}
              {d.status === "completed" && (
                <span className="muted">
                  {d.page_count} {d.page_count === 1 ? "page" : "pages"} · {d.chunk_count} chunks
                </span>
              )}
              {d.error && <span className="error">{d.error}</span>}
            </div>
            <div className="doc-actions">
              {chatId &&
                (linkedIds.includes(d.id) ? (
                  <button onClick={() => unlink(d)}>Unlink from chat</button>
                ) : (
                  <button onClick={() => link(d)} disabled={d.status === "failed"}>
                    Link to chat
                  </button>
                ))}
              {/* Only the owner changes a document; others' shared documents are read-only here. */}
              {d.owner_id != null && (
                <>
                  <button onClick={() => act(() => api.POST("/api/v1/documents/{document_id}/reprocess", { params: { path: { document_id: d.id } } }))}>
                    Reprocess
                  </button>
                  <button
                    onClick={() =>
                      window.confirm(`Delete ${d.filename}?`) &&
                      act(() => api.DELETE("/api/v1/documents/{document_id}", { params: { path: { document_id: d.id } } }))
                    }
                  >
                    Delete
                  </button>
                </>
              )}
            </div>
          </li>
        ))}
        {!documents.length && <li className="muted">No documents yet.</li>}
      </ul>
    </section>
  );
}
