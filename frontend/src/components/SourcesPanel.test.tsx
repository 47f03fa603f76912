import { cleanup, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import SourcesPanel from "./SourcesPanel";

afterEach(cleanup);

const source = {
  document_id: "d1",
  document_name: "report.pdf",
  chunk_id: "d1_3",
  page: 7,
  similarity: 0.8123,
  content_preview: "The lighthouse was built in 1887.",
  readable: true,
};

describe("SourcesPanel", () => {
  it("shows name, page, similarity and preview, and offers to open the page", () => {
    render(<SourcesPanel sources={[source]} highlighted={1} />);
    expect(screen.getByText("report.pdf")).toBeTruthy();
    expect(screen.getByText("page 7")).toBeTruthy();
    expect(screen.getByText(/81% match/)).toBeTruthy();
    expect(screen.getByText("The lighthouse was built in 1887.")).toBeTruthy();
    expect(screen.getByRole("button", { name: "Open document at page 7 (report.pdf)" })).toBeTruthy();
    expect(document.getElementById("source-1")?.className).toBe("highlight");
  });

  it("offers no original of a document the reader may no longer read, and says why", () => {
    // It offered "Open document": a blank tab, then an error.
    render(<SourcesPanel sources={[{ ...source, readable: false }]} highlighted={null} />);
    expect(screen.queryByRole("button", { name: /Open document/ })).toBeNull();
    expect(screen.getByTestId("source-gone").textContent).toMatch(/no longer available to you/);
    expect(screen.getByText("The lighthouse was built in 1887.")).toBeTruthy();
    expect(screen.getByRole("button", { name: "Show in the document (report.pdf)" })).toBeTruthy();
  });

  it("explains itself when there is nothing to show", () => {
    render(<SourcesPanel sources={null} highlighted={null} />);
    expect(screen.getByText(/Select an answer with citations/)).toBeTruthy();
  });
});
