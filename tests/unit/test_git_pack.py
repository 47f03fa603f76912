"""What a Git pack inflates to is counted before dulwich unpacks it (`sources.git_pack`):
packs written by dulwich itself, and packs crafted by hand as a hostile server would send them
(a small download that becomes gigabytes, an object that lies about its size)."""

from __future__ import annotations

import hashlib
import io
import zlib

import pytest
from dulwich.object_format import DEFAULT_OBJECT_FORMAT
from dulwich.objects import Blob
from dulwich.pack import write_pack_objects

from docchat.sources.git_pack import PackTooLarge, PackUnreadable, inflated_size

MB = 1024 * 1024


def _dulwich_pack(*contents: bytes) -> io.BytesIO:
    """A pack as dulwich writes one (and as git servers send them), of blobs of `contents`."""
    pack = io.BytesIO()
    blobs = [(Blob.from_string(data), None) for data in contents]
    write_pack_objects(pack.write, blobs, DEFAULT_OBJECT_FORMAT)
    pack.seek(0)
    return pack


def _header(kind: int, size: int) -> bytes:
    byte, size = (kind << 4) | (size & 0x0F), size >> 4
    out = bytearray()
    while size:
        out.append(byte | 0x80)
        byte, size = size & 0x7F, size >> 7
    out.append(byte)
    return bytes(out)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _raw_pack(*objects: tuple[int, bytes, bytes]) -> io.BytesIO:
    """A pack of (type, what follows the header before the zlib stream, inflated data),
    each object's header declaring its data's true size."""
    body = b"".join(
        _header(kind, len(data)) + base + zlib.compress(data, 9) for kind, base, data in objects
    )
    head = b"PACK" + (2).to_bytes(4, "big") + len(objects).to_bytes(4, "big")
    return io.BytesIO(head + body + hashlib.sha1(head + body, usedforsecurity=False).digest())


def _copies(base_size: int, result_size: int) -> bytes:
    """Delta data that builds `result_size` bytes by copying the base's first 64 KB over and
    over (each instruction is one byte: a copy of offset 0 and size 0x10000)."""
    return _varint(base_size) + _varint(result_size) + b"\x80" * (result_size // 0x10000)


def test_a_pack_counts_what_its_objects_become() -> None:
    pack = _dulwich_pack(b"a" * 1000, b"hello world", b"\x00" * (3 * MB))
    assert inflated_size(pack, 10 * MB) == 1000 + 11 + 3 * MB


def test_a_small_pack_of_zeros_is_refused_before_it_is_unpacked() -> None:
    # 64 MB of zeros: about 64 KB on the wire, under any download bound.
    pack = _dulwich_pack(b"\x00" * (64 * MB))
    assert len(pack.getvalue()) < MB
    with pytest.raises(PackTooLarge, match="more than 16,777,216 bytes"):
        inflated_size(pack, 16 * MB)


def test_a_delta_is_counted_at_what_it_builds() -> None:
    base = bytes(range(256)) * 256  # 64 KB
    result = 64 * 0x10000  # 4 MB from 64 one-byte instructions
    base_id = hashlib.sha1(b"any base", usedforsecurity=False).digest()
    pack = _raw_pack((3, b"", base), (7, base_id, _copies(len(base), result)))
    assert inflated_size(pack, 8 * MB) == len(base) + result
    pack.seek(0)
    with pytest.raises(PackTooLarge, match="builds 4,194,304 bytes"):
        inflated_size(pack, 2 * MB)


def test_a_delta_that_builds_more_than_it_declares_is_refused() -> None:
    # It declares 64 KB and copies 64 KB a thousand times: 64 MB from a few kilobytes.
    lying = _varint(0x10000) + _varint(0x10000) + b"\x80" * 1000
    pack = _raw_pack((3, b"", b"x" * 0x10000), (6, _varint(1), lying))
    with pytest.raises(PackTooLarge, match="builds more than it declares"):
        inflated_size(pack, 1024 * MB)


def test_an_object_that_inflates_past_its_declared_size_is_refused_without_inflating_it() -> None:
    head = b"PACK" + (2).to_bytes(4, "big") + (1).to_bytes(4, "big")
    # Declares 10 bytes, carries 100 MB of zeros (100 KB compressed).
    bomb = _header(3, 10) + zlib.compress(b"\x00" * (100 * MB), 9)
    with pytest.raises(PackTooLarge, match="more than it declares"):
        inflated_size(io.BytesIO(head + bomb), 1024 * MB)


@pytest.mark.parametrize(
    "data",
    [
        b"not a pack at all",
        b"PACK" + (2).to_bytes(4, "big") + (3).to_bytes(4, "big") + _header(3, 5),
        b"PACK" + (2).to_bytes(4, "big") + (1).to_bytes(4, "big") + _header(3, 5) + b"garbage",
    ],
    ids=["not a pack", "ends in a header", "not zlib"],
)
def test_what_is_not_a_readable_pack_is_refused_as_unreadable(data: bytes) -> None:
    with pytest.raises(PackUnreadable) as refused:
        inflated_size(io.BytesIO(data), MB)
    assert not isinstance(refused.value, PackTooLarge)
