"""A website as a source: the pages (and linked documents) of one site below a path, found in
its sitemap or by following links from a start page.

Every request goes through `documents.fetch`, the same rules as adding a URL: http(s) only,
no private network unless its host is allowed (URL_FETCH_ALLOWED_HOSTS), every redirect and the
address connected to checked, the body capped at the upload limit. The site's robots.txt is
honoured (for the user agent docchat, with its crawl delay up to 10 s), and the crawl stays on
the start page's host and below its folder (or `path_prefix`), up to `max_pages`.

A page's version is its `lastmod` in the sitemap when it gives one (nothing is fetched for an
unchanged page then), else the SHA-256 of its body, which the listing fetched anyway to find
links: the bodies are kept until the sync ends, so reading an item fetches nothing more. A page
the server says is gone (404, 410) is not listed, so its document goes; one that fails for
another reason (5xx, a timeout) is listed as unavailable, so the sync keeps its document and
says why.

A sitemap is read within bounds (SOURCES_SITEMAP_MAX_BYTES for each file,
SOURCES_SITEMAP_MAX_ENTRIES for all of them together; past either the sync fails and says
which), and parsed in a thread, as robots.txt and pages are: a site's files never hold up the
event loop that answers everyone else.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import BinaryIO
from urllib.parse import urldefrag, urljoin, urlsplit
from urllib.robotparser import RobotFileParser
from xml.parsers import expat

from docchat.config import UrlFetchSettings
from docchat.documents.fetch import Fetched, NotThere, fetch
from docchat.documents.storage import ByteSource, FileSource
from docchat.extraction.dates import iso_date
from docchat.kit.errors import DocchatError, PayloadTooLarge
from docchat.sources.port import Connector, Setting, SettingType, SourceError, SourceItem

AGENT = "docchat"
MAX_CRAWL_DELAY = 10.0
UNAVAILABLE = "unavailable:"
HTML_TYPES = {"text/html", "application/xhtml+xml"}
SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
READ_BYTES = 64 * 1024


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.hrefs.append(href)


def _links(body: bytes, base: str) -> list[str]:
    parser = _Links()
    with contextlib.suppress(Exception):  # a malformed page gives the links read so far
        parser.feed(body.decode("utf-8", "replace"))
    return [urldefrag(urljoin(base, href))[0] for href in parser.hrefs]


def _digest(fetched: Fetched, html: bool) -> tuple[int, str, list[str]]:
    """The body's size and SHA-256, and its links when it is a page; the body is left at its
    start, to be read again."""
    data = fetched.body.read()
    fetched.body.seek(0)
    links = _links(data, fetched.url) if html else []
    return len(data), hashlib.sha256(data).hexdigest(), links


@dataclass
class _Sitemap:
    """What one sitemap file holds: the sitemaps it names (an index) and its pages."""

    sitemaps: list[str] = field(default_factory=list)
    pages: list[tuple[str, str | None]] = field(default_factory=list)  # (url, lastmod)
    entries: int = 0


class _SitemapReader:
    """Reads a sitemap through expat's callbacks (in C, 64 KB at a time), keeping nothing but
    the entry being read: no tree grows, whatever else the file holds. A sitemap has no DTD:
    expat reports one before any entity in it could be expanded, in any encoding (UTF-16
    included), and it is refused there."""

    def __init__(self, room: int, inside: Callable[[str], bool]) -> None:
        self.found, self.room, self.inside = _Sitemap(), room, inside
        self.entry: str | None = None  # "url" or "sitemap" while one is read
        self.field: str | None = None  # "loc" or "lastmod" while one is read
        self.texts: dict[str, list[str]] = {}

    def read(self, body: BinaryIO) -> _Sitemap:
        parser = expat.ParserCreate(namespace_separator="}")
        parser.StartDoctypeDeclHandler = self._refuse_dtd
        parser.EntityDeclHandler = self._refuse_dtd
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        parser.CharacterDataHandler = self._text
        while chunk := body.read(READ_BYTES):
            parser.Parse(chunk, False)
        parser.Parse(b"", True)
        return self.found

    @staticmethod
    def _refuse_dtd(*_: object) -> None:
        raise SourceError("its sitemap declares a DTD, which a sitemap never needs")

    def _start(self, name: str, _attributes: object) -> None:
        tag = _sitemap_tag(name)
        if tag in ("url", "sitemap") and self.entry is None:
            self.entry, self.texts = tag, {}
        elif tag in ("loc", "lastmod") and self.entry is not None and self.field is None:
            self.field = tag
            self.texts[tag] = []

    def _text(self, text: str) -> None:
        if self.field is not None:
            self.texts[self.field].append(text)

    def _end(self, name: str) -> None:
        tag = _sitemap_tag(name)
        if tag is not None and tag == self.field:
            self.field = None
        elif tag is not None and tag == self.entry:
            self.entry = None
            self._add(tag, "".join(self.texts.get("loc", ())).strip(), self.texts.get("lastmod"))

    def _add(self, tag: str, location: str, lastmod: list[str] | None) -> None:
        found = self.found
        found.entries += 1
        if found.entries > self.room:
            raise SourceError(_too_many_entries(self.room))
        if tag == "sitemap" and location:
            found.sitemaps.append(location)
        elif tag == "url" and location and self.inside(location):
            found.pages.append((location, "".join(lastmod).strip() if lastmod else None))


def _sitemap_tag(name: str) -> str | None:
    """The local name of an element of the sitemap namespace ("url"), else None."""
    namespace, _, local = name.rpartition("}")
    return local if f"{{{namespace}}}" == SITEMAP_NS else None


def _parse_sitemap(body: BinaryIO, room: int, inside: Callable[[str], bool]) -> _Sitemap:
    """The entries of a sitemap, read as they come; more than `room` entries fail. It blocks:
    run it in a thread."""
    try:
        return _SitemapReader(room, inside).read(body)
    except SourceError:
        raise
    except Exception as exc:
        raise SourceError("its sitemap is not valid XML") from exc


def _too_many_entries(limit: int) -> str:
    return (
        f"its sitemaps hold more than {limit:,} entries (SOURCES_SITEMAP_MAX_ENTRIES); give a "
        "sitemap of the pages wanted, or the folder's address to follow its links"
    )


def _robots(body: BinaryIO) -> RobotFileParser:
    robots = RobotFileParser()
    robots.parse(body.read().decode("utf-8", "replace").splitlines())
    return robots


@dataclass
class _Page:
    item: SourceItem
    body: BinaryIO | None = None  # kept from the listing
    error: str | None = None  # why it could not be fetched (the item is then unavailable)


class WebsiteSource:
    def __init__(
        self,
        url: str,
        fetch_settings: UrlFetchSettings,
        max_bytes: int,
        *,
        max_pages: int = 200,
        path_prefix: str | None = None,
        sitemap_max_bytes: int = 20 * 1024 * 1024,
        sitemap_max_entries: int = 50_000,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SourceError("a website source needs an http:// or https:// address")
        self.start = url
        self.host = parts.netloc.lower()
        self.scheme = parts.scheme
        self.prefix = path_prefix or parts.path[: parts.path.rfind("/") + 1] or "/"
        self.fetch_settings = fetch_settings
        self.max_bytes = max_bytes
        self.max_pages = max_pages
        self.sitemap = parts.path.endswith(".xml")
        self.sitemap_max_bytes = sitemap_max_bytes
        self.sitemap_max_entries = sitemap_max_entries
        self._pages: dict[str, _Page] = {}
        self._robots: RobotFileParser | None = None

    @classmethod
    def from_settings(cls, settings: Mapping[str, str]) -> WebsiteSource:
        allowed = [host for host in settings.get("fetch_allowed_hosts", "").split(",") if host]
        fetch_settings = UrlFetchSettings(  # type: ignore[call-arg]
            _env_file=None,
            allowed_hosts=allowed,
            timeout_seconds=float(settings.get("fetch_timeout_seconds", "30")),
            max_redirects=int(settings.get("fetch_max_redirects", "5")),
        )
        try:
            max_pages = int(settings.get("max_pages", "200"))
        except ValueError as exc:
            raise SourceError("max_pages must be a whole number") from exc
        limit = int(settings.get("max_items", "50000"))
        if not 1 <= max_pages <= limit:
            raise SourceError(f"max_pages must be between 1 and {limit} (SOURCES_MAX_ITEMS)")
        return cls(
            settings.get("url", ""),
            fetch_settings,
            int(settings.get("max_bytes", str(50 * 1024 * 1024))),
            max_pages=max_pages,
            path_prefix=settings.get("path_prefix") or None,
            sitemap_max_bytes=int(settings.get("sitemap_max_bytes", str(20 * 1024 * 1024))),
            sitemap_max_entries=int(settings.get("sitemap_max_entries", "50000")),
        )

    # -- fetching ------------------------------------------------------------------------------

    async def _get(self, url: str, max_bytes: int | None = None) -> Fetched:
        return await fetch(url, self.fetch_settings, max_bytes or self.max_bytes)

    async def _read_robots(self) -> RobotFileParser:
        try:
            fetched = await self._get(f"{self.scheme}://{self.host}/robots.txt")
        except NotThere:
            robots = RobotFileParser()
            robots.parse([])  # none: everything may be fetched
            return robots
        except DocchatError as exc:
            raise SourceError(f"its robots.txt could not be read: {exc.message}") from exc
        with fetched.body:
            return await asyncio.to_thread(_robots, fetched.body)

    def _key(self, url: str) -> str:
        """An item's key: its path below the folder (with its query), "./" for the folder."""
        parts = urlsplit(url)
        relative = parts.path[len(self.prefix) :] or "./"
        return f"{relative}?{parts.query}" if parts.query else relative

    def _url(self, key: str) -> str:
        return f"{self.scheme}://{self.host}{self.prefix}{'' if key == './' else key}"

    def _inside(self, url: str) -> bool:
        parts = urlsplit(url)
        return (
            parts.scheme in ("http", "https")
            and parts.netloc.lower() == self.host
            and (parts.path or "/").startswith(self.prefix)
        )

    async def _visit(self, url: str) -> tuple[_Page | None, list[str]]:
        """The page at `url` (None when gone or outside), and the links it holds."""
        assert self._robots is not None
        if not self._robots.can_fetch(AGENT, url):
            return None, []
        try:
            fetched = await self._get(url)
        except NotThere:
            return None, []
        except DocchatError as exc:
            item = SourceItem(self._key(url), _name(url), f"{UNAVAILABLE}{exc.message}")
            return _Page(item, error=exc.message), []
        if fetched.url != url and not self._inside(fetched.url):
            fetched.body.close()
            return None, []  # redirected off the site or out of its folder
        html = fetched.media_type in HTML_TYPES
        # Reading (the body may be on disk), hashing and parsing: off the event loop.
        size, version, links = await asyncio.to_thread(_digest, fetched, html)
        key = self._key(url)
        item = SourceItem(key, fetched.filename, version, size, fetched.modified)
        page = _Page(item, fetched.body)
        return page, links

    async def _pause(self) -> None:
        assert self._robots is not None
        delay = self._robots.crawl_delay(AGENT)
        if delay:
            await asyncio.sleep(min(float(delay), MAX_CRAWL_DELAY))

    # -- listing -------------------------------------------------------------------------------

    async def _crawl(self) -> AsyncIterator[SourceItem]:
        queue, seen = [self.start], {self.start}
        while queue and len(self._pages) < self.max_pages:
            url = queue.pop(0)
            page, links = await self._visit(url)
            if page is not None:
                self._pages[page.item.key] = page
                yield page.item
            for link in links:
                if link not in seen and self._inside(link):
                    seen.add(link)
                    queue.append(link)
            await self._pause()

    async def _read_sitemap(self, url: str, room: int) -> _Sitemap:
        """One sitemap file, fetched within its byte bound and parsed in a thread."""
        try:
            fetched = await self._get(url, self.sitemap_max_bytes)
        except PayloadTooLarge as exc:
            limit = self.sitemap_max_bytes
            size = f"{limit // (1024 * 1024)} MB" if limit >= 1024 * 1024 else f"{limit:,} bytes"
            raise SourceError(
                f"its sitemap is larger than {size} (SOURCES_SITEMAP_MAX_BYTES); give a "
                "smaller sitemap, or the folder's address to follow its links"
            ) from exc
        except DocchatError as exc:
            raise SourceError(f"its sitemap could not be read: {exc.message}") from exc
        with fetched.body:
            return await asyncio.to_thread(_parse_sitemap, fetched.body, room, self._inside)

    async def _sitemap_entries(self) -> list[tuple[str, str | None]]:
        """(page, lastmod) of the sitemap, and of the sitemaps a sitemap index names."""
        entries: list[tuple[str, str | None]] = []
        pending, read, counted = [self.start], 0, 0
        while pending and read < 20 and len(entries) < self.max_pages:
            sitemap = await self._read_sitemap(pending.pop(0), self.sitemap_max_entries - counted)
            read += 1
            counted += sitemap.entries
            pending.extend(sitemap.sitemaps)
            entries.extend(sitemap.pages)
        return entries[: self.max_pages]

    async def _from_sitemap(self) -> AsyncIterator[SourceItem]:
        assert self._robots is not None
        for url, lastmod in await self._sitemap_entries():
            if not self._robots.can_fetch(AGENT, url):
                continue
            if lastmod:  # trusted: the page is fetched only when it is read
                version = f"lastmod:{lastmod}"
                item = SourceItem(self._key(url), _name(url), version, modified=iso_date(lastmod))
                self._pages[item.key] = _Page(item)
                yield item
                continue
            page, _ = await self._visit(url)
            if page is not None:
                self._pages[page.item.key] = page
                yield page.item
            await self._pause()

    async def items(self) -> AsyncIterator[SourceItem]:
        self.close()
        self._robots = await self._read_robots()
        listing = self._from_sitemap() if self.sitemap else self._crawl()
        async for item in listing:
            yield item

    # -- reading -------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def open(self, item: SourceItem) -> AsyncIterator[ByteSource]:
        page = self._pages.get(item.key)
        if page is not None and page.error is not None:
            raise SourceError(f"the page could not be fetched: {page.error}")
        if page is not None and page.body is not None:
            page.body.seek(0)
            yield FileSource(page.body)
            return
        try:
            fetched = await self._get(self._url(item.key))
        except DocchatError as exc:
            raise SourceError(f"the page could not be fetched: {exc.message}") from exc
        with fetched.body:
            yield FileSource(fetched.body)

    def close(self) -> None:
        """Let go of the bodies the listing kept."""
        for page in self._pages.values():
            if page.body is not None:
                page.body.close()
        self._pages = {}


def _name(url: str) -> str:
    path = urlsplit(url).path.rstrip("/")
    return path.rsplit("/", 1)[-1] or urlsplit(url).netloc


WEBSITE = Connector(
    WebsiteSource.from_settings,
    "Website",
    (
        Setting(
            "url",
            "Start page or sitemap",
            help="the pages below its folder are taken",
            placeholder="https://intranet.example.com/handbook/",
            type=SettingType.url,
            required=True,
            address=True,
        ),
        Setting("max_pages", "At most pages", placeholder="200", type=SettingType.number),
        Setting(
            "path_prefix",
            "Only pages below",
            help="a path on the site; its folder when empty",
            placeholder="/handbook/",
        ),
    ),
)
