// The app's pages as addresses: a chat has its own URL, so reload, Back and links work.
// The server answers these paths with index.html (backend/docchat/web_app.py, APP_PAGES).
import { useCallback, useEffect, useState } from "react";

export type Route =
  | { page: "chat"; chatId: string | null }
  | { page: "admin" }
  | { page: "account" }
  | { page: "collections" };

const CHAT_PATH = /^\/chats\/([0-9a-fA-F-]{36})\/?$/;
const PAGES = ["admin", "account", "collections"] as const;

export function parseRoute(pathname: string): Route {
  const chat = CHAT_PATH.exec(pathname);
  if (chat) return { page: "chat", chatId: chat[1] ?? null };
  const name = pathname.replace(/^\/|\/$/g, "");
  const page = PAGES.find((candidate) => candidate === name);
  return page ? { page } : { page: "chat", chatId: null };
}

export function routePath(route: Route): string {
  if (route.page !== "chat") return `/${route.page}`;
  return route.chatId ? `/chats/${route.chatId}` : "/";
}

export type Navigate = (route: Route, options?: { replace?: boolean }) => void;

/** The current route, following Back and Forward, and a way to go elsewhere. */
export function useRoute(): [Route, Navigate] {
  const [route, setRoute] = useState(() => parseRoute(window.location.pathname));

  useEffect(() => {
    const onPopState = () => setRoute(parseRoute(window.location.pathname));
    window.addEventListener("popstate", onPopState);
    return () => window.removeEventListener("popstate", onPopState);
  }, []);

  const navigate = useCallback<Navigate>((next, options) => {
    const path = routePath(next);
    if (path !== window.location.pathname) {
      if (options?.replace) window.history.replaceState(null, "", path);
      else window.history.pushState(null, "", path);
    }
    setRoute(next);
  }, []);

  return [route, navigate];
}
