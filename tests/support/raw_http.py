"""A hand-rolled HTTP/1.1 client for abuse tests: chunked bodies that never end, sent until the
server answers (counting how much it took in first), or on after it answered (counting how
much more it took before it closed the connection)."""

from __future__ import annotations

import select
import socket
from dataclasses import dataclass
from pathlib import Path

PIECE = 256 * 1024
# One chunk of a chunked body, built once: the senders write it in a tight loop.
CHUNK = b"%x\r\n" % PIECE + b"a" * PIECE + b"\r\n"


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


def _head(
    port: int, method: str, path: str, headers: dict[str, str], *, keep_alive: bool = False
) -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
    head += "" if keep_alive else "Connection: close\r\n"
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


# The client's send buffer (the kernel doubles it), so "sent" is close to what the server read.
SEND_BUFFER = 64 * 1024


def socket_slack() -> int:
    """How much a client may send past what the server has read: the server's receive buffer
    at its largest (Linux grows it up to the last figure of `net.ipv4.tcp_rmem`, 6 MB by
    default; a server reading slowly on a busy machine lets it fill) and the client's send
    buffer."""
    try:
        largest = int(Path("/proc/sys/net/ipv4/tcp_rmem").read_text().split()[-1])
    except (OSError, ValueError, IndexError):
        largest = 6 * 1024 * 1024
    return largest + 2 * SEND_BUFFER


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
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
    sent = 0
    try:
        sock.sendall(_head(port, method, path, {**headers, "Transfer-Encoding": "chunked"}))
        if prefix:
            sock.sendall(b"%x\r\n" % len(prefix) + prefix + b"\r\n")
        answered = False
        while sent < give_up_after:
            answered = bool(select.select([sock], [], [], 0)[0])
            if answered:
                break
            sock.sendall(CHUNK)
            sent += PIECE
        if not answered:
            sock.sendall(b"0\r\n\r\n")  # the body ends: a server that waited for it answers now
    except (BrokenPipeError, ConnectionResetError):
        pass
    response = _read_response(sock, timeout)
    sock.close()
    return _outcome(response, sent)


@dataclass(frozen=True)
class AfterAnswer:
    status: int
    sent_after_answer: int
    closed: bool  # the server closed the connection before the client gave up


def send_on_after_answer(
    port: int,
    method: str,
    path: str,
    headers: dict[str, str],
    *,
    give_up_after: int,
    prefix: bytes = b"",
    timeout: float = 30.0,
) -> AfterAnswer:
    """A keep-alive request whose chunked body goes on after the server answered, as a client
    that does not listen would send it: up to `give_up_after` bytes more, or until the server
    closes the connection (which may come before the client saw the answer)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
    head = {**headers, "Transfer-Encoding": "chunked"}
    sent, closed = 0, False
    answered_at: int | None = None
    try:
        sock.sendall(_head(port, method, path, head, keep_alive=True))
        if prefix:
            sock.sendall(b"%x\r\n" % len(prefix) + prefix + b"\r\n")
        while sent < give_up_after and not select.select([sock], [], [], 0)[0]:
            sock.sendall(CHUNK)
            sent += PIECE
        answered_at = sent
        while sent - answered_at < give_up_after:
            sock.sendall(CHUNK)
            sent += PIECE
    except (BrokenPipeError, ConnectionResetError):
        closed = True  # perhaps before the answer was seen: then nothing was sent after it
    try:
        status = _status(_read_response(sock, timeout))
    finally:
        sock.close()
    return AfterAnswer(status, 0 if answered_at is None else sent - answered_at, closed)
