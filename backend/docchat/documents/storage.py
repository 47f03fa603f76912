"""Original files, content-addressed by SHA-256 (identical uploads share one file).

An upload is received into a temporary file in a local staging folder (hashed and size-checked
as it is copied), then put in place under its hash: in a folder (`LocalFileStorage`, on one
machine or a volume every process mounts) or in an S3-compatible bucket (`S3FileStorage`, for
workers on machines that share no disk). Readers ask for a local copy (`local_copy`): the file
itself on disk, or an object downloaded into the staging folder for as long as it is read.
Downloads (`response`) are sent from the file, or streamed from the bucket as they are read,
a byte range (the PDF viewer's) read as that range alone.
Since documents share files, a file is removed only when no live document uses it any more;
the repository's `lock_storage_key` serialises that check with uploads of the same bytes, so a
file is never removed under a new upload.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import os
import secrets
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol
from urllib.parse import quote

from starlette.datastructures import Headers
from starlette.responses import FileResponse, PlainTextResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from docchat.config import StorageSettings
from docchat.kit.errors import NotFound, PayloadTooLarge, Unprocessable

COPY_CHUNK = 1024 * 1024
HEAD_BYTES = 8192
# Names of the staging folder's temporary files: uploads being received, local copies of
# stored objects.
STAGING_PREFIXES = (".upload-", ".copy-")
# A temporary file older than this was left by a process that died holding it (no upload or
# copy lasts a day); younger ones may belong to another process sharing the folder.
STALE_STAGING_SECONDS = 24 * 3600


class ByteSource(Protocol):
    """Bytes read piece by piece: an uploaded form's file, a fetched page, a connector's item
    (`FileSource` wraps an open file)."""

    async def read(self, size: int = -1) -> bytes: ...


class FileSource:
    """An open binary file as a `ByteSource`, read in a thread (never on the event loop)."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file

    async def read(self, size: int = -1) -> bytes:
        return await asyncio.to_thread(self.file.read, size)


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


class StoredFileMissing(NotFound):
    """The file a document names is not in the storage."""

    def __init__(self) -> None:
        super().__init__("The stored file is missing")


def _write(out: BinaryIO, digest: hashlib._Hash, piece: bytes) -> None:
    digest.update(piece)
    out.write(piece)


def _remove_stale(folder: Path, older_than: float) -> int:
    if not folder.is_dir():
        return 0
    cutoff = time.time() - older_than
    removed = 0
    for entry in os.scandir(folder):
        if not entry.name.startswith(STAGING_PREFIXES) or not entry.is_file(follow_symlinks=False):
            continue
        with contextlib.suppress(FileNotFoundError):  # its process may just have removed it
            if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)
                removed += 1
    return removed


class FileStorage(ABC):
    """Where uploaded files live. `staging` is a local folder for uploads being received and
    for local copies of stored files."""

    def __init__(self, staging: Path) -> None:
        self.staging = staging

    async def receive(self, upload: ByteSource, max_bytes: int) -> ReceivedFile:
        """Copy an upload to a temporary file in pieces, refusing it once it passes
        `max_bytes`. Disk writes and hashing run in a thread, never on the event loop. The
        caller places the file (`place`) or drops it (`discard`)."""
        await asyncio.to_thread(self.staging.mkdir, parents=True, exist_ok=True)
        digest = hashlib.sha256()
        size = 0
        head = b""
        fd, temp_name = tempfile.mkstemp(dir=self.staging, prefix=".upload-")
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

    async def discard(self, received: ReceivedFile) -> None:
        await asyncio.to_thread(received.temp_path.unlink, missing_ok=True)

    async def sweep_staging(self, older_than: float = STALE_STAGING_SECONDS) -> int:
        """Remove temporary files a killed process left in the staging folder; returns how
        many. Run at start; the age spares the files of other processes sharing the folder."""
        return await asyncio.to_thread(_remove_stale, self.staging, older_than)

    async def probe(self) -> None:
        """Store, find and remove a small file of random bytes (`docchat doctor`): raises
        when the storage does not take files. Random bytes: the probe's content address is
        nobody's document."""
        data = secrets.token_bytes(32)
        received = await self.receive(FileSource(io.BytesIO(data)), len(data))
        try:
            key = await self.place(received)
        finally:
            await self.discard(received)
        try:
            if not await self.exists(key):
                raise OSError("a file just stored cannot be found")
        finally:
            await self.remove(key)
            await self.tidy(key)

    async def tidy(self, key: str) -> None:
        """Remove what removing `key` left behind and nothing else uses (a bucket: nothing)."""
        return None

    @abstractmethod
    def describe(self) -> str:
        """Where the files are, for people (a folder, or a bucket and prefix)."""

    @abstractmethod
    async def place(self, received: ReceivedFile) -> str:
        """Put the received file at its content address; returns the storage key. The caller
        discards the received file after, placed or not."""

    @abstractmethod
    async def remove(self, key: str) -> None:
        """Remove a stored file; a file already gone is not an error."""

    @abstractmethod
    async def exists(self, key: str) -> bool: ...

    @abstractmethod
    def local_copy(self, key: str) -> contextlib.AbstractAsyncContextManager[Path]:
        """The stored file as a local path while the context lasts; `StoredFileMissing` if
        there is no such file."""

    @abstractmethod
    async def response(self, key: str, media_type: str, filename: str) -> Response:
        """The file as an inline HTTP response (a single byte range served, for the PDF viewer);
        `StoredFileMissing` if there is no such file."""


