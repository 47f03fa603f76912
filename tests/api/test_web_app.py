"""How the built web app is served: compression, caching, no public source maps, an icon."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from fastapi import FastAPI

from docchat.config import Settings
from docchat.main.app import attach_components, create_app
from docchat.main.components import Components
from docchat.main.web_app import APP_PAGES

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = b"export const greeting = 'hello from the bundle';\n" * 400  # ~20 kB, like a real one


def _build(folder: Path) -> None:
    (folder / "assets").mkdir(parents=True)
    (folder / "index.html").write_text(
        '<!doctype html><html><head><link rel="icon" href="/favicon.svg">'
        '<script type="module" src="/assets/index-Ab12Cd34.js"></script></head></html>'
    )
    (folder / "assets" / "index-Ab12Cd34.js").write_bytes(BUNDLE)
    (folder / "favicon.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')


async def _client_for(
    folder: Path, settings: Settings, components: Components
) -> tuple[FastAPI, httpx.AsyncClient]:
    app = create_app(settings.model_copy(update={"frontend_dir": folder}), run_worker=False)
    attach_components(app, components)
    transport = httpx.ASGITransport(app=app)
    return app, httpx.AsyncClient(transport=transport, base_url="http://test")


async def test_hashed_assets_are_compressed_and_cached_for_good_and_the_page_revalidates(
    tmp_path: Path, settings: Settings, components: Components
) -> None:
    _build(tmp_path)
    _, client = await _client_for(tmp_path, settings, components)
    async with client:
        asset = await client.get("/assets/index-Ab12Cd34.js", headers={"Accept-Encoding": "gzip"})
        assert asset.status_code == 200
        assert asset.headers["content-encoding"] == "gzip"
        assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert asset.content == BUNDLE  # httpx decodes it
        assert int(asset.headers["content-length"]) < len(BUNDLE) // 10  # sent compressed

        page = await client.get("/", headers={"Accept-Encoding": "gzip"})
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert page.headers["cache-control"] == "no-cache"
        etag = page.headers["etag"]
        again = await client.get("/", headers={"If-None-Match": etag})
        assert again.status_code == 304

        icon = await client.get("/favicon.svg")
        assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"

        # Clients that do not ask for compression get the plain file.
        plain = await client.get(
            "/assets/index-Ab12Cd34.js", headers={"Accept-Encoding": "identity"}
        )
        assert "content-encoding" not in plain.headers and plain.content == BUNDLE

        # The API is not compressed by the web app's wrapper (streams must flow as written).
        health = await client.get("/healthz", headers={"Accept-Encoding": "gzip"})
        assert "content-encoding" not in health.headers


def test_the_build_publishes_no_source_maps_and_links_an_icon() -> None:
    config = (ROOT / "frontend" / "vite.config.ts").read_text()
    assert "sourcemap: false" in config
    assert '<link rel="icon"' in (ROOT / "frontend" / "index.html").read_text()
    assert (ROOT / "frontend" / "public" / "favicon.svg").is_file()
    dist = ROOT / "frontend" / "dist"
    if dist.is_dir():  # built by the setup before the tests
        assert not list(dist.rglob("*.map"))
        assert (dist / "favicon.svg").is_file()


async def test_the_web_apps_own_addresses_load_the_app_and_other_paths_stay_not_found(
    tmp_path: Path, settings: Settings, components: Components
) -> None:
    _build(tmp_path)
    index = (tmp_path / "index.html").read_text()
    _, client = await _client_for(tmp_path, settings, components)
    async with client:
        # A reload (or a link) on a chat, or on another page of the app, gets the app.
        for path in (
            "/chats/0b6f1c52-6a7e-4a83-9d0c-2a1f5b7e9c10",
            "/admin",
            "/account",
            "/collections",
        ):
            page = await client.get(path)
            assert page.status_code == 200, path
            assert page.text == index and page.headers["cache-control"] == "no-cache"
        # Anything else is still missing: a typo, an old asset, an unknown API path.
        for path in ("/chats/not-a-chat", "/assets/index-Old.js", "/api/v1/nothing-here"):
            assert (await client.get(path)).status_code == 404, path


def test_the_service_worker_takes_the_same_pages_for_the_app_as_the_server() -> None:
    """Three places name the app's pages (routes.ts, web_app.APP_PAGES, sw.js's APP_PAGE): the
    worker must keep as the offline shell exactly what the server answers with the app."""
    source = (ROOT / "frontend" / "public" / "sw.js").read_text()
    pattern = re.search(r"const APP_PAGE = /(.+)/;", source)
    assert pattern is not None
    worker = re.compile(pattern.group(1).replace("\\/", "/"))
    for path in (
        "/",
        "/chats/0b6f1c52-6a7e-4a83-9d0c-2a1f5b7e9c10",
        "/shared/0b6f1c52-6a7e-4a83-9d0c-2a1f5b7e9c10",
        "/shared/not-a-link",
        "/admin",
        "/account/",
        "/collections",
        "/docs",
        "/chats/not-a-chat",
        "/api/v1/chats",
        "/assets/index.js",
    ):
        served = path == "/" or APP_PAGES.fullmatch(path.lstrip("/")) is not None
        assert (worker.fullmatch(path) is not None) == served, path
