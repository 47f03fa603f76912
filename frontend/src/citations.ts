// Citation markers [n] become links the Markdown renderer turns into buttons.

export const CITATION_PREFIX = "#cite-";

/**
 * `text [1][2]` -> `text [[1]](#cite-1)[[2]](#cite-2)`, leaving code spans and blocks alone.
 * Only markers with a source to show (1..sourceCount) become links; the others stay text.
 */
export function linkCitations(markdown: string, sourceCount: number): string {
  return outsideCode(markdown, (part) =>
    part.replace(/\[(\d{1,3})\](?!\()([.,;:!?)]{0,3})/g, (marker, n: string, after: string) =>
      // Punctuation right after a marker goes inside its link, so the marker (a button, after
      // which a line may break) never leaves it to start the next line alone.
      Number(n) >= 1 && Number(n) <= sourceCount ? `[\\[${n}\\]${after}](${CITATION_PREFIX}${n})` : marker,
    ),
  );
}

/** What a citation link shows after its marker: the punctuation that followed it. */
export function afterMarker(text: string): string {
  return text.replace(/^\[\d{1,3}\]/, "");
}

/** `transform` applied to the text outside code spans and fenced blocks. */
export function outsideCode(markdown: string, transform: (text: string) => string): string {
  return markdown
    .split(/(```[\s\S]*?```|`[^`\n]*`)/g)
    .map((part, index) => (index % 2 === 1 ? part : transform(part)))
    .join("");
}

/** Models write math as `\(x\)` and `\[x\]` as often as `$x$` and `$$x$$`: the Markdown
 * reader knows only the dollar forms (display math: `$$` on lines of their own). */
export function dollarMath(markdown: string): string {
  return outsideCode(markdown, (part) =>
    part
      // Display math needs its $$ on lines of their own, or it is read as inline math.
      .replace(/\\\[([\s\S]+?)\\\]/g, (_, body: string) => `\n\n$$\n${body.trim()}\n$$\n\n`)
      .replace(/\\\(([\s\S]+?)\\\)/g, (_, body: string) => `$${body}$`),
  );
}

export function citationNumber(href: string | undefined): number | null {
  if (!href?.startsWith(CITATION_PREFIX)) return null;
  const number = Number(href.slice(CITATION_PREFIX.length));
  return Number.isInteger(number) && number > 0 ? number : null;
}

interface Quotable {
  content_preview: string;
  highlight?: { text: string; row?: number | null } | null;
}

/** What a source card and a citation's hover show: the cited sentence or row (its highlight),
 * else the passage's first characters. A table row reads as its cells, with its row number. */
export function quoteOf(source: Quotable): string {
  const highlight = source.highlight;
  if (!highlight) return source.content_preview;
  if (highlight.text.trim().startsWith("|")) {
    const cells = highlight.text
      .trim()
      .replace(/^\||\|$/g, "")
      .split(/(?<!\\)\|/)
      .map((cell) => cell.trim())
      .filter(Boolean);
    const row = highlight.row != null ? `Row ${highlight.row}: ` : "";
    return row + cells.join(" · ");
  }
  return highlight.text.replace(/\s+/g, " ");
}
