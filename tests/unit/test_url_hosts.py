"""The host a URL is resolved by (documents.url_hosts): the IDNA form httpx connects to."""

from __future__ import annotations

import httpx
import pytest

from docchat.documents.url_hosts import resolvable_host
from docchat.kit.errors import BadRequest


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://bücher.example/", "xn--bcher-kva.example"),
        ("http://faß.de/", "xn--fa-hia.de"),  # IDNA 2008, not the older codec's fass.de
        ("https://Example.COM:8443/a", "example.com"),
        ("http://example.com./", "example.com."),  # one trailing dot: an absolute name
        ("http://r3---sn-abc.example/", "r3---sn-abc.example"),  # hyphens, no IDNA prefix
        ("http://192.0.2.1/", "192.0.2.1"),
        ("http://[2001:db8::1]:8080/", "2001:db8::1"),
        (f"http://{'a' * 63}.example/", f"{'a' * 63}.example"),
    ],
)
def test_well_formed_hosts_resolve_in_their_ascii_form(url: str, host: str) -> None:
    assert resolvable_host(httpx.URL(url)) == host


@pytest.mark.parametrize("url", ["http://a..b/", "http://xn--a-/", "http://a_b/", "http://x:0/"])
def test_malformed_hosts_are_a_bad_request(url: str) -> None:
    with pytest.raises(BadRequest, match="That address is not valid"):
        resolvable_host(httpx.URL(url))
