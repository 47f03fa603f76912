import { describe, expect, it } from "vitest";
import type { Message } from "../api/client";
import { unansweredTail } from "./Conversation";

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
