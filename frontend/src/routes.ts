// The app's pages as addresses, from one table: a chat has its own URL, so reload, Back and
// links work. The server answers these paths with index.html (backend/docchat/main/web_app.py,
// APP_PAGES) and the service worker keeps them offline (public/sw.js, APP_PAGE); tests check
// that the three agree.
import { useCallback, useEffect, useState } from "react";

export type Route =
  | { page: "chat"; chatId: string | null }
  | { page: "shared"; shareId: string }
  | { page: "admin" }
  | { page: "account" }
  | { page: "collections" };

export type Page = Route["page"];

const ID = "([0-9a-fA-F-]{36})";

/** Each page: its address pattern (an id in the first group), the route read from it, and the
 * address written for it. The first pattern that matches wins; anything else is a new chat. */
export const ROUTES: { pattern: RegExp; read(id: string): Route; example: string }[] = [
  { pattern: /^\/?$/, read: () => ({ page: "chat", chatId: null }), example: "/" },
  {
    pattern: new RegExp(`^/chats/${ID}/?$`),
    read: (id) => ({ page: "chat", chatId: id }),
    example: "/chats/0b6f1c52-6a7e-4a83-9d0c-2a1f5b7e9c10",
  },
  {
    pattern: new RegExp(`^/shared/${ID}/?$`),
    read: (id) => ({ page: "shared", shareId: id }),
    example: "/shared/0b6f1c52-6a7e-4a83-9d0c-2a1f5b7e9c10",
  },
  { pattern: /^\/admin\/?$/, read: () => ({ page: "admin" }), example: "/admin" },
  { pattern: /^\/account\/?$/, read: () => ({ page: "account" }), example: "/account" },
  { pattern: /^\/collections\/?$/, read: () => ({ page: "collections" }), example: "/collections" },
];

export function parseRoute(pathname: string): Route {
  for (const { pattern, read } of ROUTES) {
    const match = pattern.exec(pathname);
    if (match) return read(match[1] ?? "");
  }
  return { page: "chat", chatId: null };
}

export function routePath(route: Route): string {
  switch (route.page) {
    case "chat":
      return route.chatId ? `/chats/${route.chatId}` : "/";
    case "shared":
      return `/shared/${route.shareId}`;
    default:
      return `/${route.page}`;
  }
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
