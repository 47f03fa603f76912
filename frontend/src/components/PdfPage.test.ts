import { describe, expect, it } from "vitest";
import { cellsOf, locate, locateRow, normalize } from "./PdfPage";

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

describe("finding a cited table row on a PDF page", () => {
  const item = (str: string, x: number, y: number) => ({ str, transform: [10, 0, 0, 10, x, y], width: 40, height: 10 });
  // A table drawn column by column: its rows' cells are far apart in the page's text.
  const items = [
    item("Berth", 50, 700), item("North pontoon", 50, 680), item("South quay", 50, 660), item("Fuel dock", 50, 640),
    item("Fee per night", 200, 700), item("EUR 24", 200, 680), item("EUR 42", 200, 660), item("EUR 10 per hour", 200, 640),
    item("Electricity", 300, 700), item("included", 300, 680), item("EUR 4 per day", 300, 660), item("not available", 300, 640),
  ];

  it("marks the row's cells on their line, whatever order the page draws them in", () => {
    const shown = locateRow(items, cellsOf("| South quay | EUR 42 | EUR 4 per day |"));
    expect(shown?.map((found) => found.str)).toEqual(["South quay", "EUR 42", "EUR 4 per day"]);
  });

  it("finds no row whose cells are not on one line", () => {
    expect(locateRow(items, cellsOf("| South quay | EUR 24 | not available |"))).toBeNull();
  });

  it("reads a row's cells without its Markdown", () => {
    expect(cellsOf("| South quay |  | EUR 42 |")).toEqual(["southquay", "eur42"]);
  });
});
