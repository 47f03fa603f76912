// One page of a PDF drawn in the app by pdf.js, with the cited passage highlighted on it.
// pdf.js (about 1 MB with its worker) is loaded the first time a page is shown.
import { useEffect, useRef, useState } from "react";
import { authFetch } from "../api/client";

export interface Span {
  start: number;
  end: number;
}

/** Letters and digits only, lower case: pypdf and pdf.js split and space a page's text
 * differently, so the passage is looked for without what they disagree on. */
export function normalize(text: string): string {
  return text.toLowerCase().replace(/[^\p{L}\p{N}]/gu, "");
}

// How much of the passage's start (and end) is looked for on the page; a passage that starts
// in a page's last line may show fewer letters there, down to the shorter length.
const ANCHOR = 40;
const SHORTEST_ANCHOR = 12;

/** Where `passage` lies in `page` (both normalized): from its first letters to its last ones,
 * or to the page's end when the passage runs on to the next page; null if not found. */
export function locate(page: string, passage: string): Span | null {
  for (let size = Math.min(ANCHOR, passage.length); size >= Math.min(SHORTEST_ANCHOR, passage.length) && size > 0; size--) {
    const start = page.indexOf(passage.slice(0, size));
    if (start < 0) continue;
    const tail = passage.slice(-ANCHOR);
    const tailAt = page.indexOf(tail, start);
    const whole = tailAt >= 0 && tailAt + tail.length - start <= passage.length * 1.2;
    return { start, end: whole ? tailAt + tail.length : Math.min(page.length, start + passage.length) };
  }
  return null;
}

export interface TextItem {
  str: string;
  transform: number[];
  width: number;
  height: number;
}

/** The cells of a cited table row ("| South quay | EUR 42 |"), normalized, empty ones left out. */
export function cellsOf(row: string): string[] {
  return row
    .split("|")
    .map(normalize)
    .filter((cell) => cell.length > 0);
}

/** Whether a text item of the page is (part of) a cell, or holds it: pdf.js gives a cell as
 * one item or several, and two short cells may share one. One-character matches only count
 * when exact ("0" is in every number). */
function sameText(item: string, cell: string): boolean {
  if (!item) return false;
  if (item === cell) return true;
  return (item.length >= 2 && cell.includes(item)) || (cell.length >= 2 && item.includes(cell));
}

function heightOf(item: TextItem): number {
  return item.height || Math.abs(item.transform[3]) || 1;
}

/** The items of the page's line that shows the cited row: of the lines holding its first cell,
 * the one where most of its cells are found (a page draws a table row by row or column by
 * column, so the row is found by where its cells sit, not by their order in the text); null
 * when not even half of its cells (and two) are on one line. */
export function locateRow(items: TextItem[], cells: string[]): TextItem[] | null {
  if (!cells.length) return null;
  let best: TextItem[] = [];
  let bestFound = 0;
  for (const first of items) {
    if (!sameText(normalize(first.str), cells[0])) continue;
    const y = first.transform[5];
    const line = items.filter((item) => Math.abs(item.transform[5] - y) <= heightOf(first) / 2);
    const shown = line.filter((item) => cells.some((cell) => sameText(normalize(item.str), cell)));
    const found = cells.filter((cell) => shown.some((item) => sameText(normalize(item.str), cell))).length;
    if (found > bestFound) {
      best = shown;
      bestFound = found;
    }
  }
  return bestFound >= Math.max(2, Math.ceil(cells.length / 2)) ? best : null;
}

interface Box {
  left: number;
  top: number;
  width: number;
  height: number;
}

function boxOf(item: TextItem, viewportHeight: number, scale: number): Box {
  const [, , , , x, y] = item.transform;
  const height = heightOf(item) * scale;
  return { left: x * scale, top: viewportHeight - y * scale - height, width: item.width * scale, height };
}

