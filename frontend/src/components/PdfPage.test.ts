import { describe, expect, it } from "vitest";
import { locate, normalize } from "./PdfPage";

describe("finding a cited passage on a PDF page", () => {
  const page = normalize("Harbour notes.  The Northwind light can be seen 22 nautical\nmiles away. Its lamp was lit in 1887. Museum hours follow.");

  it("ignores the spacing and punctuation the two readers disagree on", () => {
    expect(normalize("22 nautical-\nmiles, away!")).toBe("22nauticalmilesaway");
  });

  it("spans the passage from its first letters to its last", () => {
    const passage = normalize("The Northwind light can be seen 22 nautical miles away. Its lamp was lit in 1887.");
    const span = locate(page, passage);
    expect(span).not.toBeNull();
    expect(page.slice(span!.start, span!.end)).toBe(passage);
  });

  it("runs to the end of the page when the passage goes on to the next", () => {
    const passage = normalize("Museum hours follow. On the next page the cafe opens at nine and closes at five.");
    const span = locate(page, passage);
    expect(span).toEqual({ start: page.indexOf("museumhours"), end: page.length });
  });

  it("finds nothing for a passage of another page", () => {
    expect(locate(page, normalize("A passage printed somewhere else entirely, not on this page."))).toBeNull();
  });
});
