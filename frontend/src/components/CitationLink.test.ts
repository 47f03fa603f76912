import { describe, expect, it } from "vitest";
import { previewShift } from "./CitationLink";

describe("previewShift", () => {
  it("leaves a preview that fits where it is", () => {
    expect(previewShift(300, 250, 1000, 1400)).toBe(0);
  });

  it("moves a preview near the column's right edge back inside (it was clipped)", () => {
    // A marker at 900 in a column ending at 1000: 352 px wide, 8 px margin.
    expect(previewShift(900, 250, 1000, 1400)).toBe(-(900 + 352 - 992));
  });

  it("never moves it past the column's left edge", () => {
    // A phone, 390 px wide: the preview is 273 px, wider than this 188 px column.
    expect(previewShift(150, 12, 200, 390)).toBe(-(150 - 20));
    expect(previewShift(300, 12, 378, 390)).toBe(-(300 + 273 - 370));
  });
});
