import { describe, expect, it } from "vitest";
import type { Message, ResearchStep } from "../api/client";
import { stepPlaces, stepsSummary } from "./ResearchSteps";

const passage = (document_id: string, filename: string, page: number | null, location: string | null = null) => ({
  document_id,
  filename,
  page,
  location,
});

describe("stepPlaces", () => {
  it("lists each document and page a step found once, in order, named for a link", () => {
    const step = {
      number: 1,
      action: "search",
      said: "Searched 'penalty clause': 3 passages",
      passages: [passage("d1", "contract-17.pdf", 3), passage("d1", "contract-17.pdf", 3), passage("d2", "notes.md", null, "Penalties")],
    } as ResearchStep;
    expect(stepPlaces(step)).toEqual([
      { documentId: "d1", page: 3, label: "contract-17.pdf p. 3" },
      { documentId: "d2", page: null, label: "notes.md · Penalties" },
    ]);
    expect(stepPlaces({ ...step, passages: null })).toEqual([]);
  });
});

describe("stepsSummary", () => {
  const step = { number: 1, action: "search", said: "Searched 'x': 1 passage" } as ResearchStep;
  it("counts the steps, and says when the budget ended the research", () => {
    expect(stepsSummary({ grounded: true, research_steps: [step, { ...step, number: 2 }] } as Message["meta"])).toBe(
      "Researched in 2 steps",
    );
    expect(stepsSummary({ grounded: true, research_steps: [step], research_end: "steps" } as Message["meta"])).toBe(
      "Researched in 1 step (its step budget ran out)",
    );
    expect(stepsSummary({ grounded: true, research_steps: [step], research_end: "finished" } as Message["meta"])).toBe(
      "Researched in 1 step",
    );
    expect(stepsSummary({ grounded: true } as Message["meta"])).toBeNull();
  });
});
