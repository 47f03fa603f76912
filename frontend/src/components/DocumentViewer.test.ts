import { describe, expect, it } from "vitest";
import { citedIndex, reflow, sentenceSpan } from "./DocumentViewer";

describe("reflow", () => {
  it("joins the lines a PDF page broke, keeps paragraphs, tables and lists", () => {
    expect(reflow("The light can be\nseen far away.\n\nNext paragraph")).toBe("The light can be seen far away.\n\nNext paragraph");
    expect(reflow("| a | b |\n| --- | --- |\n| 1 | 2 |")).toBe("| a | b |\n| --- | --- |\n| 1 | 2 |");
    expect(reflow("Steps:\n- one\n- two")).toBe("Steps:\n- one\n- two");
  });
});

describe("citedIndex", () => {
  const source = { document_id: "d", document_name: "n", page: null, similarity: null, content_preview: "", readable: true };
  it("reads the chunk index of first and later versions, none for a whole file", () => {
    expect(citedIndex({ ...source, chunk_id: "0f2a_12" })).toBe(12);
    expect(citedIndex({ ...source, chunk_id: "0f2a_v3_7" })).toBe(7);
    expect(citedIndex({ ...source, chunk_id: "0f2a_file" })).toBeNull();
  });
});

describe("sentenceSpan", () => {
  const source = (start: number, end: number) =>
    ({ highlight: { text: "x", start, end } }) as unknown as Parameters<typeof sentenceSpan>[0];
  it("shifts the highlight by what the overlap with the passage before left out", () => {
    expect(sentenceSpan(source(250, 300), 200, 800)).toEqual({ start: 50, end: 100 });
  });
  it("gives nothing when the highlight lies in the part shown with the passage before", () => {
    expect(sentenceSpan(source(10, 60), 200, 800)).toBeNull();
  });
});