class LocalFileStorage(FileStorage):
    """Files in a folder: one machine, or a volume every API and worker process mounts."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.root = root

    def path(self, key: str) -> Path:
        return self.root / key

    def describe(self) -> str:
        return f"folder {self.root}"

    async def tidy(self, key: str) -> None:
        """Remove the key's folder if it is empty (the probe's, in a new installation)."""
        with contextlib.suppress(OSError):
            await asyncio.to_thread(os.rmdir, self.path(key).parent)

    def _place(self, received: ReceivedFile) -> None:
        target = self.path(received.key)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(received.temp_path, target)

    async def place(self, received: ReceivedFile) -> str:
        await asyncio.to_thread(self._place, received)
        return received.key

    async def remove(self, key: str) -> None:
        await asyncio.to_thread(self.path(key).unlink, missing_ok=True)

    async def exists(self, key: str) -> bool:
        return await asyncio.to_thread(self.path(key).is_file)

    @contextlib.asynccontextmanager
    async def local_copy(self, key: str) -> AsyncIterator[Path]:
        if not await self.exists(key):
            raise StoredFileMissing()
        yield self.path(key)

    async def response(self, key: str, media_type: str, filename: str) -> FileResponse:
        if not await self.exists(key):
            raise StoredFileMissing()
        return FileResponse(
            self.path(key),
            media_type=media_type,
            filename=filename,
            content_disposition_type="inline",
        )


class S3FileStorage(FileStorage):
    """Files as objects in an S3-compatible bucket, so API and worker processes on different
    machines need no shared disk. boto3's client blocks: every call runs in a thread."""

    def __init__(self, settings: StorageSettings, staging: Path) -> None:
        import boto3  # only installations that use S3 pay for importing it
        from botocore.config import Config

        super().__init__(staging)
        assert settings.s3_bucket, "STORAGE_S3_BUCKET is required for S3 storage"
        self.bucket = settings.s3_bucket
        self.prefix = settings.s3_prefix
        secret = settings.s3_secret_access_key
        # Empty values (as `${VAR:-}` in a compose file gives) count as unset.
        self._client: Any = boto3.client(
            "s3",
            endpoint_url=settings.s3_endpoint_url or None,
            region_name=settings.s3_region,
            aws_access_key_id=settings.s3_access_key_id or None,
            aws_secret_access_key=(secret.get_secret_value() or None) if secret else None,
            config=Config(retries={"mode": "standard", "max_attempts": 5}),
        )

    def _object(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def describe(self) -> str:
        return f"bucket s3://{self.bucket}/{self.prefix}"

    async def place(self, received: ReceivedFile) -> str:
        await asyncio.to_thread(
            self._client.upload_file,
            str(received.temp_path),
            self.bucket,
            self._object(received.key),
        )
        return received.key

    async def remove(self, key: str) -> None:
        await asyncio.to_thread(
            self._client.delete_object, Bucket=self.bucket, Key=self._object(key)
        )

    async def exists(self, key: str) -> bool:
        try:
            await asyncio.to_thread(
                self._client.head_object, Bucket=self.bucket, Key=self._object(key)
            )
        except Exception as exc:
            if _no_such_object(exc):
                return False
            raise
        return True

    async def _download(self, key: str) -> Path:
        await asyncio.to_thread(self.staging.mkdir, parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=self.staging, prefix=".copy-")
        os.close(fd)
        try:
            await asyncio.to_thread(
                self._client.download_file, self.bucket, self._object(key), name
            )
        except BaseException as exc:
            await asyncio.to_thread(Path(name).unlink, missing_ok=True)
            if _no_such_object(exc):
                raise StoredFileMissing() from exc
            raise
        return Path(name)

    @contextlib.asynccontextmanager
    async def local_copy(self, key: str) -> AsyncIterator[Path]:
        path = await self._download(key)
        try:
            yield path
        finally:
            await asyncio.to_thread(path.unlink, missing_ok=True)

    async def response(self, key: str, media_type: str, filename: str) -> Response:
        try:
            head = await asyncio.to_thread(
                self._client.head_object, Bucket=self.bucket, Key=self._object(key)
            )
        except Exception as exc:
            if _no_such_object(exc):
                raise StoredFileMissing() from exc
            raise
        return _ObjectResponse(self, key, int(head["ContentLength"]), media_type, filename)

    def open_range(self, key: str, first: int, last: int) -> Any:
        """The object's bytes `first` to `last` (inclusive), as a stream to read."""
        found = self._client.get_object(
            Bucket=self.bucket, Key=self._object(key), Range=f"bytes={first}-{last}"
        )
        return found["Body"]


class RangeNotSatisfiable(Exception):
    pass


def single_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The first and last byte (inclusive) a `Range` header asks of a `size`-byte file, or None
    for the whole file: no header, another unit, several ranges or one that does not parse
    (a server may answer any of those with the whole file). `RangeNotSatisfiable` when the
    range starts past the end."""
    unit, _, spec = (header or "").partition("=")
    spec = spec.strip()
    if unit.strip().lower() != "bytes" or "," in spec or "-" not in spec:
        return None
    start, end = (part.strip() for part in spec.split("-", 1))
    if (start and not start.isdigit()) or (end and not end.isdigit()) or not (start or end):
        return None
    if not start:  # the last `end` bytes
        if int(end) == 0 or size == 0:
            raise RangeNotSatisfiable()
        return max(size - int(end), 0), size - 1
    first = int(start)
    last = min(int(end), size - 1) if end else size - 1
    if first >= size:
        raise RangeNotSatisfiable()
    return (first, last) if first <= last else None


def content_disposition(filename: str) -> str:
    """`inline` with the file's name (RFC 6266; UTF-8 where the name needs it)."""
    quoted = quote(filename)
    if quoted != filename:
        return f"inline; filename*=utf-8''{quoted}"
    return f'inline; filename="{filename}"'


class _ObjectResponse(Response):
    """An object of the bucket streamed as it is read from it: nothing is staged on disk, a
    byte range is asked of the bucket as that range alone, and the read stops when the client
    goes away."""

    def __init__(
        self, storage: S3FileStorage, key: str, size: int, media_type: str, filename: str
    ) -> None:
        super().__init__(media_type=media_type)
        self.storage, self.key, self.size, self.filename = storage, key, size, filename

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            wanted = single_range(Headers(scope=scope).get("range"), self.size)
        except RangeNotSatisfiable:
            refused = PlainTextResponse(
                "", status_code=416, headers={"content-range": f"bytes */{self.size}"}
            )
            return await refused(scope, receive, send)
        first, last = wanted if wanted is not None else (0, self.size - 1)
        headers = {
            "accept-ranges": "bytes",
            "content-disposition": content_disposition(self.filename),
            "content-length": str(last - first + 1),
        }
        if wanted is not None:
            headers["content-range"] = f"bytes {first}-{last}/{self.size}"
        # Opened before the status is sent: a failure is a clean error, not a cut-off body.
        body = None
        if self.size:
            body = await asyncio.to_thread(self.storage.open_range, self.key, first, last)
        streamed = StreamingResponse(
            _pieces(body),
            status_code=206 if wanted is not None else 200,
            headers=headers,
            media_type=self.media_type,
        )
        await streamed(scope, receive, send)


async def _pieces(body: Any) -> AsyncIterator[bytes]:
    """What a boto3 body holds, a piece at a time; closed however the reading ends."""
    if body is None:
        return
    try:
        while piece := await asyncio.to_thread(body.read, COPY_CHUNK):
            yield piece
    finally:
        body.close()


def _no_such_object(error: BaseException) -> bool:
    """Whether boto3 failed because the object is not in the bucket."""
    from botocore.exceptions import ClientError

    if not isinstance(error, ClientError):
        return False
    return error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound")


def build_storage(settings: StorageSettings, files_dir: Path) -> FileStorage:
    """S3 when a bucket is configured, else the folder (`files_dir` also stages uploads)."""
    if settings.s3_bucket:
        return S3FileStorage(settings, files_dir / ".staging")
    return LocalFileStorage(files_dir)
