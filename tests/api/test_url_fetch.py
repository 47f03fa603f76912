"""Documents from a URL (issue 18): fetched from a web server these tests start on loopback,
whose host the settings allow; every other private, loopback or link-local address is refused
(SSRF), redirects included, and size and time limits hold."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import pytest_asyncio

from docchat.config import UrlFetchSettings
from docchat.ingestion.worker import IngestionWorker
from docchat.main.app import attach_components, create_app
from docchat.main.components import Components
from tests.support.users import auth_headers
from tests.support.web_site import Site


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    server = Site()
    yield server
    server.stop()


@pytest_asyncio.fixture
async def fetching(
    components: Components, site: Site
) -> AsyncIterator[tuple[httpx.AsyncClient, Components]]:
    """A client of an app that allows fetching from the test site's host (127.0.0.1)."""
    settings = components.settings.model_copy(
        update={
            "url_fetch": UrlFetchSettings(
                _env_file=None,  # type: ignore[call-arg]
                allowed_hosts=["127.0.0.1"],
                timeout_seconds=2,
                max_redirects=3,
            )
        }
    )
    allowed = dataclasses.replace(components, settings=settings)
    app = create_app(settings, run_worker=False)
    attach_components(app, allowed)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://docchat.test") as client:
        yield client, allowed


async def _add(client: httpx.AsyncClient, headers: dict[str, str], url: str) -> httpx.Response:
    return await client.post("/api/v1/documents/from-url", headers=headers, json={"url": url})


async def test_a_web_page_becomes_a_document_cited_by_section(
    fetching: tuple[httpx.AsyncClient, Components], site: Site
) -> None:
    client, components = fetching
    headers = await auth_headers(client)
    added = await _add(client, headers, f"{site.base}/timetable")
    assert added.status_code == 202, added.text
    assert added.json()["filename"] == "timetable.html"
    await IngestionWorker(components).run_until_idle()
    document_id = added.json()["id"]
    document = (await client.get(f"/api/v1/documents/{document_id}", headers=headers)).json()
    assert document["status"] == "completed" and document["content_type"] == "text/html"

    # The same page again is the same document.
    again = await _add(client, headers, f"{site.base}/timetable")
    assert again.status_code == 200 and again.json()["id"] == document_id

    # With no date of its own, a page is dated by the server's Last-Modified, if it gives one.
    assert document["document_date"] is None
    dated = await _add(client, headers, f"{site.base}/dated-timetable")
    assert dated.status_code == 202 and dated.json()["document_date"] == "2023-04-01"

    # A file keeps the name the server gives it.
    report = await _add(client, headers, f"{site.base}/files/report")
    assert report.status_code == 202 and report.json()["filename"] == "annual-report.pdf"
    assert report.json()["content_type"] == "application/pdf"


@pytest.mark.parametrize(
    ("path", "status", "fragment"),
    [
        ("/huge", 413, "larger than the limit of 2 MB"),
        ("/slow", 504, "longer than 2 s"),
        ("/missing", 400, "answered 404"),
        ("/to-localhost", 400, "private, loopback or link-local"),
        ("/to-metadata", 400, "private, loopback or link-local"),
        ("/loop", 400, "redirected more than 3 times"),
    ],
)
async def test_what_the_site_serves_is_held_to_the_limits(
    fetching: tuple[httpx.AsyncClient, Components],
    site: Site,
    path: str,
    status: int,
    fragment: str,
) -> None:
    client, _ = fetching
    headers = await auth_headers(client)
    response = await _add(client, headers, f"{site.base}{path}")
    assert response.status_code == status, response.text
    assert fragment in response.json()["detail"]
    assert (await client.get("/api/v1/documents", headers=headers)).json()["total"] == 0


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/",  # loopback, not allowed by default
        "http://localhost/admin",
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata (link-local)
        "http://10.0.0.8/wiki",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://0.0.0.0/",
    ],
)
async def test_private_loopback_and_link_local_addresses_are_refused_by_default(
    client: httpx.AsyncClient, url: str
) -> None:
    headers = await auth_headers(client)
    response = await _add(client, headers, url)
    assert response.status_code == 400, response.text
    assert "private, loopback or link-local" in response.json()["detail"]


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("file:///etc/passwd", "Only http:// and https://"),
        ("ftp://example.com/file.pdf", "Only http:// and https://"),
        ("gopher://127.0.0.1:6379/_FLUSHALL", "Only http:// and https://"),
        ("not a url at all", "Only http:// and https://"),
    ],
)
async def test_only_web_addresses_are_fetched(
    client: httpx.AsyncClient, url: str, fragment: str
) -> None:
    headers = await auth_headers(client)
    response = await _add(client, headers, url)
    assert response.status_code == 400 and fragment in response.json()["detail"]
