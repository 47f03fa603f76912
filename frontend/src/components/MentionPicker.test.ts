import { describe, expect, it } from "vitest";
import { mentionAt, withoutMention } from "./MentionPicker";

describe("mentionAt", () => {
  it("finds the name being typed after an @", () => {
    expect(mentionAt("What does @budg", 15)).toEqual({ start: 10, query: "budg" });
    expect(mentionAt("@", 1)).toEqual({ start: 0, query: "" });
    // Names may hold spaces.
    expect(mentionAt("see @budget 2027", 16)).toEqual({ start: 4, query: "budget 2027" });
  });

  it("ignores e-mail addresses, line breaks and a space right after the @", () => {
    expect(mentionAt("mail ana@example.com", 20)).toBeNull();
    expect(mentionAt("@budget\nand then", 16)).toBeNull();
    expect(mentionAt("costs @ 5 euros", 9)).toBeNull();
    expect(mentionAt("no mention here", 15)).toBeNull();
  });

  it("only looks before the caret", () => {
    expect(mentionAt("@minutes and more", 8)).toEqual({ start: 0, query: "minutes" });
  });
});

describe("withoutMention", () => {
  it("takes the mention out and puts the caret where it was", () => {
    const text = "What does @budg say about travel?";
    expect(withoutMention(text, { start: 10, query: "budg" }, 15)).toEqual({
      text: "What does say about travel?",
      caret: 10,
    });
    expect(withoutMention("@min", { start: 0, query: "min" }, 4)).toEqual({ text: "", caret: 0 });
  });

  it("leaves one space at the seam, never two (issue 40: a double space after a pick)", () => {
    // Picked at the end: the space before the "@" stays, for the next word.
    expect(withoutMention("What does @budg", { start: 10, query: "budg" }, 15)).toEqual({ text: "What does ", caret: 10 });
    // A name with a space typed after it, then picked: still one.
    expect(withoutMention("What does @budget ", { start: 10, query: "budget " }, 18)).toEqual({ text: "What does ", caret: 10 });
    // Picked in the middle: the words on both sides keep one space between them.
    expect(withoutMention("Compare @bud  and this", { start: 8, query: "bud" }, 12).text).toBe("Compare and this");
  });
});
