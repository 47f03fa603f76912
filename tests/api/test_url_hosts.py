"""Documents from a URL whose host, port or user part is malformed: a 400 that says the address
is not valid, never a 500 (security issue: `http://a..b/` and `http://xn--a-/` crashed the
resolver). Well-formed hosts, IDN ones included, behave as before."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import pytest_asyncio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from docchat.config import UrlFetchSettings
from docchat.main.app import attach_components, create_app
from docchat.main.components import Components
from tests.support.llm_server import LoopbackServer, free_port
from tests.support.users import auth_headers

MALFORMED = [
    "http://a..b/",  # empty label
    "http://.example.com/",
    "http://example.com../",
    "http://./",  # a lone dot
    "http://../",
    f"http://{'a' * 64}.example/",  # label over 63 characters
    f"http://{'.'.join(['a' * 60] * 5)}/",  # name over 253 characters
    "http://xn--a-/",  # invalid punycode
    "http://xn--/",
    "http://www.xn--a-.example/",
    "http://xn--ls8h.example/",  # punycode of a code point IDNA 2008 disallows
    "http://\u2488.example/",  # invalid IDNA
    "http://a\u200db.example/",
    "http://a_b.example/",  # underscore
    "http://a b.example/",  # space
    "http://a%2eb.example/",  # escapes in the host
    "http://-a.example/",  # hyphen at an end of a label
    "http://1.2.3.4.5/",  # numbers that are no IPv4 address
    "http://0x7f.1/",
    "http://example.com:99999/",  # bad ports
    "http://example.com:-1/",
    "http://example.com:0/",
    "http://example.com:abc/",
    "http://user@127.0.0.1@example.com/",  # user part hiding the host
    "http://user:secret@example.com/",
    "http://[::1/",  # unbalanced IPv6 brackets
    "http://::1]/",
    "http://[::1]]/",
    "http://[/",
    "http://[zz]/",
    "http:///path",  # no host
    "http://:80/",
]


async def _add(client: httpx.AsyncClient, headers: dict[str, str], url: str) -> httpx.Response:
    return await client.post("/api/v1/documents/from-url", headers=headers, json={"url": url})


@pytest.mark.parametrize("url", MALFORMED)
async def test_a_malformed_address_is_refused_as_not_valid(
    client: httpx.AsyncClient, url: str
) -> None:
    headers = await auth_headers(client)
    response = await _add(client, headers, url)
    assert response.status_code == 400, response.text
    detail = response.json()["detail"]
    assert detail.startswith("That address is not valid: "), detail
    assert "/work" not in detail and "site-packages" not in detail and ".py" not in detail
    assert (await client.get("/api/v1/documents", headers=headers)).json()["total"] == 0


@pytest.mark.parametrize("url", ["http://bücher.example/", "http://xn--bcher-kva.example/"])
async def test_an_idn_host_is_converted_and_then_held_to_the_usual_rules(
    client: httpx.AsyncClient, url: str
) -> None:
    headers = await auth_headers(client)
    response = await _add(client, headers, url)
    assert response.status_code == 400, response.text
    detail = response.json()["detail"]
    assert "bücher.example" in detail
    assert "could not be found" in detail or "private, loopback or link-local" in detail


class RedirectingSite:
    """A loopback web server with a page and a redirect to whatever `?to=` names."""

    def __init__(self) -> None:
        self.port = free_port()
        routes = [Route("/page", self._page), Route("/redirect", self._redirect)]
        self._server = LoopbackServer(Starlette(routes=routes), self.port, "the redirecting site")

    async def _page(self, _: Request) -> Response:
        return HTMLResponse(
            b"<html><body><h1>Harbour</h1><p>Ferries leave hourly.</p></body></html>"
        )

    async def _redirect(self, request: Request) -> Response:
        return RedirectResponse(request.query_params["to"])

    def stop(self) -> None:
        self._server.stop()


@pytest.fixture(scope="module")
def site() -> Iterator[RedirectingSite]:
    server = RedirectingSite()
    yield server
    server.stop()


@pytest_asyncio.fixture
async def fetching(components: Components) -> AsyncIterator[httpx.AsyncClient]:
    """A client of an app that allows fetching from the host `localhost` (by name)."""
    fetch_settings = UrlFetchSettings(
        _env_file=None,  # type: ignore[call-arg]
        allowed_hosts=["localhost"],
        timeout_seconds=2,
    )
    settings = components.settings.model_copy(update={"url_fetch": fetch_settings})
    app = create_app(settings, run_worker=False)
    attach_components(app, dataclasses.replace(components, settings=settings))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://docchat.test") as client:
        yield client


async def test_a_well_formed_host_name_is_fetched_as_before(
    fetching: httpx.AsyncClient, site: RedirectingSite
) -> None:
    headers = await auth_headers(fetching)
    added = await _add(fetching, headers, f"http://LocalHost:{site.port}/page")
    assert added.status_code == 202, added.text
    assert added.json()["filename"] == "page.html"


@pytest.mark.parametrize(
    ("target", "status", "fragment"),
    [
        ("http://a..b/", 400, "That address is not valid: "),
        ("http://xn--a-/", 400, "That address is not valid: "),
        ("http://localhost:99999/", 400, "That address is not valid: "),
        ("http://user@localhost/", 400, "That address is not valid: "),
        # httpx itself refuses a Location it cannot parse: the server misbehaved.
        ("http://[zz]/", 502, "The URL could not be fetched"),
    ],
)
async def test_a_redirect_to_a_malformed_address_is_refused(
    fetching: httpx.AsyncClient, site: RedirectingSite, target: str, status: int, fragment: str
) -> None:
    headers = await auth_headers(fetching)
    url = httpx.URL(f"http://localhost:{site.port}/redirect", params={"to": target})
    response = await _add(fetching, headers, str(url))
    assert response.status_code == status, response.text
    assert response.json()["detail"].startswith(fragment)
