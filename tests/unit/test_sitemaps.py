"""A website source's sitemap parser: entries as they come, within its bound, and no DTD."""

from __future__ import annotations

import io
import tracemalloc

import pytest

from docchat.sources.port import SourceError
from docchat.sources.website import _parse_sitemap

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def _urlset(*locations: str) -> bytes:
    urls = "".join(f"<url><loc>{location}</loc></url>" for location in locations)
    return f'<?xml version="1.0"?><urlset xmlns="{NS}">{urls}</urlset>'.encode()


def test_pages_inside_the_folder_and_the_sitemaps_an_index_names() -> None:
    found = _parse_sitemap(
        io.BytesIO(_urlset("http://a/docs/x", "http://a/other")), 10, lambda url: "/docs/" in url
    )
    assert found.pages == [("http://a/docs/x", None)] and found.entries == 2
    index = (
        f'<sitemapindex xmlns="{NS}"><sitemap><loc>http://a/s2.xml</loc></sitemap></sitemapindex>'
    )
    assert _parse_sitemap(io.BytesIO(index.encode()), 10, bool).sitemaps == ["http://a/s2.xml"]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (_urlset(*[f"http://a/{n}" for n in range(6)]), "more than 5 entries"),
        (b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><urlset/>', "DTD"),
        (b"<urlset><url>", "not valid XML"),
        # The same DTD in UTF-16: a search for the ASCII bytes "<!DOCTYPE" missed it, and its
        # entities were expanded (a "billion laughs" file grows a hundredfold per level).
        (
            '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE x [<!ENTITY a "a">]><urlset/>'.encode(
                "utf-16"
            ),
            "DTD",
        ),
    ],
)
def test_too_many_entries_a_dtd_or_broken_xml_fail_saying_so(body: bytes, said: str) -> None:
    with pytest.raises(SourceError, match=said):
        _parse_sitemap(io.BytesIO(body), 5, bool)


def test_what_a_sitemap_holds_besides_its_entries_is_not_kept() -> None:
    """4 MB of other elements (`<a/>`) grew the process by 86 MB while they stayed in the tree;
    the reader keeps nothing but the entry it is reading."""
    filler = "<a/>" * 1_000_000
    body = f'<urlset xmlns="{NS}">{filler}<url><loc>http://a/x</loc></url></urlset>'.encode()
    tracemalloc.start()
    try:
        found = _parse_sitemap(io.BytesIO(body), 10, bool)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found.pages == [("http://a/x", None)]
    assert peak < len(body) // 4  # a fraction of the file, read 64 KB at a time
