import worker from "../public/sw.js?raw";
import { describe, expect, it } from "vitest";
import { parseRoute, ROUTES, routePath } from "./routes";

const CHAT = "0b6f1c52-6a7e-4a83-9d0c-2a1f5b7e9c10";

describe("routes", () => {
  it("reads a chat, a shared chat, the other pages, and anything else as a new chat", () => {
    expect(parseRoute(`/chats/${CHAT}`)).toEqual({ page: "chat", chatId: CHAT });
    expect(parseRoute(`/shared/${CHAT}`)).toEqual({ page: "shared", shareId: CHAT });
    expect(parseRoute("/admin")).toEqual({ page: "admin" });
    expect(parseRoute("/collections/")).toEqual({ page: "collections" });
    expect(parseRoute("/")).toEqual({ page: "chat", chatId: null });
    expect(parseRoute("/chats/not-an-id")).toEqual({ page: "chat", chatId: null });
    expect(parseRoute("/shared/")).toEqual({ page: "chat", chatId: null });
  });

  it("writes the address each page is read back from", () => {
    for (const route of [
      { page: "chat", chatId: CHAT },
      { page: "chat", chatId: null },
      { page: "shared", shareId: CHAT },
      { page: "account" },
    ] as const) {
      expect(parseRoute(routePath(route))).toEqual(route);
    }
  });

  it("has every page kept offline by the service worker, and nothing else", () => {
    // The worker's pattern is checked against the server's (tests/api/test_web_app.py).
    const source = /const APP_PAGE = \/(.+)\/;/.exec(worker)?.[1] ?? "";
    const appPage = new RegExp(source);
    for (const { example } of ROUTES) expect(appPage.test(example), example).toBe(true);
    for (const other of ["/docs", "/api/v1/chats", "/shared/x", "/assets/index.js"]) expect(appPage.test(other), other).toBe(false);
  });
});
