import { describe, expect, it } from "vitest";
import type { Message } from "../api/client";
import { answerBadge } from "./AnswerMessage";

describe("answerBadge", () => {
  it("says the documents do not answer instead of calling it a general answer", () => {
    // The demo model's refusal was shown as a "General answer", as if facts had been given.
    const refused = { meta: { grounded: false, evidence: "not_in_documents" }, sources: null } as Message;
    expect(answerBadge(refused)).toEqual({ kind: "not-in-documents", text: "Not in your documents" });
    const nearest = { ...refused, sources: [{}] } as Message;
    expect(answerBadge(nearest).text).toBe("Nearest passages, not an answer");
  });

  it("says what the documents support of a written answer", () => {
    const written = { meta: { grounded: true, answer_mode: "generative", evidence: "answered" }, sources: [{}] } as Message;
    expect(answerBadge(written)).toEqual({ kind: "answered", text: "Answered from the documents" });
    const partly = { ...written, meta: { ...written.meta, evidence: "partial" } } as Message;
    expect(answerBadge(partly).kind).toBe("partial");
  });

  it("keeps the general and quoted badges for the answers they describe", () => {
    expect(answerBadge({ meta: { grounded: false }, sources: null } as Message).kind).toBe("general");
    expect(answerBadge({ meta: { grounded: true }, sources: [{}] } as Message).kind).toBe("quoted");
  });
});
