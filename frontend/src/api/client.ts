// The typed API client (generated types in schema.d.ts) and the session around it.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema";
import { readSSE } from "./sse";

export type Schemas = components["schemas"];
export type User = Schemas["UserRead"];
export type Chat = Schemas["ChatRead"];
export type ChatDetail = Schemas["ChatDetail"];
export type Message = Schemas["MessageRead"];
export type Source = Schemas["Source"];
export type ResearchStep = Schemas["ResearchStep"];
export type DocumentInfo = Schemas["DocumentRead"];
export type Category = Schemas["CategoryRead"];
export type MessageOptions = Schemas["MessageOptions"];

interface Tokens {
  access_token: string;
  refresh_token: string;
}

const STORAGE_KEY = "docchat.tokens";
const listeners = new Set<(why: SessionEnd) => void>();
let refreshing: Promise<boolean> | null = null;
// Whether this tab thinks it is signed in: requests still in flight after a logout come back
// 401, and must not report that session as ended a second time.
let signedIn = false;

export function loadTokens(): Tokens | null {
  const raw = localStorage.getItem(STORAGE_KEY);
  return raw ? (JSON.parse(raw) as Tokens) : null;
}

function saveTokens(tokens: Tokens | null): void {
  signedIn = tokens !== null;
  if (tokens) localStorage.setItem(STORAGE_KEY, JSON.stringify(tokens));
  else localStorage.removeItem(STORAGE_KEY);
}

signedIn = loadTokens() !== null;

/** Keeps the token pair a password change returns (the other sessions of the account end). */
export function replaceTokens(tokens: Tokens): void {
  saveTokens(tokens);
}

/** Why a session ended: the user logged out here, or it ended elsewhere or expired. */
export type SessionEnd = "logged-out" | "ended";

/** Called when the session ends (logout, a refresh that failed, a logout in another tab):
 *  the app shows the login page, saying why when the user did not ask for it. */
export function onSessionEnd(listener: (why: SessionEnd) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function endSession(why: SessionEnd): void {
  const wasSignedIn = signedIn;
  saveTokens(null);
  if (wasSignedIn) listeners.forEach((listener) => listener(why));
}

// Another tab logged out (or the storage was cleared): this one must not go on looking signed in.
window.addEventListener("storage", (event) => {
  if ((event.key === STORAGE_KEY || event.key === null) && !loadTokens()) endSession("ended");
});

/** Ends this login on the server too, so its refresh token cannot be used again. */
export function logout(): void {
  const tokens = loadTokens();
  if (tokens) {
    void fetch("/api/v1/auth/logout", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ refresh_token: tokens.refresh_token }),
    }).catch(() => undefined);
  }
  endSession("logged-out");
}

async function refreshTokens(): Promise<boolean> {
  const tokens = loadTokens();
  if (!tokens) return false;
  const response = await fetch("/api/v1/auth/refresh", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ refresh_token: tokens.refresh_token }),
  });
  if (!response.ok) return false;
  saveTokens((await response.json()) as Tokens);
  return true;
}

function withAuth(request: Request): Request {
  const tokens = loadTokens();
  if (tokens) request.headers.set("Authorization", `Bearer ${tokens.access_token}`);
  return request;
}

/** fetch() with the bearer token; on 401 it refreshes once, quietly, then gives up and logs out. */
export async function authFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const original = new Request(input, init);
  const retry = original.clone();
  const response = await fetch(withAuth(original));
  if (response.status !== 401) return response;
  refreshing ??= refreshTokens().finally(() => (refreshing = null));
  if (!(await refreshing)) {
    endSession("ended"); // also when the tokens are gone: nothing here can sign in again
    return response;
  }
  return fetch(withAuth(retry));
}

export const api = createClient<paths>({ baseUrl: window.location.origin, fetch: authFetch });

export function errorMessage(error: unknown, fallback = "Something went wrong"): string {
  if (error && typeof error === "object" && "detail" in error) {
    const detail = (error as { detail: unknown }).detail;
    if (typeof detail === "string") return detail;
    if (Array.isArray(detail) && detail[0]?.msg) return String(detail[0].msg);
  }
  if (error instanceof Error) return error.message;
  return fallback;
}

