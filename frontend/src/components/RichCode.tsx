import { useEffect, useRef, useState, type ComponentPropsWithoutRef, type ReactNode } from "react";

// Highlighting and math are loaded the first time an answer needs them: most answers have
// neither, and the first page stays small.
let highlighter: Promise<typeof import("highlight.js/lib/common").default> | null = null;
let katex: Promise<typeof import("katex").default> | null = null;

function loadHighlighter() {
  highlighter ??= import("highlight.js/lib/common").then((module) => module.default);
  return highlighter;
}

function loadKatex() {
  katex ??= Promise.all([import("katex"), import("katex/dist/katex.min.css")]).then(([module]) => module.default);
  return katex;
}

function text(children: ReactNode): string {
  return Array.isArray(children) ? children.map(text).join("") : typeof children === "string" ? children : "";
}

/** Rendered once its renderer has loaded; the plain text until then (or if it fails).
 * Rendered again only when `key` (what is rendered, and how) changes. */
function useRendered(key: string, render: () => Promise<string>): string | null {
  const [html, setHtml] = useState<string | null>(null);
  const latest = useRef(render);
  latest.current = render;
  useEffect(() => {
    let live = true;
    latest.current().then(
      (result) => live && setHtml(result),
      () => live && setHtml(null),
    );
    return () => {
      live = false;
    };
  }, [key]);
  return html;
}

function MathBlock({ source, display }: { source: string; display: boolean }) {
  const html = useRendered(
    `${display}:${source}`,
    // KaTeX escapes what it prints and runs no commands that load anything (trust: false).
    () => loadKatex().then((k) => k.renderToString(source, { displayMode: display, throwOnError: false })),
  );
  if (html === null) return <code className="math-source">{source}</code>;
  return display ? (
    <div className="math-display" dangerouslySetInnerHTML={{ __html: html }} />
  ) : (
    <span className="math-inline" dangerouslySetInnerHTML={{ __html: html }} />
  );
}

function Highlighted({ source, language, className }: { source: string; language: string; className?: string }) {
  const html = useRendered(`${language}:${source}`, () =>
    loadHighlighter().then((hljs) =>
      // highlight.js escapes the code it wraps in its spans.
      hljs.getLanguage(language) ? hljs.highlight(source, { language }).value : hljs.highlightAuto(source).value,
    ),
  );
  if (html === null) return <code className={className}>{source}</code>;
  return <code className={`${className ?? ""} hljs`} dangerouslySetInnerHTML={{ __html: html }} />;
}

/** `code` for the Markdown renderer: math (from $…$ and $$…$$), highlighted blocks, plain spans. */
export function Code({ className, children }: ComponentPropsWithoutRef<"code">) {
  const source = text(children).replace(/\n$/, "");
  const classes = className?.split(" ") ?? [];
  if (classes.includes("language-math")) return <MathBlock source={source} display={classes.includes("math-display")} />;
  const language = classes.find((name) => name.startsWith("language-"))?.slice("language-".length);
  if (!language) return <code className={className}>{children}</code>;
  return <Highlighted source={source} language={language} className={className} />;
}

/** `pre` for the Markdown renderer: a code block with a button that copies it. */
export function CodeBlock({ children }: ComponentPropsWithoutRef<"pre">) {
  const [copied, setCopied] = useState(false);
  const isMath = (children as { props?: { className?: string } } | undefined)?.props?.className?.includes("language-math");
  if (isMath) return <>{children}</>;
  const source = text((children as { props?: { children?: ReactNode } } | undefined)?.props?.children).replace(/\n$/, "");
  async function copy() {
    await navigator.clipboard?.writeText(source);
    setCopied(true);
    window.setTimeout(() => setCopied(false), 2000);
  }
  return (
    <div className="code-block">
      <button className="copy-code" onClick={() => void copy()} aria-label="Copy code">
        {copied ? "Copied" : "Copy"}
      </button>
      <pre>{children}</pre>
    </div>
  );
}
