// A citation marker in an answer: a button that opens its source, and the preview of the
// quoted passage it shows on hover and keyboard focus.
import { createContext, useContext, useId, useState, type ComponentPropsWithoutRef, type ReactNode } from "react";
import type { Source } from "../api/client";
import { afterMarker, citationNumber, quoteOf } from "../citations";

// Height a citation's preview needs above its marker before it opens below instead.
const PREVIEW_ROOM_PX = 170;
// The preview's width (styles.css: min(22rem, 70vw)) and the room kept from the column's edges.
const PREVIEW_WIDTH_PX = 352;
const PREVIEW_MARGIN_PX = 8;

/** How far (px) a preview that starts at its marker must move to stay inside the column:
 * negative near the right edge (it was clipped there), 0 where it fits. */
export function previewShift(markerLeft: number, columnLeft: number, columnRight: number, viewport: number): number {
  const width = Math.min(PREVIEW_WIDTH_PX, viewport * 0.7);
  const overflow = markerLeft + width - (columnRight - PREVIEW_MARGIN_PX);
  if (overflow <= 0) return 0;
  return -Math.min(overflow, markerLeft - (columnLeft + PREVIEW_MARGIN_PX));
}

/** What a citation button does, given by the answer that holds it. */
export interface Citing {
  onCite(n: number): void;
  /** In citation order; null where the reader may not see the source (a shared chat). */
  sources: (Source | null)[];
}
export const CiteContext = createContext<Citing>({ onCite: () => undefined, sources: [] });

function textOf(children: ReactNode): string {
  if (typeof children === "string" || typeof children === "number") return String(children);
  return Array.isArray(children) ? children.map(textOf).join("") : "";
}

export default function CitationLink({ href, children }: ComponentPropsWithoutRef<"a">) {
  const { onCite, sources } = useContext(CiteContext);
  const [previewing, setPreviewing] = useState(false);
  const [below, setBelow] = useState(false);
  // Pixels the preview moves left (or right) to stay inside the conversation's column.
  const [shift, setShift] = useState(0);
  const tooltip = useId();
  const number = citationNumber(href);
  if (number === null) {
    return (
      <a href={href} target="_blank" rel="noreferrer">
        {children}
      </a>
    );
  }
  const source = sources[number - 1];
  const where = source ? [source.page != null ? `page ${source.page}` : null, source.location].filter(Boolean).join(", ") : "";
  // The quote shows on hover and on keyboard focus; Escape hides it (WCAG 1.4.13). It opens
  // above the marker, or below it when the conversation has no room above.
  function show(marker: HTMLElement) {
    const column = marker.closest(".messages")?.getBoundingClientRect();
    const at = marker.getBoundingClientRect();
    setBelow(at.top - (column?.top ?? 0) < PREVIEW_ROOM_PX);
    if (column) setShift(previewShift(at.left, column.left, column.right, window.innerWidth));
    setPreviewing(true);
  }
  return (
    <span className="cite-wrap" onMouseEnter={(event) => show(event.currentTarget)} onMouseLeave={() => setPreviewing(false)}>
      <button
        className="cite"
        onClick={() => {
          setPreviewing(false);
          onCite(number);
        }}
        // Keyboard focus only: a click opens the source itself, the quote would only repeat it.
        onFocus={(event) => event.currentTarget.matches(":focus-visible") && show(event.currentTarget)}
        onBlur={() => setPreviewing(false)}
        onKeyDown={(event) => event.key === "Escape" && setPreviewing(false)}
        aria-label={source === null ? `Source ${number}: a document you may not read` : `Show source ${number}`}
        aria-describedby={source ? tooltip : undefined}
      >
        [{number}]
      </button>
      {afterMarker(textOf(children))}
      {source && (
        <span
          id={tooltip}
          role="tooltip"
          className={`cite-preview${below ? " below" : ""}`}
          style={shift ? { left: `${shift}px` } : undefined}
          hidden={!previewing}
        >
          <strong>{source.document_name}</strong>
          {where && <span className="muted"> · {where}</span>}
          <span className="cite-quote">“{quoteOf(source)}”</span>
        </span>
      )}
    </span>
  );
}