/** What a single sign-on left in the address's fragment on its way back: a one-time ticket
 * (a refresh token, traded at once for this tab's tokens) or why it failed. */
export function signInReturn(): { ticket: string } | { error: string } | null {
  const found = /^#(login_ticket|login_error)=(.*)$/.exec(window.location.hash);
  if (!found) return null;
  // Out of the address at once: not kept in history, not copied with a link.
  history.replaceState(history.state, "", window.location.pathname + window.location.search);
  let value: string;
  try {
    value = decodeURIComponent(found[2]);
  } catch {
    return { error: "The sign-in came back damaged: sign in again." };
  }
  return found[1] === "login_ticket" ? { ticket: value } : { error: value };
}

/** Trades a sign-in's ticket for this tab's tokens (the ticket then works no more). */
export async function redeemTicket(ticket: string): Promise<boolean> {
  let response: Response;
  try {
    response = await fetch("/api/v1/auth/refresh", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ refresh_token: ticket }),
    });
  } catch {
    return false; // the server could not be reached: the ticket expires unused
  }
  if (!response.ok) return false;
  saveTokens((await response.json()) as Tokens);
  return true;
}

export async function login(email: string, password: string): Promise<void> {
  const body = new URLSearchParams({ username: email, password });
  const response = await fetch("/api/v1/auth/login", { method: "POST", body });
  const payload = await response.json();
  if (!response.ok) throw new Error(errorMessage(payload, "Login failed"));
  saveTokens(payload as Tokens);
}

export async function register(email: string, password: string): Promise<void> {
  const response = await fetch("/api/v1/auth/register", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password }),
  });
  if (!response.ok) throw new Error(errorMessage(await response.json(), "Sign-up failed"));
  try {
    await login(email, password);
  } catch {
    // Sign-up answers alike whether or not the email had an account, so say what may be true.
    throw new Error(
      "Could not log in with this email and password. If you already have an account, log in with its password instead.",
    );
  }
}

export interface StreamHandlers {
  /** The question is saved; `answerId` is the answer's, being written on the server. */
  onMeta(chatId: string, userMessage: Message, answerId: string): void;
  onSources(sources: Source[]): void;
  /** A research step as it is taken (all of them again after re-attaching). */
  onStep(step: ResearchStep): void;
  /** More of the answer's text; `position` is where the reader now is (for re-attaching). */
  onDelta(text: string, position: string | null): void;
  onDone(message: Message): void;
  onError(detail: string, status: number): void;
}

/** Reads an answer's events to the end of the response (done, error, or a cut connection). */
async function readAnswer(response: Response, handlers: StreamHandlers): Promise<void> {
  if (!response.ok || !response.body) {
    const payload = await response.json().catch(() => null);
    handlers.onError(errorMessage(payload, "The message failed"), response.status);
    return;
  }
  for await (const { event, data, id } of readSSE(response.body)) {
    // Each event's data is the schema named after it in the OpenAPI document.
    if (event === "meta") {
      const meta = JSON.parse(data) as Schemas["StreamMeta"];
      handlers.onMeta(meta.chat_id, meta.user_message, meta.assistant_message_id);
    } else if (event === "step") {
      handlers.onStep(JSON.parse(data) as ResearchStep);
    } else if (event === "sources") {
      handlers.onSources((JSON.parse(data) as Schemas["StreamSources"]).sources);
    } else if (event === "delta") {
      handlers.onDelta((JSON.parse(data) as Schemas["StreamDelta"]).text, id ?? null);
    } else if (event === "done") {
      handlers.onDone((JSON.parse(data) as Schemas["StreamDone"]).assistant_message);
    } else if (event === "error") {
      const error = JSON.parse(data) as Schemas["StreamError"];
      handlers.onError(error.detail, error.status);
    }
  }
}

/** Sends a message and reads its answer as it is written; resolves when the stream ends. The
 * answer goes on on the server if this reader goes (`followAnswer` picks it up again). */
