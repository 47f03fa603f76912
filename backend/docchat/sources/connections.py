"""The connections a source's own HTTP client opens (dulwich for Git, botocore for S3).

A source's address is checked when it is added and before every sync (`sync.check_addresses`),
but these clients resolve the host again when they connect: a name that answered with a public
address at the check may answer with 127.0.0.1 a moment later. So each connection they open
resolves its host once, checks every address it got (public, unless the host is in
URL_FETCH_ALLOWED_HOSTS) and connects to one of those same addresses; TLS still verifies the
certificate for the name. This holds for every host they reach, a bucket's own host name
included. A `Guard` also ends a fetch at its deadline: it shuts the connections it opened, so a
server that sends a byte a minute cannot hold a sync past it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import weakref
from collections.abc import Iterable
from typing import Any

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.util import connection as urllib3_connection

from docchat.documents.fetch import is_public_address


class AddressRefused(Exception):
    """A connection would have gone to an address users may not reach."""

    def __init__(self, host: str) -> None:
        super().__init__(
            f"{host} resolves to a private, loopback or link-local address, which sources do "
            "not read from; an administrator can allow the host (URL_FETCH_ALLOWED_HOSTS)"
        )


class Expired(Exception):
    """The guard's deadline passed: no new connection."""


class Guard:
    """The address rule and the deadline of one source's connections."""

    def __init__(self, allowed_hosts: Iterable[str], seconds: float | None = None) -> None:
        self.allowed = frozenset(host.lower() for host in allowed_hosts)
        self.seconds = seconds
        self.expired = False
        self._open: weakref.WeakSet[HTTPConnection] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def __enter__(self) -> Guard:
        if self.seconds is not None:
            self._timer = threading.Timer(self.seconds, self.expire)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, *_: object) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def expire(self) -> None:
        """Stop every connection now: a blocked read returns at once."""
        with self._lock:
            self.expired = True
            connections = list(self._open)
        for connection in connections:
            sock = connection.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def addresses(self, host: str, port: int) -> list[str]:
        """The addresses `host` resolves to, once, each checked."""
        infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
        found = list(dict.fromkeys(str(info[4][0]) for info in infos))
        if host.lower() in self.allowed:
            return found
        if not found or not all(is_public_address(address) for address in found):
            raise AddressRefused(host)
        return found

    def connect(self, connection: HTTPConnection) -> socket.socket:
        """A socket to one of the checked addresses of `connection`'s host (urllib3's errors
        for what fails, as its own `_new_conn` raises them)."""
        if self.expired:
            raise Expired()
        host = connection._dns_host  # the host urllib3 itself would resolve
        try:
            addresses = self.addresses(host, connection.port)
        except socket.gaierror as exc:
            raise NameResolutionError(connection.host, connection, exc) from exc
        failure: OSError | None = None
        for address in addresses:
            try:
                sock = urllib3_connection.create_connection(
                    (address, connection.port),
                    connection.timeout,
                    source_address=connection.source_address,
                    socket_options=connection.socket_options,
                )
            except TimeoutError as exc:
                raise ConnectTimeoutError(connection, f"Connection to {host} timed out") from exc
            except OSError as exc:
                failure = exc
                continue
            with self._lock:
                if self.expired:
                    sock.close()
                    raise Expired()
                self._open.add(connection)
            return sock
        raise NewConnectionError(connection, f"Failed to establish a new connection: {failure}")


def _pool_classes(guard: Guard) -> dict[str, type[HTTPConnectionPool]]:
    class Checked(HTTPConnection):
        def _new_conn(self) -> socket.socket:
            return guard.connect(self)

    class CheckedTls(HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            return guard.connect(self)

    class Pool(HTTPConnectionPool):
        ConnectionCls = Checked

    class TlsPool(HTTPSConnectionPool):
        ConnectionCls = CheckedTls

    return {"http": Pool, "https": TlsPool}


def pool_manager(guard: Guard, **options: Any) -> urllib3.PoolManager:
    """A urllib3 pool manager whose connections obey `guard`."""
    manager = urllib3.PoolManager(**options)
    manager.pool_classes_by_scheme = _pool_classes(guard)
    return manager


def send_through(manager: urllib3.PoolManager) -> Any:
    """A botocore `before-send` handler that sends each request through `manager` (botocore's
    own connections would resolve the host again), with botocore's errors for what fails."""
    from botocore.awsrequest import AWSResponse
    from botocore.exceptions import (
        ConnectionClosedError,
        EndpointConnectionError,
        ReadTimeoutError,
    )
    from urllib3.exceptions import ProtocolError
    from urllib3.exceptions import ReadTimeoutError as Urllib3ReadTimeout

    def send(request: Any, **_: Any) -> Any:
        try:
            response = manager.urlopen(
                request.method,
                request.url,
                body=request.body,
                headers=dict(request.headers.items()),
                retries=False,
                redirect=False,
                assert_same_host=False,
                preload_content=False,
                decode_content=False,
            )
        except (NewConnectionError, NameResolutionError, ConnectTimeoutError) as exc:
            raise EndpointConnectionError(endpoint_url=request.url, error=exc) from exc
        except Urllib3ReadTimeout as exc:
            raise ReadTimeoutError(endpoint_url=request.url, error=exc) from exc
        except ProtocolError as exc:
            raise ConnectionClosedError(
                error=exc, request=request, endpoint_url=request.url
            ) from exc
        answer = AWSResponse(request.url, response.status, response.headers, response)
        if not request.stream_output:
            answer.content  # noqa: B018 - read now, as botocore's own sender does
        return answer

    return send
