import { describe, expect, it } from "vitest";
import { filterCount, NO_FILTERS, requestFilters } from "./QuestionFilters";

describe("requestFilters", () => {
  it("sends only what is chosen, and a year once it has four digits", () => {
    expect(requestFilters(NO_FILTERS)).toBeNull();
    expect(requestFilters({ kind: "pdf", year: " 2023 ", name: "  contract " })).toEqual({ kind: "pdf", year: 2023, name: "contract" });
    expect(requestFilters({ ...NO_FILTERS, year: "202" })).toBeNull();
    expect(filterCount({ kind: "pdf", year: "20", name: "" })).toBe(1);
  });
});