export async function streamMessage(
  body: Schemas["MessageCreate"],
  handlers: StreamHandlers,
  signal: AbortSignal,
): Promise<void> {
  const response = await authFetch("/api/v1/messages/stream", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
  await readAnswer(response, handlers);
}

/** Reads an answer being written from `position` on (a `Last-Event-ID`: characters of it the
 * reader has), on whichever server process writes it. */
export async function followAnswer(
  answerId: string,
  position: string,
  handlers: StreamHandlers,
  signal: AbortSignal,
): Promise<void> {
  const response = await authFetch(`/api/v1/messages/${answerId}/stream`, {
    headers: { "Last-Event-ID": position },
    signal,
  });
  await readAnswer(response, handlers);
}

/** Where a reader is after `text` (the server counts characters as Unicode code points). */
export function positionAfter(text: string): string {
  return String(Array.from(text).length);
}

/** Stops an answer where it is; resolves once it is saved that far. */
export async function stopAnswer(answerId: string): Promise<void> {
  await api.POST("/api/v1/messages/{message_id}/stop", { params: { path: { message_id: answerId } } });
}

/** Uploads with progress (fetch cannot report upload progress; XMLHttpRequest can). */
/** Uploads `file`, reporting the share sent; `signal` cancels it (the promise then rejects
 * with an AbortError and the server keeps nothing). */
export function uploadDocument(
  file: File,
  url: string,
  onProgress: (fraction: number) => void,
  signal?: AbortSignal,
): Promise<DocumentInfo> {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    if (signal?.aborted) return reject(new DOMException("Upload cancelled", "AbortError"));
    signal?.addEventListener("abort", () => {
      request.abort();
      reject(new DOMException("Upload cancelled", "AbortError"));
    });
    request.open("POST", url);
    const tokens = loadTokens();
    if (tokens) request.setRequestHeader("Authorization", `Bearer ${tokens.access_token}`);
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded / event.total);
    };
    request.onload = () => {
      const payload = JSON.parse(request.responseText || "null");
      // 200: these bytes were uploaded before; the reply is that document (`duplicate`).
      if (request.status === 202 || request.status === 200) resolve(payload as DocumentInfo);
      else if (request.status === 401) {
        void refreshTokens().then((ok) =>
          ok ? uploadDocument(file, url, onProgress, signal).then(resolve, reject) : reject(new Error("Please log in again")),
        );
      } else reject(new Error(errorMessage(payload, `Upload failed (${request.status})`)));
    };
    request.onerror = () => reject(new Error("Upload failed: the server could not be reached"));
    const form = new FormData();
    form.append("file", file);
    request.send(form);
  });
}

export const DOCUMENT_GONE = "This document is no longer available to you: it was deleted, or it is no longer shared with you.";

/** Opens the original file in a new tab, at a page for PDFs (the file needs the bearer token). */
export async function openDocument(documentId: string, page: number | null): Promise<void> {
  const opened = window.open("about:blank", "_blank");
  const response = await authFetch(`/api/v1/documents/${documentId}/file`);
  if (!response.ok) {
    opened?.close();
    throw new Error(response.status === 404 ? DOCUMENT_GONE : "The document could not be opened");
  }
  const url = URL.createObjectURL(await response.blob());
  const target = page ? `${url}#page=${page}` : url;
  if (opened) opened.location.href = target;
  else window.location.assign(target);
}

/** Saves what `path` returns as a file under the server's file name: downloads need the bearer
 * token, so they are fetched, then handed to the browser. */
async function download(path: string, fallbackName: string, failure: string): Promise<void> {
  const response = await authFetch(path);
  if (!response.ok) throw new Error(failure);
  const disposition = response.headers.get("content-disposition") ?? "";
  const encoded = /filename\*=UTF-8''([^;]+)/.exec(disposition)?.[1];
  const plain = /filename="([^"]+)"/.exec(disposition)?.[1];
  const name = encoded ? decodeURIComponent(encoded) : (plain ?? fallbackName);
  const url = URL.createObjectURL(await response.blob());
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.appendChild(link);
  link.click();
  link.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Saves a chat as a file (Markdown or JSON, with sources). */
export async function downloadChat(chatId: string, format: "markdown" | "json"): Promise<void> {
  const fallback = `chat.${format === "json" ? "json" : "md"}`;
  await download(`/api/v1/chats/${chatId}/export?format=${format}`, fallback, "The chat could not be exported");
}

/** Saves everything of the signed-in person's as one zip file. */
export async function downloadMyData(): Promise<void> {
  await download("/api/v1/users/me/export", "docchat.zip", "Your data could not be downloaded");
}
