"""Original files on disk, content-addressed by SHA-256 (identical uploads share one file).

An upload is received into a temporary file (hashed and size-checked as it is copied), then
put in place under its hash. Since documents share files, a file is removed only when no
live document uses it any more; the repository's `lock_storage_key` serialises that check
with uploads of the same bytes, so a file is never removed under a new upload.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from starlette.datastructures import UploadFile

from docchat.kit.errors import PayloadTooLarge, Unprocessable

COPY_CHUNK = 1024 * 1024
HEAD_BYTES = 8192


@dataclass(frozen=True)
class ReceivedFile:
    """An upload on disk in a temporary file, not yet in place."""

    temp_path: Path
    sha256: str
    size_bytes: int
    head: bytes  # the first bytes, for sniffing the type

    @property
    def key(self) -> str:
        return f"{self.sha256[:2]}/{self.sha256}"


def _write(out: BinaryIO, digest: hashlib._Hash, piece: bytes) -> None:
    digest.update(piece)
    out.write(piece)


class FileStorage:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, key: str) -> Path:
        return self.root / key

    async def receive(self, upload: UploadFile, max_bytes: int) -> ReceivedFile:
        """Copy an upload to a temporary file in pieces, refusing it once it passes
        `max_bytes`. Disk writes and hashing run in a thread, never on the event loop. The
        caller places the file (`place`) or drops it (`discard`)."""
        await asyncio.to_thread(self.root.mkdir, parents=True, exist_ok=True)
        digest = hashlib.sha256()
        size = 0
        head = b""
        fd, temp_name = tempfile.mkstemp(dir=self.root, prefix=".upload-")
        received: ReceivedFile | None = None
        try:
            with os.fdopen(fd, "wb") as out:
                while piece := await upload.read(COPY_CHUNK):
                    size += len(piece)
                    if size > max_bytes:
                        limit_mb = max_bytes // (1024 * 1024)
                        raise PayloadTooLarge(f"The file is larger than the limit of {limit_mb} MB")
                    if len(head) < HEAD_BYTES:
                        head += piece[: HEAD_BYTES - len(head)]
                    await asyncio.to_thread(_write, out, digest, piece)
            if size == 0:
                raise Unprocessable("The file is empty")
            received = ReceivedFile(Path(temp_name), digest.hexdigest(), size, head)
            return received
        finally:
            if received is None:
                await asyncio.to_thread(Path(temp_name).unlink, missing_ok=True)

    def _place(self, received: ReceivedFile) -> None:
        target = self.path(received.key)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(received.temp_path, target)

    async def place(self, received: ReceivedFile) -> str:
        """Move the received file to its content address; returns the storage key."""
        await asyncio.to_thread(self._place, received)
        return received.key

    async def discard(self, received: ReceivedFile) -> None:
        await asyncio.to_thread(received.temp_path.unlink, missing_ok=True)

    async def remove(self, key: str) -> None:
        await asyncio.to_thread(self.path(key).unlink, missing_ok=True)
