"""Whether a URL names its host, port and user the way DNS and HTTP can, checked before
anything is resolved (documents.fetch).

httpx turns a non-ASCII host into its IDNA (ASCII) form and refuses one it cannot convert,
but it lets through ASCII hosts that no resolver takes (`a..b`, `xn--a-`, a label of 64
characters) and ports outside 1-65535. Those are refused here with a 400 that says the address
is not valid, rather than failing later inside the resolver. The rules:

- one trailing dot is allowed (an absolute name: `example.com.`); no other label is empty;
- a label has at most 63 characters and the name at most 253;
- an `xn--` label must be valid punycode of a valid IDNA 2008 label (checked by `idna`);
  any other label holds only letters, digits and hyphens and neither starts nor ends with a
  hyphen (RFC 1123), so underscores, spaces, `%` escapes and brackets are refused;
- a name whose last label is a number must be a dotted-quad IPv4 address (`1.2.3.4.5` and
  `0x7f.1` are not);
- IPv6 literals are taken as httpx validated them (brackets balanced, address well formed);
- a port, when given, is 1-65535; a user name or password (`user@host`) is refused, since
  it would hide the real host from a reader (`http://trusted@evil.example/`).
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import unquote

import httpx
import idna

from docchat.kit.errors import BadRequest

MAX_NAME_CHARS = 253
MAX_LABEL_CHARS = 63
MAX_PORT = 65535
ACE_PREFIX = "xn--"
LDH_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?", re.ASCII | re.IGNORECASE)
NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*", re.ASCII | re.IGNORECASE)


def invalid_address(reason: str) -> BadRequest:
    return BadRequest(f"That address is not valid: {reason}")


def resolvable_host(url: httpx.URL) -> str:
    """The ASCII host to resolve for an absolute http(s) `url` (the IDNA form httpx connects
    to), or a 400 when its host, port or user part is malformed."""
    _check_no_userinfo(url)
    _check_port(url.port)
    host = url.raw_host.decode("ascii")
    if not host:
        raise invalid_address("it has no host name")
    if ":" in host:
        return _checked_ipv6(host)
    _check_name(host.removesuffix("."))
    return host


def _check_no_userinfo(url: httpx.URL) -> None:
    if url.userinfo:
        raise invalid_address("addresses with a user name or password (user@host) are not fetched")


def _check_port(port: int | None) -> None:
    if port is not None and not 1 <= port <= MAX_PORT:
        raise invalid_address(f"the port must be a number from 1 to {MAX_PORT}")


def _checked_ipv6(host: str) -> str:
    try:
        ipaddress.IPv6Address(unquote(host))
    except ValueError as exc:
        raise invalid_address("the IPv6 address is not well formed") from exc
    return host


def _check_name(name: str) -> None:
    if "[" in unquote(name) or "]" in unquote(name):
        raise invalid_address(
            "brackets belong only around a whole IPv6 address, like [2001:db8::1]"
        )
    if len(name) > MAX_NAME_CHARS:
        raise invalid_address(f"the host name is longer than {MAX_NAME_CHARS} characters")
    labels = name.split(".")
    for label in labels:
        _check_label(label)
    if NUMERIC_LABEL.fullmatch(labels[-1]):
        _check_ipv4(name)


def _check_label(label: str) -> None:
    if not label:
        raise invalid_address("the host name has an empty part (two dots in a row, or a dot first)")
    if len(label) > MAX_LABEL_CHARS:
        raise invalid_address(
            f"a part of the host name is longer than {MAX_LABEL_CHARS} characters"
        )
    if label.lower().startswith(ACE_PREFIX):
        _check_ace_label(label)
    elif not LDH_LABEL.fullmatch(label):
        raise invalid_address(
            "a host name holds only letters, digits, hyphens and dots, and no part of it "
            "starts or ends with a hyphen"
        )


def _check_ace_label(label: str) -> None:
    """An `xn--` label: valid punycode of a valid IDNA 2008 label, in its canonical form."""
    try:
        idna.ulabel(label)
    except idna.IDNAError as exc:
        raise invalid_address(
            f"{label!r} is not a valid internationalised (IDNA) name ({exc})"
        ) from exc


def _check_ipv4(name: str) -> None:
    try:
        ipaddress.IPv4Address(name)
    except ValueError as exc:
        raise invalid_address(
            "a host name ending in a number must be an IPv4 address like 192.0.2.1"
        ) from exc
