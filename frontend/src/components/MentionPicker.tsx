// "@" in the composer picks a document for the next message: the text from "@" to the caret
// is searched in the names of the documents the user may read, and the chosen one becomes a
// chip of the next message's scope (the "@name" text itself is taken out of the message).
import { useEffect, useState } from "react";
import { api } from "../api/client";
import type { Named } from "./ScopeChips";

export interface Mention {
  /** Where the "@" is in the text. */
  start: number;
  /** What follows it, up to the caret. */
  query: string;
}

// A mention ends at a line break; a name may hold spaces ("@budget 2027").
const MAX_MENTION_CHARS = 60;

/** The mention being typed at `caret`: an "@" at the start or after a space, then no line
 * break up to the caret. */
export function mentionAt(text: string, caret: number): Mention | null {
  const before = text.slice(0, caret);
  const start = before.lastIndexOf("@");
  if (start < 0 || caret - start > MAX_MENTION_CHARS) return null;
  if (start > 0 && !/\s/.test(before[start - 1])) return null; // an e-mail address, not a mention
  const query = before.slice(start + 1);
  if (/[\n\r]/.test(query) || query.startsWith(" ")) return null;
  return { start, query };
}

/** The text without the mention, and where the caret goes. */
export function withoutMention(text: string, mention: Mention, caret: number): { text: string; caret: number } {
  const head = text.slice(0, mention.start);
  // The space before the "@" stays: the spaces after the mention would make it two.
  const rest = text.slice(caret).replace(head === "" || /\s$/.test(head) ? /^[ \t]+/ : /^$/, "");
  return { text: head + rest, caret: head.length };
}

export interface Match extends Named {
  status: string;
}

const LIMIT = 8;

/** Readable documents whose names contain `query` (none while there is no mention), and the
 * query they answer (the last one answered: earlier matches stay while the next are read). */
export function useDocumentMatches(query: string | null): { matches: Match[]; answered: string | null } {
  const [found, setFound] = useState<{ matches: Match[]; answered: string | null }>({ matches: [], answered: null });
  useEffect(() => {
    if (query === null) {
      setFound({ matches: [], answered: null });
      return;
    }
    let current = true;
    const timer = window.setTimeout(() => {
      void api
        .GET("/api/v1/documents", { params: { query: { name: query || undefined, limit: LIMIT } } })
        .then(({ data }) => {
          if (!current) return;
          const matches = (data?.items ?? []).map((document) => ({ id: document.id, name: document.filename, status: document.status }));
          setFound({ matches, answered: query });
        });
    }, 120);
    return () => {
      current = false;
      window.clearTimeout(timer);
    };
  }, [query]);
  return found;
}

export function optionId(listId: string, index: number): string {
  return `${listId}-${index}`;
}

interface ListProps {
  id: string;
  query: string;
  /** The matches were read for `query` (not an earlier one): an empty list means none. */
  answered: boolean;
  matches: Match[];
  active: number;
  onPick(match: Match): void;
}

/** The matching documents, under the composer; the textarea keeps the focus (arrows move the
 * highlighted option, Enter or Tab picks it, Escape closes the list). */
export function MentionList({ id, query, answered, matches, active, onPick }: ListProps) {
  return (
    <div className="mention-list">
      {matches.length ? (
        <ul id={id} role="listbox" aria-label="Documents to ask about">
          {matches.map((match, index) => (
            <li
              key={match.id}
              id={optionId(id, index)}
              role="option"
              aria-selected={index === active}
              className={index === active ? "active" : undefined}
              // Keep the focus in the textarea: a click picks without leaving it.
              onMouseDown={(event) => {
                event.preventDefault();
                onPick(match);
              }}
            >
              {match.name}
              {match.status !== "completed" && <span className="muted small"> · {match.status}</span>}
            </li>
          ))}
        </ul>
      ) : (
        answered && <p className="muted small">No document you can read is named like “{query}”</p>
      )}
    </div>
  );
}
