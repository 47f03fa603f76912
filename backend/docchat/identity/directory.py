"""Checking a name and password against an LDAP directory (OpenLDAP, Active Directory).

ldap3 is synchronous: each login runs in a thread of a small pool of its own, with its own
connections, each step bounded by LDAP_TIMEOUT_SECONDS. What the person typed reaches the
directory only escaped (RFC 4515 in a filter, RFC 4514 in a DN), and an empty password is
refused before any bind: an LDAP "simple bind" with a name and no password is an anonymous
login that many servers accept.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import re
import ssl
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ldap3 import BASE, NONE, SUBTREE, Connection, Server, Tls
from ldap3.core.exceptions import LDAPException
from ldap3.utils.conv import escape_filter_chars
from ldap3.utils.dn import escape_rdn, parse_dn

from docchat.config import LdapSettings

logger = logging.getLogger(__name__)

# Entries a login search may return: two already make the name ambiguous.
SEARCH_LIMIT = 2
# Logins checked with the directory at once (each waits at most LDAP_TIMEOUT_SECONDS per step).
LOGIN_THREADS = 4
# Groups read for one person (a directory may hold thousands; docchat needs the person's own).
GROUP_LIMIT = 1000


# An entry as searched: its DN, and its attributes' raw values by lower-cased name.
Found = tuple[str, dict[str, list[bytes]]]


class DirectoryUnavailable(Exception):
    """The directory could not be reached, refused the service account, or timed out."""


class Refusal(Enum):
    unknown = "unknown"  # no such person there: another way of logging in may know them
    wrong_password = "wrong_password"  # noqa: S105


@dataclass(frozen=True)
class Person:
    """A directory entry that has just proved its password."""

    subject: str  # stable id: entryUUID / objectGUID, else the DN
    dn: str
    email: str | None
    name: str
    groups: frozenset[str] = field(default_factory=frozenset)
    # The administrator's own directory: its addresses are trusted.
    email_verified: bool = True


class Directory:
    def __init__(self, settings: LdapSettings) -> None:
        self._settings = settings
        url = settings.url or ""
        verify = ssl.CERT_REQUIRED if settings.tls_verify else ssl.CERT_NONE
        ca_file = str(settings.ca_cert_file) if settings.ca_cert_file else None
        self._server = Server(
            url,
            use_ssl=url.startswith("ldaps://"),
            tls=Tls(validate=verify, ca_certs_file=ca_file),
            connect_timeout=settings.timeout_seconds,
            get_info=NONE,
        )
        # Threads of its own: a slow directory holds up logins, not the default executor.
        self._threads = ThreadPoolExecutor(max_workers=LOGIN_THREADS, thread_name_prefix="ldap")

    async def authenticate(self, username: str, password: str) -> Person | Refusal:
        if not username.strip() or not password:
            return Refusal.wrong_password if username.strip() else Refusal.unknown
        try:
            return await asyncio.get_running_loop().run_in_executor(
                self._threads, self._authenticate, username.strip(), password
            )
        except LDAPException as exc:
            logger.warning("LDAP directory unavailable: %s", type(exc).__name__)
            raise DirectoryUnavailable(str(exc)) from exc

    def _connect(self, user: str | None, password: str | None) -> Connection | None:
        """A bound connection, or None when the directory refused these credentials."""
        connection = Connection(
            self._server,
            user=user,
            password=password,
            receive_timeout=math.ceil(self._settings.timeout_seconds),  # ldap3 packs an int
            read_only=True,
            raise_exceptions=False,
        )
        try:
            connection.open(read_server_info=False)  # unreachable: an LDAPException
            if self._settings.start_tls and not self._server.ssl and not connection.start_tls():
                raise DirectoryUnavailable("StartTLS was refused")
            if connection.bind():
                return connection
        except BaseException:
            _close(connection)
            raise
        _close(connection)
        return None

    def _authenticate(self, username: str, password: str) -> Person | Refusal:
        settings = self._settings
        if settings.bind_dn:
            service_password = (
                settings.bind_password.get_secret_value() if settings.bind_password else ""
            )
            service = self._connect(settings.bind_dn, service_password)
            if service is None:
                raise DirectoryUnavailable("The directory refused LDAP_BIND_DN and its password")
            try:
                found = self._find(service, username)
                if found is None:
                    return Refusal.unknown
                person = self._connect(found[0], password)
                if person is None:
                    return Refusal.wrong_password
                _close(person)
                return self._person(service, username, *found)
            finally:
                _close(service)
        dn = (settings.user_dn_template or "").format(username=escape_rdn(username))
        connection = self._connect(dn, password)
        if connection is None:
            # A direct bind cannot tell a stranger from a wrong password.
            return Refusal.unknown
        try:
            entry = self._read(connection, dn, BASE, "(objectClass=*)")
            if entry is None:
                return Refusal.unknown
            return self._person(connection, username, *entry)
        finally:
            _close(connection)

    def _attributes(self) -> list[str]:
        settings = self._settings
        wanted = [
            settings.email_attribute,
            settings.name_attribute,
            settings.id_attribute,
            settings.username_attribute,
        ]
        if settings.groups == "member_of":
            wanted.append(settings.member_of_attribute)
        return wanted

    def _read(
        self, connection: Connection, base: str, scope: Any, search_filter: str
    ) -> Found | None:
        _search(connection, base, search_filter, scope, self._attributes(), SEARCH_LIMIT)
        entries = _entries(connection)
        if len(entries) != 1:
            if len(entries) > 1:
                logger.warning("LDAP login name matches several entries; refused")
            return None
        return entries[0]["dn"], _lowered(entries[0]["raw_attributes"])

    def _find(self, connection: Connection, username: str) -> Found | None:
        search_filter = self._settings.user_filter.format(username=escape_filter_chars(username))
        return self._read(connection, self._settings.user_search_base, SUBTREE, search_filter)

    def _person(
        self, connection: Connection, username: str, dn: str, attributes: dict[str, list[bytes]]
    ) -> Person:
        settings = self._settings
        subject = _identifier(settings.id_attribute, attributes.get(settings.id_attribute.lower()))
        email = _first(attributes.get(settings.email_attribute.lower()))
        name = _first(attributes.get(settings.name_attribute.lower())) or ""
        return Person(
            subject=subject or dn.lower(),
            dn=dn,
            email=email.strip().lower() if email else None,
            name=name.strip()[:100],
            groups=frozenset(self._groups(connection, username, dn, attributes)),
        )

    def _groups(
        self, connection: Connection, username: str, dn: str, attributes: dict[str, list[bytes]]
    ) -> list[str]:
        settings = self._settings
        if settings.groups == "none":
            return []
        if settings.groups == "member_of":
            values = [
                value.decode() for value in attributes.get(settings.member_of_attribute.lower(), [])
            ]
            # Only groups under LDAP_GROUP_SEARCH_BASE when set: groups are known here by
            # their name, and cn=Admins of another application is not these Admins.
            base = settings.group_search_base.strip().lower()
            inside = [value for value in values if not base or value.lower().endswith("," + base)]
            return [name for name in (_group_name(value) for value in inside) if name]
        # {username}: the entry's own name (memberUid holds it exactly), not what was typed.
        own_name = _first(attributes.get(settings.username_attribute.lower())) or username
        search_filter = settings.group_filter.format(
            dn=escape_filter_chars(dn), username=escape_filter_chars(own_name)
        )
        _search(
            connection,
            settings.group_search_base,
            search_filter,
            SUBTREE,
            [settings.group_name_attribute],
            GROUP_LIMIT,
        )
        key = settings.group_name_attribute.lower()
        found = (_first(_lowered(item["raw_attributes"]).get(key)) for item in _entries(connection))
        return [name for name in found if name]


def _close(connection: Connection) -> None:
    """Unbind, and close the socket ldap3 leaves behind when its connect or TLS failed."""
    with contextlib.suppress(LDAPException):
        connection.unbind()
    if connection.socket is not None:
        connection.socket.close()


# Search results that are answers: success, and "there were more" (the caller's own limit).
ANSWERED = frozenset({0, 4})


def _search(
    connection: Connection,
    base: str,
    search_filter: str,
    scope: Any,
    attributes: list[str],
    limit: int,
) -> None:
    """A search whose failure (busy, unavailable, a wrong base) is an outage, never an empty
    answer: that would turn a known person into a stranger, and empty their groups."""
    connection.search(base, search_filter, scope, attributes=attributes, size_limit=limit)
    code = (connection.result or {}).get("result")
    if code not in ANSWERED:
        description = (connection.result or {}).get("description", code)
        raise DirectoryUnavailable(f"the directory's search failed: {description}")


def _entries(connection: Connection) -> list[dict[str, Any]]:
    return [item for item in connection.response or [] if item.get("type") == "searchResEntry"]


def _lowered(attributes: dict[str, Any]) -> dict[str, list[bytes]]:
    return {key.lower(): list(values) for key, values in attributes.items()}


def _first(values: list[bytes] | None) -> str | None:
    return values[0].decode("utf-8", errors="replace") if values else None


def _identifier(attribute: str, values: list[bytes] | None) -> str | None:
    if not values:
        return None
    raw = values[0]
    if attribute.lower() == "objectguid" and len(raw) == 16:  # Active Directory: binary
        return str(uuid.UUID(bytes_le=raw))
    return raw.decode("utf-8", errors="replace").lower()


def _group_name(dn: str) -> str | None:
    """A group's name from its DN: the value of its first part (cn=Sales,ou=groups -> Sales)."""
    try:
        first = parse_dn(dn)[0][1]
    except (LDAPException, IndexError):
        return None
    return re.sub(r"\\(.)", r"\1", first).strip()[:100] or None
