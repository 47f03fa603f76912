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

interface TextItem {
  str: string;
  transform: number[];
  width: number;
  height: number;
}

interface Box {
  left: number;
  top: number;
  width: number;
  height: number;
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
    const [, , , , x, y] = item.transform;
    const height = (item.height || Math.abs(item.transform[3])) * scale;
    boxes.push({ left: x * scale, top: viewportHeight - y * scale - height, width: item.width * scale, height });
  }
  return boxes;
}

interface Props {
  documentId: string;
  documentName: string;
  page: number;
  passage: string;
}

export default function PdfPage({ documentId, documentName, page, passage }: Props) {
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
        const span = locate(normalize(items.map((item) => item.str).join("")), normalize(passage));
        if (cancelled) return;
        setSize({ width: viewport.width, height: viewport.height });
        setBoxes(span ? boxesOf(items, span, viewport.height, scale) : []);
        setState("shown");
      } catch {
        if (!cancelled) setState("failed");
      }
    })();
    return () => {
      cancelled = true;
    };
  }, [documentId, page, passage]);

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
