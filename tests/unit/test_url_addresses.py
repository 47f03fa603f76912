"""Which addresses a document may be fetched from (documents.fetch): public ones only."""

from __future__ import annotations

import pytest

from docchat.documents.fetch import is_public_address


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"])
def test_public_addresses_may_be_fetched(address: str) -> None:
    assert is_public_address(address)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.9",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "100.64.0.1",  # carrier-grade NAT
        "0.0.0.0",  # noqa: S104 - an address to refuse, not one to bind
        "224.0.0.1",  # multicast
        "::1",
        "fe80::1%eth0",  # link-local with a zone
        "fc00::5",  # unique local
        "::ffff:10.0.0.1",  # IPv4-mapped private
    ],
)
def test_private_loopback_link_local_and_special_addresses_are_not(address: str) -> None:
    assert not is_public_address(address)
