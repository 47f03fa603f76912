"""What a received Git pack inflates to, counted before anything of it is unpacked.

A pack's bytes are compressed: a few megabytes of zeros, or of deltas that copy one large base
over and over, become gigabytes when dulwich indexes the pack or reads a file, and it does so
whole in memory. So the pack is read once, in small pieces and keeping nothing: each object's
zlib stream is inflated only to count it, and a delta's instructions are read to count what
they build. Every object is counted at the size it will have (a delta at its result), and the
reading stops as soon as the sum passes the bound or an object makes more than it declares.

The format (git's Documentation/gitformat-pack.txt): "PACK", a version, an object count; then
each object as a header (type and declared size in a varint, a delta's base as an offset or an
object id) followed by its zlib stream; a delta's data starts with two varints (the base's size
and the result's) and then copy and insert instructions.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import IO

_OFS_DELTA, _REF_DELTA = 6, 7
_PIECE = 64 * 1024


class PackUnreadable(Exception):
    """What was received is not a pack that can be read: nothing of it may be unpacked."""


class PackTooLarge(PackUnreadable):
    """The pack's objects inflate to more than the bound, or an object to more than it
    declares: nothing of it may be unpacked."""


class _Reader:
    """The pack's bytes as a stream, with what zlib left over put back in front."""

    def __init__(self, file: IO[bytes]) -> None:
        self.file = file
        self.pending = b""

    def byte(self) -> int:
        data = self.take(1)
        if not data:
            raise PackUnreadable("the pack ends in the middle of an object")
        return data[0]

    def take(self, size: int) -> bytes:
        while len(self.pending) < size:
            more = self.file.read(_PIECE)
            if not more:
                break
            self.pending += more
        data, self.pending = self.pending[:size], self.pending[size:]
        return data

    def piece(self) -> bytes:
        data = self.pending or self.file.read(_PIECE)
        self.pending = b""
        return data

    def give_back(self, data: bytes) -> None:
        self.pending = data + self.pending


class _Budget:
    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.used = 0

    @property
    def left(self) -> int:
        return self.bound - self.used

    def spend(self, size: int) -> None:
        """Counts `size`, refused when it passes the bound (checked before the work is done,
        from what an object declares)."""
        if size > self.left:
            raise PackTooLarge(f"its objects inflate to more than {self.bound:,} bytes")
        self.used += size


def inflated_size(file: IO[bytes], bound: int) -> int:
    """The bytes the pack in `file` (read from its start) becomes, each object at its final
    size; `PackTooLarge` as soon as that passes `bound`. Memory stays at a few pieces."""
    reader = _Reader(file)
    head = reader.take(12)
    if len(head) < 12 or head[:4] != b"PACK":
        raise PackUnreadable("what the server sent is not a Git pack")
    budget = _Budget(bound)
    for _ in range(int.from_bytes(head[8:12], "big")):
        kind, declared = _object_header(reader)
        if kind == _OFS_DELTA:
            while reader.byte() & 0x80:
                pass
        elif kind == _REF_DELTA and len(reader.take(20)) < 20:
            raise PackUnreadable("the pack ends in the middle of an object")
        if declared > budget.left:  # not even inflated: it says it is too large
            raise PackTooLarge(f"its objects inflate to more than {bound:,} bytes")
        inflated = _inflated(reader, declared)
        if kind in (_OFS_DELTA, _REF_DELTA):
            budget.spend(_delta_result(inflated, budget.left))
        else:
            for _piece in inflated:  # to its end: it must make what it declares
                pass
            budget.spend(declared)
    return budget.used


def _object_header(reader: _Reader) -> tuple[int, int]:
    byte = reader.byte()
    kind, size, shift = (byte >> 4) & 7, byte & 0x0F, 4
    while byte & 0x80:
        byte = reader.byte()
        size |= (byte & 0x7F) << shift
        shift += 7
    return kind, size


def _inflated(reader: _Reader, declared: int) -> Iterator[bytes]:
    """The object's zlib stream inflated piece by piece, never past its declared size; what
    follows the stream goes back to the reader once the pieces have all been taken."""
    stream = zlib.decompressobj()
    made = 0
    while not stream.eof:
        data = stream.unconsumed_tail or reader.piece()
        if not data:
            raise PackUnreadable("the pack ends in the middle of an object")
        try:
            piece = stream.decompress(data, _PIECE)
        except zlib.error as exc:
            raise PackUnreadable("an object of the pack cannot be inflated") from exc
        made += len(piece)
        if made > declared:
            raise PackTooLarge("an object of the pack inflates to more than it declares")
        if piece:
            yield piece
    if made != declared:
        raise PackUnreadable("an object of the pack inflates to less than it declares")
    reader.give_back(stream.unused_data)


def _delta_result(pieces: Iterator[bytes], budget: int) -> int:
    """What a delta builds: the result size its data declares, checked against what its copy
    and insert instructions actually make (a crafted delta could copy far more)."""
    data = _Bytes(pieces)
    data.varint()  # the base's size
    result = data.varint()
    if result > budget:
        raise PackTooLarge(f"a delta of the pack builds {result:,} bytes")
    made = 0
    while (command := data.next_byte()) is not None:
        if command & 0x80:  # copy: offset bytes (bits 0-3), size bytes (bits 4-6)
            for bit in range(4):
                if command & (1 << bit):
                    data.byte()
            size = 0
            for bit in range(3):
                if command & (0x10 << bit):
                    size |= data.byte() << (8 * bit)
            made += size or 0x10000
        elif command:  # insert: that many literal bytes follow
            data.skip(command)
            made += command
        else:
            raise PackUnreadable("a delta of the pack holds an instruction git does not have")
        if made > result:
            raise PackTooLarge("a delta of the pack builds more than it declares")
    if made != result:
        raise PackUnreadable("a delta of the pack builds less than it declares")
    return result


class _Bytes:
    """A delta's inflated data read a byte at a time across its pieces."""

    def __init__(self, pieces: Iterator[bytes]) -> None:
        self.pieces = pieces
        self.current = b""
        self.at = 0

    def next_byte(self) -> int | None:
        while self.at >= len(self.current):
            piece: bytes | None = next(self.pieces, None)
            if piece is None:
                return None
            self.current, self.at = piece, 0
        self.at += 1
        return self.current[self.at - 1]

    def byte(self) -> int:
        value = self.next_byte()
        if value is None:
            raise PackUnreadable("a delta of the pack ends in the middle of an instruction")
        return value

    def varint(self) -> int:
        value, shift, byte = 0, 0, 0x80
        while byte & 0x80:
            byte = self.byte()
            value |= (byte & 0x7F) << shift
            shift += 7
        return value

    def skip(self, size: int) -> None:
        while size:
            if self.at >= len(self.current):
                piece: bytes | None = next(self.pieces, None)
                if piece is None:
                    raise PackUnreadable("a delta of the pack ends in the middle of an instruction")
                self.current, self.at = piece, 0
                continue
            step = min(size, len(self.current) - self.at)
            self.at += step
            size -= step
