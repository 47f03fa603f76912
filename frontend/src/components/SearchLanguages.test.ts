import { describe, expect, it } from "vitest";
import type { Message } from "../api/client";
import { languageName, searchLanguagesNote } from "./SearchLanguages";

describe("searchLanguagesNote", () => {
  it("names the languages a question was searched in and those searched as written", () => {
    const meta = { grounded: true, languages_searched: ["en", "de", "zh"], searched_as_written: ["it"] } as Message["meta"];
    expect(searchLanguagesNote(meta)).toEqual({
      searched: "Searched in English, German and Chinese",
      asWritten: "Italian documents were searched with the question as written: it could not be translated into that language",
    });
  });

  it("says nothing of a question searched in its own language only", () => {
    const meta = { grounded: true, languages_searched: ["en"] } as Message["meta"];
    expect(searchLanguagesNote(meta)).toEqual({ searched: null, asWritten: null });
    expect(searchLanguagesNote(null as unknown as Message["meta"])).toEqual({ searched: null, asWritten: null });
  });

  it("keeps a code it cannot name", () => {
    expect(languageName("de")).toBe("German");
    expect(languageName("not a code")).toBe("not a code");
  });
});
