// docchat's offline shell. The app's own files are kept, so that it opens without a network and
// says it is offline; nothing from the API is ever kept (it is one person's, and must be fresh).
// Hashed files under /assets/ never change: kept once, served from here. Pages: the network
// first, the kept page when it cannot be reached.
// Everything under /api/ (the sign-in's redirects among it) is the server's alone: the worker
// never answers it, and where the browser can (static routing) it is not even woken for it.
const CACHE = "docchat-shell-v1";
const SHELL = "/";
const KEPT = /^\/(assets\/|favicon\.svg$|icon-\d+\.png$|manifest\.json$)/;
// The app's own pages (routes.ts; the server answers them with index.html): only these are
// the shell. Other pages of the server (/docs, the API) are never kept nor answered from here.
const APP_PAGE = /^\/((chats|shared)\/[0-9a-fA-F-]{36}|admin|account|collections)?\/?$/;
const API = /^\/api\//;

// The API straight to the network, without this worker (Chromium's static routing; where a
// browser has none, the fetch handler below leaves the API alone).
function apiRoutes(event) {
  if (typeof event.addRoutes !== "function" || typeof URLPattern !== "function") return Promise.resolve();
  try {
    const route = { condition: { urlPattern: new URLPattern({ pathname: "/api/*" }) }, source: "network" };
    return Promise.resolve(event.addRoutes([route])).catch(() => undefined);
  } catch {
    return Promise.resolve();
  }
}

self.addEventListener("install", (event) => {
  event.waitUntil(
    Promise.all([apiRoutes(event), caches.open(CACHE).then((cache) => cache.add(SHELL))]).then(() =>
      self.skipWaiting(),
    ),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) => Promise.all(names.filter((name) => name !== CACHE).map((name) => caches.delete(name))))
      // No navigation preload (and off where an earlier version of this worker turned it on):
      // it requests every navigation of the site, and the browser requests again each one the
      // worker does not answer, so the sign-in's one-time code went to the server twice.
      .then(() => self.registration.navigationPreload?.disable())
      .then(() => self.clients.claim()),
  );
});

async function page(request) {
  const cache = await caches.open(CACHE);
  try {
    const response = await fetch(request);
    // Every page of the app is the same index.html: one copy is enough.
    if (response.ok && (response.headers.get("content-type") || "").startsWith("text/html")) {
      await cache.put(SHELL, response.clone());
    }
    return response;
  } catch (error) {
    const kept = await cache.match(SHELL);
    if (kept) return kept;
    throw error;
  }
}

async function file(request) {
  const cache = await caches.open(CACHE);
  const kept = await cache.match(request);
  if (kept) return kept;
  const response = await fetch(request);
  if (response.ok) await cache.put(request, response.clone());
  return response;
}

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin || API.test(url.pathname)) return;
  if (request.mode === "navigate" && APP_PAGE.test(url.pathname)) event.respondWith(page(request));
  else if (KEPT.test(url.pathname)) event.respondWith(file(request));
});
