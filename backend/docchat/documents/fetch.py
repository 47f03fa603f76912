"""Documents from a URL, fetched by the server with an upload's limits.

A server that fetches what users name can be turned against its own network (SSRF): asked for
`http://169.254.169.254/` or an intranet admin page, it would read what the user cannot. So
only http(s) is fetched, every address the host resolves to must be public (not private,
loopback, link-local, multicast or reserved), the address actually connected to is checked
again (a DNS answer that changes between the check and the connection gains nothing), every
redirect is checked the same way, proxies from the environment are ignored, and the body is
capped at the upload limit and the whole fetch at `URL_FETCH_TIMEOUT_SECONDS`. An
administrator may allow named hosts (`URL_FETCH_ALLOWED_HOSTS`), such as an intranet wiki.
Before any of that, an address with a malformed host, port or user part, given or redirected
to, is refused as not valid (`documents.url_hosts`), and the host is resolved in the IDNA
form httpx connects to.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import tempfile
from dataclasses import dataclass
from datetime import date
from pathlib import PurePosixPath
from typing import BinaryIO, cast
from urllib.parse import unquote

import httpx
import idna

from docchat.config import UrlFetchSettings
from docchat.documents.url_hosts import invalid_address, resolvable_host
from docchat.extraction.dates import http_date
from docchat.kit.errors import BadRequest, PayloadTooLarge, UpstreamError, UpstreamTimeout

USER_AGENT = "docchat (document fetch)"
# Kept in memory up to this size, then spilled to a temporary file.
SPOOL_BYTES = 1024 * 1024
SUFFIX_FOR_TYPE = {
    "text/html": ".html",
    "application/xhtml+xml": ".html",
    "application/pdf": ".pdf",
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/csv": ".csv",
}
DISPOSITION_NAME = re.compile(r"""filename\*?=(?:UTF-8'')?["']?([^"';]+)""", re.IGNORECASE)


@dataclass
class Fetched:
    filename: str
    body: BinaryIO  # positioned at the start
    url: str = ""  # where it was found, after redirects
    media_type: str = ""  # as the server declared it (no parameters)
    # When the server says it last changed (`Last-Modified`), if it does.
    modified: date | None = None


class NotThere(BadRequest):
    """The server says the page is not there (404 or 410)."""


def is_public_address(address: str) -> bool:
    """Whether `address` (an IP) is one users may have the server connect to."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def _refused(host: str) -> BadRequest:
    return BadRequest(
        f"{host} is on a private, loopback or link-local network, which documents are not "
        "fetched from; an administrator can allow the host (URL_FETCH_ALLOWED_HOSTS)"
    )


def _checked_host(url: httpx.URL) -> str:
    """The ASCII (IDNA) host of a well-formed http(s) `url`, the one httpx connects to."""
    if url.scheme not in ("http", "https"):
        raise BadRequest("Only http:// and https:// addresses can be fetched")
    return resolvable_host(url)


async def _check_host(url: httpx.URL, allowed: set[str]) -> None:
    host = _checked_host(url)
    if url.host in allowed:
        return
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, url.port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise BadRequest(f"The host {url.host} could not be found") from exc
    if not infos or not all(is_public_address(str(info[4][0])) for info in infos):
        raise _refused(url.host)


def _check_peer(response: httpx.Response, url: httpx.URL, allowed: set[str]) -> None:
    """The address the connection really went to (DNS can change its answer)."""
    if url.host in allowed:
        return
    stream = response.extensions.get("network_stream")
    peer = stream.get_extra_info("server_addr") if stream is not None else None
    if not peer or not is_public_address(str(peer[0])):
        raise _refused(url.host)


def _filename(url: httpx.URL, response: httpx.Response) -> str:
    disposition = DISPOSITION_NAME.search(response.headers.get("content-disposition", ""))
    name = unquote(disposition.group(1)) if disposition else ""
    if not name:
        name = unquote(PurePosixPath(url.path).name) or url.host
    media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    suffix = SUFFIX_FOR_TYPE.get(media_type)
    if suffix and PurePosixPath(name.lower()).suffix not in (suffix, ".htm"):
        name += suffix
    return name


async def _read_body(response: httpx.Response, max_bytes: int) -> BinaryIO:
    limit_mb = max_bytes // (1024 * 1024)
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise PayloadTooLarge(f"The document is larger than the limit of {limit_mb} MB")
    body = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - handed on
    size = 0
    try:
        async for piece in response.aiter_bytes():
            size += len(piece)
            if size > max_bytes:
                raise PayloadTooLarge(f"The document is larger than the limit of {limit_mb} MB")
            body.write(piece)
    except BaseException:
        body.close()
        raise
    body.seek(0)
    return cast(BinaryIO, body)


def _parsed(raw_url: str) -> httpx.URL:
    try:
        return httpx.URL(raw_url)
    except httpx.InvalidURL as exc:
        raise invalid_address(str(exc)) from exc


async def _send(client: httpx.AsyncClient, url: httpx.URL) -> httpx.Response:
    """The response to a GET of `url`, its body still to be read (close it).

    httpx works out where every redirect leads (`next_request`) while receiving it, and lets
    the IDNA error of a malformed `Location` host (`http://xn--a-/`) escape: that too is a
    malformed address, not a failure of the server."""
    try:
        return await client.send(client.build_request("GET", url), stream=True)
    except idna.IDNAError as exc:
        raise invalid_address(f"the URL redirected to a malformed host name ({exc})") from exc


def _redirect_target(url: httpx.URL, location: str) -> httpx.URL:
    try:
        return url.join(location)
    except httpx.InvalidURL as exc:
        raise invalid_address(f"the URL redirected to a malformed address ({exc})") from exc


async def _follow(
    client: httpx.AsyncClient, url: httpx.URL, settings: UrlFetchSettings, max_bytes: int
) -> Fetched:
    allowed = {host.lower() for host in settings.allowed_hosts}
    for _ in range(settings.max_redirects + 1):
        await _check_host(url, allowed)
        response = await _send(client, url)
        try:
            _check_peer(response, url, allowed)
            if response.is_redirect and "location" in response.headers:
                url = _redirect_target(url, response.headers["location"])
                continue
            if response.status_code in (404, 410):
                raise NotThere(f"The server answered {response.status_code} for that URL")
            if response.status_code >= 400:
                raise BadRequest(f"The server answered {response.status_code} for that URL")
            media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
            body = await _read_body(response, max_bytes)
            modified = http_date(response.headers.get("last-modified"))
            return Fetched(_filename(url, response), body, str(url), media_type, modified)
        finally:
            await response.aclose()
    raise BadRequest(f"The URL redirected more than {settings.max_redirects} times")


async def fetch(raw_url: str, settings: UrlFetchSettings, max_bytes: int) -> Fetched:
    """The document at `raw_url`, within the limits above (400, 413, 502 or 504 otherwise)."""
    url = _parsed(raw_url.strip())
    timeout = httpx.Timeout(settings.timeout_seconds)
    headers = {"User-Agent": USER_AGENT}
    try:
        async with (
            httpx.AsyncClient(timeout=timeout, headers=headers, trust_env=False) as client,
            asyncio.timeout(settings.timeout_seconds),
        ):
            return await _follow(client, url, settings, max_bytes)
    except (TimeoutError, httpx.TimeoutException) as exc:
        raise UpstreamTimeout(
            f"Fetching the URL took longer than {settings.timeout_seconds:g} s"
        ) from exc
    except httpx.HTTPError as exc:
        raise UpstreamError(f"The URL could not be fetched ({type(exc).__name__})") from exc


async def check_reachable_address(raw_url: str, settings: UrlFetchSettings) -> None:
    """Refuse (400) an http(s) address that the server must not be sent to by a user (a
    private network, unless its host is in URL_FETCH_ALLOWED_HOSTS): for services a source
    talks to with its own client, such as an S3 endpoint."""
    await _check_host(_parsed(raw_url.strip()), set(settings.allowed_hosts))
