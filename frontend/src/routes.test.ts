import { describe, expect, it } from "vitest";
import { parseRoute, routePath } from "./routes";

const CHAT = "0b6f1c52-6a7e-4a83-9d0c-2a1f5b7e9c10";

describe("routes", () => {
  it("reads a chat, the other pages, and anything else as a new chat", () => {
    expect(parseRoute(`/chats/${CHAT}`)).toEqual({ page: "chat", chatId: CHAT });
    expect(parseRoute("/admin")).toEqual({ page: "admin" });
    expect(parseRoute("/collections/")).toEqual({ page: "collections" });
    expect(parseRoute("/")).toEqual({ page: "chat", chatId: null });
    expect(parseRoute("/chats/not-an-id")).toEqual({ page: "chat", chatId: null });
  });

  it("writes the address each page is read back from", () => {
    for (const route of [
      { page: "chat", chatId: CHAT },
      { page: "chat", chatId: null },
      { page: "account" },
    ] as const) {
      expect(parseRoute(routePath(route))).toEqual(route);
    }
  });
});
