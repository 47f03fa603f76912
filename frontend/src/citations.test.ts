import { describe, expect, it } from "vitest";
import { afterMarker, citationNumber, dollarMath, linkCitations, quoteOf } from "./citations";

describe("linkCitations", () => {
  it("turns markers into citation links", () => {
    expect(linkCitations("Built in 1887 [1][2].", 2)).toBe("Built in 1887 [\\[1\\]](#cite-1)[\\[2\\].](#cite-2)");
  });

  it("leaves code and existing links alone", () => {
    expect(linkCitations("`a[1]` and [x](http://e.com) [3]", 3)).toBe("`a[1]` and [x](http://e.com) [\\[3\\]](#cite-3)");
    expect(linkCitations("```\nlist[0]\n```", 1)).toBe("```\nlist[0]\n```");
  });

  it("links only markers that have a source", () => {
    expect(linkCitations("General answer [1][2].", 0)).toBe("General answer [1][2].");
    expect(linkCitations("One source [1], not [2].", 1)).toBe("One source [\\[1\\],](#cite-1) not [2].");
  });
});

describe("afterMarker", () => {
  it("keeps the punctuation that followed a marker inside its link", () => {
    expect(linkCitations("Seen 22 miles away [1]), at night [2].", 2)).toBe(
      "Seen 22 miles away [\\[1\\]),](#cite-1) at night [\\[2\\].](#cite-2)",
    );
    expect(afterMarker("[1]),")).toBe("),");
    expect(afterMarker("[12]")).toBe("");
  });
});

describe("citationNumber", () => {
  it("reads citation links only", () => {
    expect(citationNumber("#cite-4")).toBe(4);
    expect(citationNumber("https://example.com")).toBeNull();
    expect(citationNumber("#cite-x")).toBeNull();
    expect(citationNumber(undefined)).toBeNull();
  });
});

describe("dollarMath", () => {
  it("turns \\( \\) and \\[ \\] into the dollar forms, outside code", () => {
    expect(dollarMath("Area \\(\\pi r^2\\) and \\[ E = mc^2 \\]")).toBe("Area $\\pi r^2$ and \n\n$$\nE = mc^2\n$$\n\n");
    expect(dollarMath("`\\(kept\\)` \\(x\\)")).toBe("`\\(kept\\)` $x$");
  });
});

describe("quoteOf", () => {
  it("shows the highlight when there is one, else the preview", () => {
    expect(quoteOf({ content_preview: "Start of the chunk", highlight: { text: "The cited\nsentence.", row: null } })).toBe("The cited sentence.");
    expect(quoteOf({ content_preview: "Start of the chunk", highlight: null })).toBe("Start of the chunk");
  });
  it("reads a table row as its cells with the row number", () => {
    expect(quoteOf({ content_preview: "", highlight: { text: "| South | Tomas Riva | 340 |", row: 174 } })).toBe("Row 174: South · Tomas Riva · 340");
  });
});
