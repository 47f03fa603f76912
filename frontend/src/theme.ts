import { useSyncExternalStore } from "react";

/** Light or dark colours: the system's choice unless the user picked one (kept per browser). */
export type ThemeChoice = "system" | "light" | "dark";

const KEY = "docchat.theme";
const DARK = "(prefers-color-scheme: dark)";

export function loadTheme(): ThemeChoice {
  const stored = localStorage.getItem(KEY);
  return stored === "light" || stored === "dark" ? stored : "system";
}

function resolved(choice: ThemeChoice): "light" | "dark" {
  if (choice !== "system") return choice;
  return window.matchMedia?.(DARK).matches ? "dark" : "light";
}

let stopFollowing: (() => void) | null = null;

/** Colour the page for `choice` (the stylesheet keys on `data-theme`); for "system", follow the
 * system's setting as it changes. */
export function applyTheme(choice: ThemeChoice): void {
  const root = document.documentElement;
  root.dataset.theme = resolved(choice);
  stopFollowing?.();
  stopFollowing = null;
  if (choice === "system" && window.matchMedia) {
    const query = window.matchMedia(DARK);
    const follow = () => (root.dataset.theme = resolved("system"));
    query.addEventListener("change", follow);
    stopFollowing = () => query.removeEventListener("change", follow);
  }
}

const listeners = new Set<() => void>();

export function saveTheme(choice: ThemeChoice): void {
  if (choice === "system") localStorage.removeItem(KEY);
  else localStorage.setItem(KEY, choice);
  applyTheme(choice);
  listeners.forEach((listener) => listener());
}

/** The user's choice, the same in every picker on the page. */
export function useThemeChoice(): ThemeChoice {
  return useSyncExternalStore((listener) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  }, loadTheme);
}
