import { describe, expect, it } from "vitest";
import type { DocumentInfo, Schemas } from "../api/client";
import { acceptedTypes, sizeOf } from "./DocumentsPanel";

const formats: Schemas["FileFormatRead"][] = [
  { kind: "application/pdf", label: "PDF", suffixes: [".pdf"], parts: ["page", "pages"] },
  { kind: "text/markdown", label: "Markdown file", suffixes: [".md", ".markdown"], parts: null },
];

describe("the formats the server reads", () => {
  it("become the file picker's accept list", () => {
    expect(acceptedTypes(formats)).toBe(".pdf,.md,.markdown,application/pdf,text/markdown");
  });

  it("name what a document's page count counts", () => {
    const pdf = { content_type: "application/pdf", page_count: 3 } as DocumentInfo;
    const note = { content_type: "text/markdown", page_count: 1 } as DocumentInfo;
    expect(sizeOf(pdf, formats)).toBe("3 pages · ");
    expect(sizeOf({ ...pdf, page_count: 1 }, formats)).toBe("1 page · ");
    expect(sizeOf(note, formats)).toBe("");
  });
});
