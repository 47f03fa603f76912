import type { ElementContent, Root, RootContent } from "hast";
import Markdown, { type Components } from "react-markdown";
import remarkGfm from "remark-gfm";

/** Where the cited sentence lies in a passage's text, as shown. */
export interface Span {
  start: number;
  end: number;
}

/** A piece of a cited passage: `marked` pieces are outlined, `sentence` is the cited one. */
export interface Run {
  text: string;
  marked: boolean;
  sentence: boolean;
}

// A line break with the spaces around it: never outlined (an outline around the empty box a
// blank line leaves is drawn as a bar).
const BREAK = /(\s*\n\s*)/;

/** A cited passage's text cut into pieces: its line breaks (with blank lines) are left out of
 * the outline, and the cited sentence is a piece (or, across a break, pieces) of its own. */
export function citedRuns(text: string, sentence: Span | null): Run[] {
  const parts = sentence
    ? [
        { text: text.slice(0, sentence.start), sentence: false },
        { text: text.slice(sentence.start, sentence.end), sentence: true },
        { text: text.slice(sentence.end), sentence: false },
      ]
    : [{ text, sentence: false }];
  return parts.flatMap((part) =>
    part.text
      .split(BREAK)
      .filter((piece) => piece !== "")
      .map((piece) => {
        const marked = !piece.includes("\n");
        return { text: piece, marked, sentence: marked && part.sentence };
      }),
  );
}

/** Runs side by side on a line, outlined together: one outline per line. */
function lines(runs: Run[]): (Run | Run[])[] {
  const grouped: (Run | Run[])[] = [];
  for (const run of runs) {
    const last = grouped[grouped.length - 1];
    if (run.marked && Array.isArray(last)) last.push(run);
    else grouped.push(run.marked ? [run] : run);
  }
  return grouped;
}

function mark(value: string): ElementContent {
  return {
    type: "element",
    tagName: "mark",
    properties: { className: ["cited-sentence"], dataTestid: "cited-sentence" },
    children: [{ type: "text", value }],
  };
}

function marked(node: RootContent, span: Span): RootContent[] {
  if (node.type === "element") {
    node.children = node.children.flatMap((child) => marked(child, span) as ElementContent[]);
    return [node];
  }
  const from = node.position?.start.offset;
  const to = node.position?.end.offset;
  if (node.type !== "text" || from == null || to == null || to <= span.start || from >= span.end) return [node];
  // Written with escapes or entities (`\|`, `&amp;`): the offsets do not map one to one, the
  // whole text is marked.
  if (to - from !== node.value.length) return [mark(node.value)];
  const start = Math.max(0, span.start - from);
  const end = Math.min(node.value.length, span.end - from);
  const pieces: RootContent[] = [
    { type: "text", value: node.value.slice(0, start) },
    mark(node.value.slice(start, end)),
    { type: "text", value: node.value.slice(end) },
  ];
  return pieces.filter((piece) => piece.type !== "text" || piece.value !== "");
}

/** A rehype plugin: the text that `span` (offsets in the Markdown source) covers is marked as
 * the cited sentence, through paragraphs, list items and table cells alike. */
export function markSpan(span: Span) {
  return () => (tree: Root) => {
    tree.children = tree.children.flatMap((child) => marked(child, span));
  };
}

// A document's own links open in a new tab, without the app's address; its images are not
// fetched (their alt text stands in); raw HTML is never rendered (react-markdown's default,
// `skipHtml` also drops it from view).
const COMPONENTS: Components = {
  a: ({ href, children }) => (
    <a href={href} target="_blank" rel="noopener noreferrer">
      {children}
    </a>
  ),
  img: ({ alt }) => (alt ? <span className="muted">[{alt}]</span> : null),
  // Under the viewer's own heading (the file's name, h2): the document's headings come after.
  h1: ({ children }) => <h3>{children}</h3>,
  h2: ({ children }) => <h4>{children}</h4>,
  h3: ({ children }) => <h5>{children}</h5>,
  h4: ({ children }) => <h6>{children}</h6>,
  h5: ({ children }) => <h6>{children}</h6>,
};
const REMARK_PLUGINS = [remarkGfm];

/** A passage of a document's text: Markdown rendered, or plain text; when cited, outlined
 * (without bars on its blank lines) and its cited sentence marked. */
export default function PassageText({
  text,
  markdown,
  cited,
  sentence,
}: {
  text: string;
  markdown: boolean;
  cited: boolean;
  sentence: Span | null;
}) {
  if (markdown) {
    const body = (
      <Markdown remarkPlugins={REMARK_PLUGINS} rehypePlugins={sentence ? [markSpan(sentence)] : []} components={COMPONENTS} skipHtml>
        {text}
      </Markdown>
    );
    return cited ? (
      <div className="cited-block" data-testid="cited-passage" role="group" aria-label="Cited passage">
        {body}
      </div>
    ) : (
      <div>{body}</div>
    );
  }
  if (!cited) return <span>{text}</span>;
  return (
    <span className="cited-passage" data-testid="cited-passage" role="group" aria-label="Cited passage">
      {lines(citedRuns(text, sentence)).map((line, index) =>
        Array.isArray(line) ? (
          <mark key={index} className="cited">
            {line.map((run, at) =>
              run.sentence ? (
                <mark key={at} className="cited-sentence" data-testid="cited-sentence">
                  {run.text}
                </mark>
              ) : (
                run.text
              ),
            )}
          </mark>
        ) : (
          line.text
        ),
      )}
    </span>
  );
}
