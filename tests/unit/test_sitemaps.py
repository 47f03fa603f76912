"""A website source's sitemap parser: entries as they come, within its bound, and no DTD."""

from __future__ import annotations

import io

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
    ],
)
def test_too_many_entries_a_dtd_or_broken_xml_fail_saying_so(body: bytes, said: str) -> None:
    with pytest.raises(SourceError, match=said):
        _parse_sitemap(io.BytesIO(body), 5, bool)
