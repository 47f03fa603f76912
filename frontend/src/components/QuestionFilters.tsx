// Filters on the documents the next questions search: a kind, a year, a piece of a file name
// (options.filters; the server narrows the asker's scope by them, never widens it).
import type { MessageOptions } from "../api/client";

export interface Filters {
  kind: string;
  year: string;
  name: string;
}

export const NO_FILTERS: Filters = { kind: "", year: "", name: "" };

/** The kinds offered, as the server names them (`retrieval/filters.py`, KIND_NAMES). */
export const KINDS: [string, string][] = [
  ["pdf", "PDF"],
  ["word", "Word and OpenDocument"],
  ["spreadsheet", "Spreadsheets and CSV"],
  ["slides", "Slides"],
  ["markdown", "Markdown"],
  ["text", "Text"],
  ["html", "Web pages"],
  ["epub", "EPUB"],
  ["image", "Images and scans"],
];

const YEAR = /^\d{4}$/;

/** The request's `filters` for what is chosen; null when nothing is (or a year is unfinished). */
export function requestFilters(filters: Filters): MessageOptions["filters"] | null {
  const chosen: NonNullable<MessageOptions["filters"]> = {};
  if (filters.kind) chosen.kind = filters.kind;
  if (YEAR.test(filters.year.trim())) chosen.year = Number(filters.year.trim());
  if (filters.name.trim()) chosen.name = filters.name.trim();
  return Object.keys(chosen).length ? chosen : null;
}

/** How many filters are set, for the button's label. */
export function filterCount(filters: Filters): number {
  const chosen = requestFilters(filters);
  return chosen ? Object.keys(chosen).length : 0;
}

export default function QuestionFilters({ filters, onChange }: { filters: Filters; onChange(next: Filters): void }) {
  const yearInvalid = filters.year.trim() !== "" && !YEAR.test(filters.year.trim());
  return (
    <fieldset className="question-filters small" data-testid="question-filters">
      <legend className="sr-only">Search only documents that match</legend>
      <label>
        Kind
        <select value={filters.kind} onChange={(e) => onChange({ ...filters, kind: e.target.value })}>
          <option value="">any</option>
          {KINDS.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </label>
      <label>
        Year
        <input
          inputMode="numeric"
          size={5}
          maxLength={4}
          placeholder="2024"
          value={filters.year}
          aria-invalid={yearInvalid}
          title="Dated in this year (the document's own date, else its upload), or with the year in its name"
          onChange={(e) => onChange({ ...filters, year: e.target.value })}
        />
      </label>
      <label className="grow">
        Name has
        <input maxLength={120} placeholder="contract" value={filters.name} onChange={(e) => onChange({ ...filters, name: e.target.value })} />
      </label>
      {filterCount(filters) > 0 && (
        <button className="link" onClick={() => onChange(NO_FILTERS)}>
          Clear
        </button>
      )}
      {yearInvalid && <span className="error">A year has four digits, such as 2024.</span>}
    </fieldset>
  );
}
