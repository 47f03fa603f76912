"""Original files on disk, content-addressed by SHA-256 (identical uploads share one file)."""

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
class StoredFile:
    key: str
    sha256: str
    size_bytes: int
    head: bytes  # the first bytes, for sniffing the type


def _write(out: BinaryIO, digest: hashlib._Hash, piece: bytes) -> None:
    digest.update(piece)
    out.write(piece)


def _discard(path: str) -> None:
    if os.path.exists(path):
        os.unlink(path)


class FileStorage:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, key: str) -> Path:
        return self.root / key

    def _place(self, temp_name: str, key: str) -> None:
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(temp_name, target)

    async def save(self, upload: UploadFile, max_bytes: int) -> StoredFile:
        """Copy an upload to disk in pieces, refusing it once it passes `max_bytes`.

        Disk writes and hashing run in a thread so a large upload never stalls the event loop.
        """
        await asyncio.to_thread(self.root.mkdir, parents=True, exist_ok=True)
        digest = hashlib.sha256()
        size = 0
        head = b""
        fd, temp_name = tempfile.mkstemp(dir=self.root, prefix=".upload-")
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
            sha = digest.hexdigest()
            key = f"{sha[:2]}/{sha}"
            await asyncio.to_thread(self._place, temp_name, key)
            return StoredFile(key=key, sha256=sha, size_bytes=size, head=head)
        finally:
            await asyncio.to_thread(_discard, temp_name)
