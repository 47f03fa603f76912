import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useRef, useState, type DragEvent, type FormEvent } from "react";
import { api, errorMessage, uploadDocument, type DocumentInfo, type Schemas } from "../api/client";
import { type ApiAnswer, failureText, latestFailure, unwrap, useWrite } from "../api/mutations";
import { keys, useUsage } from "../api/queries";
import { fileSize } from "../format";

type UploadState = "waiting" | "uploading" | "failed" | "duplicate";

interface Upload {
  id: number;
  name: string;
  state: UploadState;
  progress: number;
  error?: string;
}

interface Props {
  /** Documents picked for the next message; without `onToggleSelected` there is nothing to pick. */
  selected?: string[];
  onToggleSelected?(document: DocumentInfo): void;
  chatId?: string | null;
  linkedIds?: string[];
  onLinked?(): void;
  uploadUrl?: string;
  /** Only the documents shared with everyone (the admin page). */
  visibility?: "shared";
}

const POLL_MS = 1500;
// Documents listed per "Show more" (the API's largest page).
const PAGE = 100;
let nextUploadId = 0;

/** 1 -> "1st", 22 -> "22nd", 13 -> "13th". */
function ordinal(n: number): string {
  const tens = n % 100;
  const suffixes: Record<number, string> = { 1: "st", 2: "nd", 3: "rd" };
  const suffix = tens >= 11 && tens <= 13 ? "th" : (suffixes[n % 10] ?? "th");
  return `${n}${suffix}`;
}

type FileFormat = Schemas["FileFormatRead"];

/** What the server reads, as a file picker's `accept`: every suffix and MIME type it lists. */
export function acceptedTypes(formats: FileFormat[]): string {
  return [...formats.flatMap((format) => format.suffixes), ...formats.map((format) => format.kind)].join(",");
}

/** "3 slides · " for a deck; "" for kinds whose page count means nothing to a reader. */
export function sizeOf(document: DocumentInfo, formats: FileFormat[]): string {
  const names = formats.find((format) => format.kind === document.content_type)?.parts;
  if (!names || document.page_count == null) return "";
  return `${document.page_count} ${document.page_count === 1 ? names[0] : names[1]} · `;
}

