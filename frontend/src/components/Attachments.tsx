import { useEffect, useRef, useState } from "react";
import { uploadDocument, type DocumentInfo } from "../api/client";
import { failureText, useWrite } from "../api/mutations";
import { keys } from "../api/queries";

/** A file attached in the composer, on its way to the server. */
interface Attaching {
  key: number;
  name: string;
  progress: number;
  /** Why the server refused it (shown until dismissed). */
  error?: string;
  cancel: AbortController;
}

let nextKey = 0;

/** Files attached to the next message (paper clip, drop): each is uploaded as a document of
 * the reader's, with its progress and a Cancel, and once stored it is picked for the next
 * message (a document still being read is read directly for that answer). */
export function useAttachments(onAttached: (document: DocumentInfo) => void) {
  const [items, setItems] = useState<Attaching[]>([]);
  const attached = useRef(onAttached);
  attached.current = onAttached;
  // Leaving the chat cancels its uploads: a file finished later must not become a pick of the
  // chat opened meanwhile.
  const running = useRef(new Set<AbortController>());
  useEffect(() => {
    const controllers = running.current;
    return () => controllers.forEach((controller) => controller.abort());
  }, []);

  function patch(key: number, change: Partial<Attaching>) {
    setItems((current) => current.map((item) => (item.key === key ? { ...item, ...change } : item)));
  }

  function drop(key: number) {
    setItems((current) => current.filter((item) => item.key !== key));
  }

  // One mutation for every file: its callbacks run for each upload, whichever finishes first.
  const upload = useWrite({
    write: ({ file, item }: { file: File; item: Attaching }) =>
      uploadDocument(file, "/api/v1/documents", (progress) => patch(item.key, { progress }), item.cancel.signal),
    invalidates: [keys.documents, keys.usage],
    onSuccess(stored, { item }) {
      running.current.delete(item.cancel);
      drop(item.key);
      attached.current(stored);
    },
    onError(caught, { item }) {
      running.current.delete(item.cancel);
      if (item.cancel.signal.aborted) drop(item.key);
      else patch(item.key, { error: failureText(caught, "The file could not be attached") });
    },
  });

  function send(file: File, item: Attaching) {
    running.current.add(item.cancel);
    upload.mutate({ file, item });
  }

  function attach(files: FileList | File[]) {
    for (const file of Array.from(files)) {
      const item = { key: nextKey++, name: file.name, progress: 0, cancel: new AbortController() };
      setItems((current) => [...current, item]);
      send(file, item);
    }
  }

  return {
    items,
    attach,
    /** Cancels an upload, or dismisses a refused file. */
    cancel(key: number) {
      items.find((item) => item.key === key)?.cancel.abort();
      drop(key);
    },
    uploading: items.some((item) => !item.error),
  };
}

/** The files being attached, with progress and Cancel, and those refused, with the reason. */
export function AttachmentList({ items, onCancel }: { items: Attaching[]; onCancel(key: number): void }) {
  if (!items.length) return null;
  return (
    <ul className="attachments" aria-label="Files being attached">
      {items.map((item) =>
        item.error ? (
          <li key={item.key} className="attachment failed" role="alert">
            <span>
              {item.name}: {item.error}
            </span>
            <button className="icon" onClick={() => onCancel(item.key)} aria-label={`Dismiss ${item.name}`}>
              ×
            </button>
          </li>
        ) : (
          <li key={item.key} className="attachment">
            <span title={item.name}>{item.name}</span>
            <progress max={1} value={item.progress} aria-label={`Uploading ${item.name}`} />
            <button className="link small" onClick={() => onCancel(item.key)} aria-label={`Cancel ${item.name}`}>
              Cancel
            </button>
          </li>
        ),
      )}
    </ul>
  );
}
