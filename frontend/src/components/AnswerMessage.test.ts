import { describe, expect, it } from "vitest";
import type { Message } from "../api/client";
import { answerBadge, researchNote } from "./AnswerMessage";

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

describe("researchNote", () => {
  it("says how many searches a research answer made, each in its title", () => {
    const meta = {
      grounded: true,
      research: [
        { query: "When did A open, and who built B?", part: null, passages: 8, new: 8 },
        { query: "When did A open", part: "When did A open", passages: 4, new: 1 },
        { query: "who built B", part: "who built B", passages: 4, new: 3 },
        { query: "When did A open, and who built B?", part: null, document: "a.pdf", passages: 16, new: 9 },
      ],
    } as Message["meta"];
    expect(researchNote(meta)).toEqual({
      text: "researched in 4 searches",
      title:
        "The whole question: 8 passages, 8 new\nWhen did A open: 4 passages, 1 new\nwho built B: 4 passages, 3 new\n" +
        "The whole question in a.pdf: 16 passages, 9 new",
    });
    const one = { query: "who built B", part: "who built B", passages: 1, new: 0 };
    expect(researchNote({ grounded: true, research: [meta!.research![0], one] } as Message["meta"])?.title).toBe(
      "The whole question: 8 passages, 8 new\nwho built B: 1 passage, 0 new",
    );
    expect(researchNote({ grounded: true, research: [meta!.research![0]] } as Message["meta"])).toBeNull();
    expect(researchNote({ grounded: true } as Message["meta"])).toBeNull();
  });
});