/** The boxes (in CSS pixels at `scale`) of the text items that overlap the span. */
function boxesOf(items: TextItem[], span: Span, viewportHeight: number, scale: number): Box[] {
  const boxes: Box[] = [];
  let offset = 0;
  for (const item of items) {
    const length = normalize(item.str).length;
    const from = offset;
    offset += length;
    if (!length || offset <= span.start || from >= span.end) continue;
    boxes.push(boxOf(item, viewportHeight, scale));
  }
  return boxes;
}

/** The items that show the passage: a table row's cells on their line, else the span of text
 * from its first letters to its last. */
function shownItems(items: TextItem[], passage: string, row: boolean): TextItem[] | Span | null {
  const cells = row ? locateRow(items, cellsOf(passage)) : null;
  if (cells) return cells;
  return locate(normalize(items.map((item) => item.str).join("")), normalize(passage));
}

interface Props {
  documentId: string;
  documentName: string;
  page: number;
  passage: string;
  /** The passage is one row of a table ("| South quay | EUR 42 |"): its cells are marked. */
  row?: boolean;
}

export default function PdfPage({ documentId, documentName, page, passage, row = false }: Props) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [size, setSize] = useState<{ width: number; height: number } | null>(null);
  const [boxes, setBoxes] = useState<Box[]>([]);
  const [state, setState] = useState<"loading" | "shown" | "failed">("loading");

  useEffect(() => {
    let cancelled = false;
    void (async () => {
      try {
        const [pdfjs, worker] = await Promise.all([import("pdfjs-dist"), import("pdfjs-dist/build/pdf.worker.min.mjs?url")]);
        pdfjs.GlobalWorkerOptions.workerSrc = worker.default;
        const response = await authFetch(`/api/v1/documents/${documentId}/file`);
        if (!response.ok) throw new Error(String(response.status));
        const pdf = await pdfjs.getDocument({ data: new Uint8Array(await response.arrayBuffer()) }).promise;
        const drawn = await pdf.getPage(Math.min(page, pdf.numPages));
        const width = canvas.current?.parentElement?.clientWidth || 700;
        const scale = Math.min(2, width / drawn.getViewport({ scale: 1 }).width);
        const viewport = drawn.getViewport({ scale });
        const target = canvas.current;
        if (cancelled || !target) return;
        const ratio = window.devicePixelRatio || 1;
        target.width = Math.floor(viewport.width * ratio);
        target.height = Math.floor(viewport.height * ratio);
        await drawn.render({ canvas: target, viewport, transform: ratio !== 1 ? [ratio, 0, 0, ratio, 0, 0] : undefined }).promise;
        const content = await drawn.getTextContent();
        const items = content.items.filter((item): item is TextItem & typeof item => "str" in item);
        const shown = shownItems(items, passage, row);
        if (cancelled) return;
        setSize({ width: viewport.width, height: viewport.height });
        if (Array.isArray(shown)) setBoxes(shown.map((item) => boxOf(item, viewport.height, scale)));
        else setBoxes(shown ? boxesOf(items, shown, viewport.height, scale) : []);
        setState("shown");
      } catch {
        if (!cancelled) setState("failed");
      }
    })();
    return () => {
      cancelled = true;
    };
  }, [documentId, page, passage, row]);

  return (
    <div className="pdf-page" data-testid="pdf-page" data-state={state}>
      {state === "loading" && <p className="muted small">Drawing page {page}…</p>}
      {state === "failed" && (
        <p role="alert" className="error">
          Page {page} could not be drawn here; open the original instead.
        </p>
      )}
      <div className="pdf-sheet" style={size ? { width: size.width, height: size.height } : undefined}>
        <canvas
          ref={canvas}
          role="img"
          aria-label={`Page ${page} of ${documentName}${boxes.length ? ", the cited passage highlighted" : ""}`}
          style={size ? { width: size.width, height: size.height } : { display: "none" }}
        />
        {boxes.map((box, index) => (
          <span key={index} className="pdf-highlight" data-testid="pdf-highlight" style={box} />
        ))}
      </div>
    </div>
  );
}
