// Which languages an answer's question was searched in (meta.languages_searched), and those of
// its documents it could only be searched in as written (meta.searched_as_written).
import type { Message } from "../api/client";

const NAMES = new Intl.DisplayNames(["en"], { type: "language" });

/** A language's English name from its ISO 639-1 code ("de" -> "German"). */
export function languageName(code: string): string {
  try {
    return NAMES.of(code) ?? code;
  } catch {
    return code; // not a language code
  }
}

function listed(codes: string[]): string {
  const names = codes.map(languageName);
  return names.length < 2 ? names.join("") : `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
}

/** What the answer's footer says about the languages searched: nothing for a question searched
 * in its own language only, where no document is in another. */
export function searchLanguagesNote(meta: Message["meta"]): { searched: string | null; asWritten: string | null } {
  const searched = meta?.languages_searched ?? [];
  const asWritten = meta?.searched_as_written ?? [];
  return {
    searched: searched.length > 1 ? `Searched in ${listed(searched)}` : null,
    asWritten: asWritten.length
      ? `${listed(asWritten)} documents were searched with the question as written: it could not be translated into ${asWritten.length === 1 ? "that language" : "those languages"}`
      : null,
  };
}

const BY: Record<string, string> = {
  model: "translated by the model",
  apertium: "translated by Apertium on this server",
  dictionary: "translated word by word with this server's dictionaries",
};

export default function SearchLanguages({ meta }: { meta: Message["meta"] }) {
  const note = searchLanguagesNote(meta);
  if (!note.searched && !note.asWritten) return null;
  const translated = meta?.translated_query
    ? `${meta.translated_query}${meta.translated_by ? ` (${BY[meta.translated_by] ?? meta.translated_by})` : ""}`
    : undefined;
  return (
    <span className="muted small search-languages" data-testid="search-languages">
      {note.searched && <span title={translated}> · {note.searched}</span>}
      {note.asWritten && <span> · {note.asWritten}</span>}
    </span>
  );
}
