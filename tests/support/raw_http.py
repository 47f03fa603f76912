"""A hand-rolled HTTP/1.1 client for abuse tests: chunked bodies that never end, sent until the
server answers, counting how much it took in first."""

from __future__ import annotations

import select
import socket
from dataclasses import dataclass

PIECE = 256 * 1024


@dataclass(frozen=True)
class Outcome:
    status: int
    sent_bytes: int
    body: bytes


def _status(response: bytes) -> int:
    line = response.split(b"\r\n", 1)[0]
    parts = line.split()
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def _complete(data: bytes) -> bool:
    """The head and as much body as its Content-Length announces have arrived."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return False
    length = 0
    for line in data[:end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    return len(data) >= end + 4 + length


def _read_response(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    data = b""
    try:
        while not _complete(data):
            piece = sock.recv(65536)
            if not piece:
                break
            data += piece
    except (TimeoutError, ConnectionResetError):
        pass
    return data


def _outcome(response: bytes, sent: int) -> Outcome:
    header_end = response.find(b"\r\n\r\n")
    body = response[header_end + 4 :] if header_end >= 0 else b""
    return Outcome(_status(response), sent, body)


def _head(port: int, method: str, path: str, headers: dict[str, str]) -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return (head + "\r\n").encode()


def send_declaring(
    port: int,
    method: str,
    path: str,
    headers: dict[str, str],
    *,
    declared: int,
    body: bytes,
    timeout: float = 30.0,
) -> Outcome:
    """A request announcing `declared` bytes of body and sending only `body`."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(_head(port, method, path, {**headers, "Content-Length": str(declared)}))
        sock.sendall(body)
        return _outcome(_read_response(sock, timeout), len(body))


def send_endless_body(
    port: int,
    method: str,
    path: str,
    headers: dict[str, str],
    *,
    give_up_after: int,
    prefix: bytes = b"",
    timeout: float = 30.0,
) -> Outcome:
    """Send a chunked body of up to `give_up_after` bytes, stopping as soon as the server
    answers (or drops the connection); the response and how many bytes were sent by then."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    # A small send buffer, so "sent" is close to what the server actually read.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
    sent = 0
    try:
        sock.sendall(_head(port, method, path, {**headers, "Transfer-Encoding": "chunked"}))
        if prefix:
            sock.sendall(b"%x\r\n" % len(prefix) + prefix + b"\r\n")
        piece = b"%x\r\n" % PIECE + b"a" * PIECE + b"\r\n"
        answered = False
        while sent < give_up_after:
            answered = bool(select.select([sock], [], [], 0)[0])
            if answered:
                break
            sock.sendall(piece)
            sent += PIECE
        if not answered:
            sock.sendall(b"0\r\n\r\n")  # the body ends: a server that waited for it answers now
    except (BrokenPipeError, ConnectionResetError):
        pass
    response = _read_response(sock, timeout)
    sock.close()
    return _outcome(response, sent)
