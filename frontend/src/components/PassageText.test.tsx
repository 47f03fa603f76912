import { cleanup, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import PassageText, { citedRuns } from "./PassageText";

afterEach(cleanup);

const NOTES = "Tide notes.\n\n\nThe gauge stands at the pier.\n\nIt was calibrated in spring.\n";

describe("citedRuns", () => {
  it("outlines each line on its own, never a line break or a blank line", () => {
    // The outline around the passage drew a bar on each blank line.
    const runs = citedRuns(NOTES, null);
    expect(runs.filter((run) => run.marked).map((run) => run.text)).toEqual([
      "Tide notes.",
      "The gauge stands at the pier.",
      "It was calibrated in spring.",
    ]);
    expect(runs.map((run) => run.text).join("")).toBe(NOTES);
    expect(runs.filter((run) => !run.marked).every((run) => run.text.trim() === "")).toBe(true);
  });

  it("keeps the cited sentence whole, without the breaks around it", () => {
    const start = NOTES.indexOf("The gauge");
    const runs = citedRuns(NOTES, { start: start - 2, end: start + "The gauge stands at the pier.\n".length });
    expect(runs.filter((run) => run.sentence).map((run) => run.text)).toEqual(["The gauge stands at the pier."]);
    expect(runs.map((run) => run.text).join("")).toBe(NOTES);
  });
});

const TIDES = "# Harbour tides\n\nKept by the office.\n\n| Day | High tide |\n| --- | --- |\n| Monday | 06:10 |\n| Tuesday | 06:55 |\n\n<b>raw</b> and ![tracker](http://example.com/t.png)";

describe("PassageText", () => {
  it("renders Markdown: a heading and a table, not their signs; no raw HTML, no images", () => {
    const { container } = render(<PassageText text={TIDES} markdown cited={false} sentence={null} />);
    expect(screen.getByRole("heading", { name: "Harbour tides" }).tagName).toBe("H3");
    expect(screen.getByRole("columnheader", { name: "High tide" })).toBeTruthy();
    expect(screen.getByRole("cell", { name: "06:55" })).toBeTruthy();
    expect(container.textContent).not.toMatch(/\||#|---/);
    expect(container.querySelector("b, img, script")).toBeNull();
    expect(container.textContent).toContain("[tracker]");
  });

  it("marks the cited sentence inside rendered Markdown by its offsets", () => {
    const row = "| Tuesday | 06:55 |";
    const start = TIDES.indexOf(row);
    render(<PassageText text={TIDES} markdown cited sentence={{ start, end: start + row.length }} />);
    const marks = screen.getAllByTestId("cited-sentence").map((mark) => mark.textContent);
    expect(marks).toEqual(["Tuesday", "06:55"]);
    expect(screen.getByTestId("cited-passage").textContent).toContain("Kept by the office.");
  });

  it("outlines a cited passage line by line, the sentence marked inside its line", () => {
    const start = NOTES.indexOf("stands");
    const { container } = render(<PassageText text={NOTES} markdown={false} cited sentence={{ start, end: start + 6 }} />);
    const outlined = [...container.querySelectorAll("mark.cited")].map((mark) => mark.textContent);
    expect(outlined).toEqual(["Tide notes.", "The gauge stands at the pier.", "It was calibrated in spring."]);
    expect(screen.getByTestId("cited-sentence").textContent).toBe("stands");
    expect(screen.getByTestId("cited-passage").textContent).toBe(NOTES);
  });

  it("shows plain text as it is", () => {
    const { container } = render(<PassageText text="# not a heading | a | b |" markdown={false} cited={false} sentence={null} />);
    expect(container.textContent).toBe("# not a heading | a | b |");
    expect(screen.queryByRole("heading")).toBeNull();
  });
});