export default function DocumentsPanel({
  selected = [],
  onToggleSelected,
  chatId = null,
  linkedIds = [],
  onLinked,
  uploadUrl = "/api/v1/documents",
  visibility,
}: Props) {
  const [pages, setPages] = useState(1);
  const [uploads, setUploads] = useState<Upload[]>([]);
  const maxBytes = useUsage()?.max_upload_bytes ?? null;
  const [dragging, setDragging] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const input = useRef<HTMLInputElement>(null);
  // The kinds of file the server reads (it says so itself: nothing is repeated here).
  const { data: formats = [] } = useQuery({
    queryKey: keys.formats,
    queryFn: async () => (await api.GET("/api/v1/documents/formats")).data ?? [],
    staleTime: Infinity,
  });
  const accepted = acceptedTypes(formats);
  // Files waiting their turn: one upload at a time, so each gets the whole connection.
  const waiting = useRef<{ id: number; file: File }[]>([]);
  const sending = useRef(false);

  // The list (as many pages as shown) is a cached query; while anything in it (or a new
  // version of anything) is waiting or being read, it is read again every POLL_MS.
  const listed = useQuery({
    queryKey: [...keys.documents, visibility ?? "readable", pages],
    placeholderData: keepPreviousData,
    queryFn: async () => {
      const loaded: DocumentInfo[] = [];
      let count = 0;
      for (let skip = 0; skip < pages * PAGE; skip += PAGE) {
        const { data, error: failure } = await api.GET("/api/v1/documents", { params: { query: { skip, limit: PAGE, visibility } } });
        if (!data) throw new Error(errorMessage(failure, "The documents could not be loaded"));
        loaded.push(...data.items);
        count = data.total;
        if (loaded.length >= data.total) break;
      }
      return { documents: loaded, total: count };
    },
    refetchInterval: (query) =>
      query.state.data?.documents.some((d) => isUnderway(d.status) || isUnderway(d.new_version?.status)) ? POLL_MS : false,
  });
  const documents = listed.data?.documents ?? [];
  const total = listed.data?.total ?? 0;


  function patchUpload(id: number, patch: Partial<Upload>) {
    setUploads((previous) => previous.map((u) => (u.id === id ? { ...u, ...patch } : u)));
  }

  // One file at a time (sendWaiting awaits each); the lists are read again after each.
  const store = useWrite({
    write: ({ id, file }: { id: number; file: File }) => uploadDocument(file, uploadUrl, (progress) => patchUpload(id, { progress })),
    invalidates: [keys.documents, keys.usage],
  });

  async function sendWaiting() {
    if (sending.current) return;
    sending.current = true;
    try {
      for (let next = waiting.current.shift(); next; next = waiting.current.shift()) {
        const { id, file } = next;
        patchUpload(id, { state: "uploading" });
        try {
          const stored = await store.mutateAsync({ id, file });
          if (stored.duplicate) {
            const same = stored.filename === file.name ? "" : ` as ${stored.filename}`;
            patchUpload(id, { state: "duplicate", error: `Already uploaded${same}: the same file is not added twice` });
          } else {
            setUploads((previous) => previous.filter((u) => u.id !== id));
          }
        } catch (caught) {
          patchUpload(id, { state: "failed", error: failureText(caught, "Upload failed") });
        }
      }
    } finally {
      sending.current = false;
    }
  }

  function upload(files: FileList | File[]) {
    const added: Upload[] = [];
    for (const file of Array.from(files)) {
      const id = nextUploadId++;
      if (maxBytes !== null && file.size > maxBytes) {
        // Refused here, before minutes of sending end in a 413.
        const error = `${file.name} is ${fileSize(file.size)}; the largest upload is ${fileSize(maxBytes)}`;
        added.push({ id, name: file.name, state: "failed", progress: 0, error });
        continue;
      }
      added.push({ id, name: file.name, state: "waiting", progress: 0 });
      waiting.current.push({ id, file });
    }
    setUploads((previous) => [...previous, ...added]);
    void sendWaiting();
  }

  function onDrop(event: DragEvent) {
    event.preventDefault();
    setDragging(false);
    upload(event.dataTransfer.files);
  }

  // Every document list (and the storage used) is read again, whether or not a change went through.
  const changes = { invalidates: [keys.documents, keys.usage], invalidateOnError: true };
  const newVersion = useWrite({
    write: ({ document, file }: { document: DocumentInfo; file: File }) => {
      setNotice(`Sending ${file.name} as a new version of ${document.filename}…`);
      return uploadDocument(file, `/api/v1/documents/${document.id}/versions`, (sent) =>
        setNotice(`Sending ${file.name} as a new version of ${document.filename}: ${Math.round(sent * 100)}%`),
      );
    },
    onSuccess: (stored, { document, file }) =>
      setNotice(stored.duplicate ? `${file.name} is the same file as the current version of ${document.filename}` : null),
    onError: () => setNotice(null),
    ...changes,
  });
  const change = useWrite({
    write: (send: () => Promise<ApiAnswer>) => unwrap(send(), "That did not work"),
    ...changes,
  });
  // Linking changes the chat too: its owner reads it again, even when this panel has gone.
  const linking = useWrite({
    write: (send: () => Promise<ApiAnswer>) => unwrap(send(), "That did not work"),
    ...changes,
    onSettled: () => onLinked?.(),
  });
  const error = latestFailure(newVersion, change, linking);

  function link(document: DocumentInfo) {
    if (!chatId) return;
    linking.mutate(() => api.POST("/api/v1/chats/{chat_id}/documents", { params: { path: { chat_id: chatId } }, body: { document_ids: [document.id] } }));
  }

  function unlink(document: DocumentInfo) {
    if (!chatId) return;
    linking.mutate(() => api.DELETE("/api/v1/chats/{chat_id}/documents/{document_id}", { params: { path: { chat_id: chatId, document_id: document.id } } }));
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
      >
        Drop PDF, Word, PowerPoint, Excel, OpenDocument, EPUB, CSV, HTML, Markdown, text or scanned (PNG,
        JPEG, TIFF) files here, or click to choose
        <input
          ref={input}
          type="file"
          multiple
          accept={accepted}
          hidden
          data-testid="file-input"
          onChange={(e) => {
            if (e.target.files) upload(e.target.files);
            e.target.value = ""; // the same file can be picked again
          }}
        />
      </div>
      {!visibility && <AddFromUrl />}
      <UploadQueue uploads={uploads} onDismiss={(id) => setUploads((previous) => previous.filter((u) => u.id !== id))} />
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {notice && (
        <p role="status" className="muted">
          {notice}
        </p>
      )}
      <ul className="document-list">
        {documents.map((d) => (
          <li key={d.id} data-testid="document" data-status={d.status}>
            <label className="doc-name">
              {onToggleSelected && (
                <input
                  type="checkbox"
                  checked={selected.includes(d.id)}
                  disabled={d.status === "failed"}
                  onChange={() => onToggleSelected(d)}
                  aria-label={`Use ${d.filename} for the next message`}
                />
              )}
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
                  {sizeOf(d, formats)}
                  {d.chunk_count} {d.chunk_count === 1 ? "chunk" : "chunks"}
                </span>
              )}
              {d.error && <span className="error">{d.error}</span>}
              {d.version > 1 && (
                <span className="muted" data-testid="document-version">
                  version {d.version}
                  {d.versioned_at && ` · ${new Date(d.versioned_at).toLocaleDateString()}`}
                </span>
              )}
              <NewVersionState document={d} />
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
                  {d.status === "completed" && !isUnderway(d.new_version?.status) && (
                    <label className="button" title="Replace the content with a new file; chats keep the document">
                      New version
                      <input
                        type="file"
                        className="sr-only"
                        accept={accepted}
                        aria-label={`Upload a new version of ${d.filename}`}
                        onChange={(event) => {
                          const file = event.target.files?.[0];
                          event.target.value = "";
                          if (file) newVersion.mutate({ document: d, file });
                        }}
                      />
                    </label>
                  )}
                  {/* Queued or being read, it is processed already: nothing to do again. */}
                  {(d.status === "completed" || d.status === "failed") && (
                    <button onClick={() => change.mutate(() => api.POST("/api/v1/documents/{document_id}/reprocess", { params: { path: { document_id: d.id } } }))}>
                      Reprocess
                    </button>
                  )}
                  <button
                    onClick={() =>
                      window.confirm(`Delete ${d.filename}?`) &&
                      change.mutate(() => api.DELETE("/api/v1/documents/{document_id}", { params: { path: { document_id: d.id } } }))
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
      {documents.length < total && (
        <button className="wide more" onClick={() => setPages((count) => count + 1)}>
          Show more ({documents.length} of {total} shown)
        </button>
      )}
    </section>
  );
}

function isUnderway(status: string | undefined): boolean {
  return status === "queued" || status === "processing";
}

/** A new version on its way (the current content answers meanwhile), or why it failed. */
function NewVersionState({ document }: { document: DocumentInfo }) {
  const next = document.new_version;
  if (!next) return null;
  if (next.status === "failed") {
    return (
      <span className="error" data-testid="new-version">
        New version ({next.filename}) failed: {next.error}. The current version still answers.
      </span>
    );
  }
  const share = next.chunk_count ? next.chunks_done / next.chunk_count : 0;
  return (
    <span className="muted" data-testid="new-version">
      New version {next.number} ({next.filename}) is being read
      {next.status === "processing" && <progress max={1} value={share} aria-label={`Reading the new version of ${document.filename}`} />}
      ; the current one answers until it is ready
    </span>
  );
}

/** The files picked for upload: the one being sent, those waiting, and those refused. */
function UploadQueue({ uploads, onDismiss }: { uploads: Upload[]; onDismiss(id: number): void }) {
  if (!uploads.length) return null;
  const current = uploads.find((u) => u.state === "uploading");
  const waitingCount = uploads.filter((u) => u.state === "waiting").length;
  return (
    <div className="uploads">
      {(current || waitingCount > 0) && (
        <p role="status" className="small">
          {current ? `Uploading ${current.name}` : "Starting uploads"}
          {waitingCount > 0 && ` · ${waitingCount} waiting`}
        </p>
      )}
      <ul className="plain">
        {uploads.map((u) => (
          <li key={u.id} className={`upload ${u.state}`} data-testid="upload">
            <span className="upload-name" title={u.name}>
              {u.name}
            </span>
            {u.state === "failed" || u.state === "duplicate" ? (
              <>
                {u.state === "failed" ? (
                  <span role="alert" className="error">
                    {u.error}
                  </span>
                ) : (
                  <span role="status" className="muted">
                    {u.error}
                  </span>
                )}
                <button className="small" onClick={() => onDismiss(u.id)} aria-label={`Dismiss ${u.name}`}>
                  Dismiss
                </button>
              </>
            ) : u.state === "waiting" ? (
              <span className="muted">waiting to upload</span>
            ) : (
              <progress max={1} value={u.progress} aria-label={`Uploading ${u.name}`} />
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}

/** A web page or file by its address; the server fetches it (and refuses private addresses). */
function AddFromUrl() {
  const [url, setUrl] = useState("");
  const [duplicateOf, setDuplicateOf] = useState<string | null>(null);
  const fetchPage = useWrite({
    write: (address: string) => unwrap(api.POST("/api/v1/documents/from-url", { body: { url: address } }), "The address could not be fetched"),
    invalidates: [keys.documents, keys.usage],
    onSuccess(added) {
      setUrl("");
      setDuplicateOf(added.duplicate ? added.filename : null);
    },
  });
  const busy = fetchPage.isPending;
  const outcome = fetchPage.error
    ? { error: true, text: failureText(fetchPage.error) }
    : fetchPage.isSuccess && duplicateOf
      ? { error: false, text: `Already uploaded as ${duplicateOf}` }
      : null;

  function add(event: FormEvent) {
    event.preventDefault();
    if (url.trim()) fetchPage.mutate(url.trim());
  }

  return (
    <form className="from-url" onSubmit={add}>
      <label htmlFor="from-url" className="sr-only">
        Web address of a page or file
      </label>
      <input
        id="from-url"
        type="url"
        placeholder="or add a web page: https://…"
        value={url}
        onChange={(event) => setUrl(event.target.value)}
      />
      <button type="submit" disabled={busy || !url.trim()}>
        {busy ? "Fetching…" : "Add"}
      </button>
      {outcome && (
        <p role={outcome.error ? "alert" : "status"} className={outcome.error ? "error small" : "muted small"}>
          {outcome.text}
        </p>
      )}
    </form>
  );
}
