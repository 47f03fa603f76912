import { describe, expect, it } from "vitest";
import type { Message } from "../api/client";
import { answerBadge, previewShift, unansweredTail } from "./Conversation";

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

describe("unansweredTail", () => {
  const message = (id: string, role: "user" | "assistant") => ({ id, role }) as Message;
  it("is the chat's last questions that have no answer, oldest first", () => {
    // A question sent again after a failure replaces these (it was asked a second time).
    const asked = [message("q1", "user"), message("a1", "assistant"), message("q2", "user"), message("q3", "user")];
    expect(unansweredTail(asked).map((m) => m.id)).toEqual(["q2", "q3"]);
    expect(unansweredTail(asked.slice(0, 2))).toEqual([]);
    expect(unansweredTail([])).toEqual([]);
  });
});

describe("answerBadge", () => {
  it("says the documents do not answer instead of calling it a general answer", () => {
    // The demo model's refusal was shown as a "General answer", as if facts had been given.
    const refused = { meta: { grounded: false, evidence: "not_in_documents" }, sources: null } as Message;
    expect(answerBadge(refused)).toEqual({ kind: "not-in-documents", text: "Not in your documents" });
    const nearest = { ...refused, sources: [{}] } as Message;
    expect(answerBadge(nearest).text).toBe("Nearest passages, not an answer");
  });

  it("keeps the general and quoted badges for the answers they describe", () => {
    expect(answerBadge({ meta: { grounded: false }, sources: null } as Message).kind).toBe("general");
    expect(answerBadge({ meta: { grounded: true }, sources: [{}] } as Message).kind).toBe("quoted");
  });
});
