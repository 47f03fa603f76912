"""`docchat backup` and `docchat restore`: one archive holds an installation, taken while it runs.

The archive is a tar file:

- `manifest.json` first: the format, when and from which schema revision it was taken, the
  embedding model, and every other member with its size and SHA-256;
- `database.dump`: PostgreSQL's own `pg_dump` (custom format), taken in one snapshot;
- `files/<key>`: the stored originals named by that snapshot's documents and versions (a folder
  storage); with a bucket, the manifest lists the objects instead and restore checks they are
  there;
- `secret_key`: the generated signing key, when there is one (a configured `AUTH_SECRET_KEY`
  stays in the environment, and the manifest says so).

Consistency while the service runs: the snapshot is exported from a repeatable-read
transaction, `pg_dump` dumps exactly it, and the file list is read in it too. Stored files are
content-addressed and never change, so copying them after is safe; if one is removed in
between (its document deleted in that second), the backup stops and asks to be run again.
Vectors are not archived: the chunk text is in PostgreSQL and the originals in the archive,
and restore queues every document for the worker to embed again (`docchat reindex`).

Restore checks the whole archive (every size and checksum, and each file against its content
address) before it writes anything, refuses a database or folder already in use unless told
to overwrite it, and restores the database in one transaction: a damaged archive, or a failure
while the database is restored, leaves the target as it was. (Files and the key are put in
place after the database; a failure there is reported, and the restore can be run again with
`--overwrite`.)
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from sqlalchemy import text
from sqlalchemy.engine import make_url

from docchat.config import Settings
from docchat.db import create_engine
from docchat.documents import repository as documents_repository
from docchat.documents.storage import LocalFileStorage, S3FileStorage, build_storage
from docchat.llm.embeddings import LocalMiniLMEmbedder
from docchat.main.doctor import known_revisions

FORMAT = 1
MANIFEST = "manifest.json"
DUMP = "database.dump"
KEY = "secret_key"
FILES = "files/"
COPY_CHUNK = 1024 * 1024
# A stored file's member: its content address, `files/ab/ab<62 more hex digits>`.
_FILE_MEMBER = re.compile(r"files/([0-9a-f]{2})/\1[0-9a-f]{62}")


class BackupError(Exception):
    """What went wrong, for the person at the terminal."""


class DamagedArchive(BackupError):
    pass


@dataclass
class Manifest:
    created_at: str
    revision: str
    embedding_model: str
    storage: str  # "folder" or "bucket"
    key_in_archive: bool
    members: dict[str, dict[str, Any]] = field(default_factory=dict)
    bucket_objects: list[str] = field(default_factory=list)
    missing_files: list[str] = field(default_factory=list)
    format: int = FORMAT

    def to_json(self) -> bytes:
        return json.dumps(self.__dict__, indent=2, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Manifest:
        try:
            fields = json.loads(data)
            if not isinstance(fields, dict):
                raise DamagedArchive("its manifest is not a docchat manifest")
            if fields.get("format") != FORMAT:
                raise DamagedArchive(
                    f"the archive's format is {fields.get('format')!r}; this version reads "
                    f"format {FORMAT}"
                )
            return cls(**fields)
        except (ValueError, TypeError) as exc:
            raise DamagedArchive(f"its manifest is unreadable ({exc})") from exc


@dataclass(frozen=True)
class Summary:
    path: Path
    documents_files: int
    bytes: int
    missing_files: list[str]
    revision: str


def libpq(database_url: str) -> tuple[str, dict[str, str]]:
    """The database URL for PostgreSQL's own tools, with the password moved to the
    environment (never on a command line, where `ps` shows it)."""
    url = make_url(database_url)
    env = {"PGPASSWORD": url.password} if url.password else {}
    plain = url.set(drivername="postgresql", password=None)
    return plain.render_as_string(hide_password=False), env


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise BackupError(
            f"{name} was not found: install PostgreSQL's client tools "
            "(Debian/Ubuntu: apt-get install postgresql-client)"
        )
    return found


async def _run(command: list[str], env: dict[str, str]) -> None:
    process = await asyncio.create_subprocess_exec(
        *command,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, error = await process.communicate()
    if process.returncode != 0:
        lines = error.decode(errors="replace").strip().splitlines()
        raise BackupError(f"{Path(command[0]).name} failed: {' / '.join(lines[-3:])}")


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        while piece := data.read(COPY_CHUNK):
            digest.update(piece)
    return digest.hexdigest()


def _add(archive: tarfile.TarFile, name: str, data: IO[bytes], size: int) -> None:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = int(datetime.now(UTC).timestamp())
    info.mode = 0o600
    archive.addfile(info, data)


# -- backup ---------------------------------------------------------------------------------


async def backup(settings: Settings, target: Path) -> Summary:
    """Write the installation's archive to `target` (through a temporary file beside it, so a
    failed backup leaves no half archive under that name)."""
    pg_dump = _tool("pg_dump")
    if not target.parent.is_dir():
        raise BackupError(f"{target.parent} is not a folder: make it first or choose another")
    url, env = libpq(settings.database_url)
    storage = build_storage(settings.storage, settings.files_dir)
    with tempfile.TemporaryDirectory(prefix="docchat-backup-") as work:
        dump = Path(work) / DUMP
        engine = create_engine(settings.database_url, pool_size=1)
        try:
            async with engine.connect() as connection:
                # One repeatable-read transaction: the snapshot it exports is the one every
                # statement in it reads, the file list's included.
                await connection.execution_options(
                    isolation_level="REPEATABLE READ", postgresql_readonly=True
                )
                await connection.begin()
                snapshot = await connection.scalar(text("SELECT pg_export_snapshot()"))
                isolation = await connection.scalar(text("SHOW transaction_isolation"))
                if isolation != "repeatable read":
                    raise BackupError(f"the snapshot is not consistent ({isolation})")
                revision = await connection.scalar(text("SELECT version_num FROM alembic_version"))
                keys = await documents_repository.storage_keys_in_use(connection)
                # The snapshot lives as long as this transaction: pg_dump reads it meanwhile.
                await _run(
                    [
                        pg_dump,
                        "--format=custom",
                        "--no-owner",
                        "--no-privileges",
                        f"--snapshot={snapshot}",
                        f"--file={dump}",
                        url,
                    ],
                    env,
                )
                await connection.rollback()  # read only: nothing to keep
        finally:
            await engine.dispose()
        manifest = Manifest(
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            revision=str(revision),
            embedding_model=settings.embedding.model
            if settings.embedding.backend != "local"
            else LocalMiniLMEmbedder.name,
            storage="bucket" if isinstance(storage, S3FileStorage) else "folder",
            key_in_archive=settings.auth.secret_key is None and settings.secret_key_file.exists(),
        )
        manifest.members[DUMP] = {"size": dump.stat().st_size, "sha256": _sha256_of(dump)}
        files: list[tuple[str, Path]] = []
        if isinstance(storage, LocalFileStorage):
            for key in keys:
                path = storage.path(key)
                if path.is_file():
                    files.append((key, path))
                    manifest.members[FILES + key] = {"size": path.stat().st_size}
                else:
                    manifest.missing_files.append(key)
        else:
            manifest.bucket_objects = keys
        key_bytes = settings.secret_key_file.read_bytes() if manifest.key_in_archive else b""
        if manifest.key_in_archive:
            manifest.members[KEY] = {
                "size": len(key_bytes),
                "sha256": hashlib.sha256(key_bytes).hexdigest(),
            }
        partial = target.with_name(f".{target.name}.partial")
        try:
            descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "wb") as out, tarfile.open(fileobj=out, mode="w") as archive:
                body = manifest.to_json()
                _add(archive, MANIFEST, io.BytesIO(body), len(body))
                with dump.open("rb") as data:
                    _add(archive, DUMP, data, manifest.members[DUMP]["size"])
                for key, path in files:
                    try:
                        data = path.open("rb")
                    except FileNotFoundError as exc:
                        raise BackupError(
                            f"a stored file ({key}) was removed while the backup ran (its "
                            "document was deleted): run the backup again"
                        ) from exc
                    with data:
                        _add(archive, FILES + key, data, manifest.members[FILES + key]["size"])
                if manifest.key_in_archive:
                    _add(archive, KEY, io.BytesIO(key_bytes), len(key_bytes))
            partial.replace(target)  # 0600: it holds the signing key and everyone's documents
        finally:
            partial.unlink(missing_ok=True)
    size = await asyncio.to_thread(lambda: target.stat().st_size)
    return Summary(
        path=target,
        documents_files=len(files) or len(manifest.bucket_objects),
        bytes=size,
        missing_files=manifest.missing_files,
        revision=manifest.revision,
    )


# -- restore --------------------------------------------------------------------------------


def _content_address(data: IO[bytes]) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    while piece := data.read(COPY_CHUNK):
        digest.update(piece)
        size += len(piece)
    return digest.hexdigest(), size


def verify(archive_path: Path) -> Manifest:
    """The archive's manifest, once every member has been read and matched its size and
    checksum (a file its content address); `DamagedArchive` otherwise."""
    if not archive_path.is_file():
        raise BackupError(f"{archive_path} was not found")
    try:
        with tarfile.open(archive_path, "r:") as archive:
            first = archive.next()
            if first is None or first.name != MANIFEST:
                raise DamagedArchive("it does not start with a docchat manifest")
            manifest = Manifest.from_json(_read_member(archive, first))
            seen: set[str] = set()
            for member in archive:
                if member is first:
                    continue
                if member.name.startswith(FILES) and not _FILE_MEMBER.fullmatch(member.name):
                    raise DamagedArchive(f"{member.name!r} is not the name of a stored file")
                expected = manifest.members.get(member.name)
                if expected is None or not member.isfile():
                    raise DamagedArchive(
                        f"it holds {member.name!r}, which its manifest does not list"
                    )
                data = archive.extractfile(member)
                assert data is not None
                digest, size = _content_address(data)
                if size != expected["size"]:
                    raise DamagedArchive(f"{member.name} is cut short")
                # A stored file is checked against its own name, its content address.
                is_file = member.name.startswith(FILES)
                wanted = member.name.rsplit("/", 1)[-1] if is_file else expected.get("sha256")
                if digest != wanted:
                    raise DamagedArchive(f"{member.name} does not match its checksum")
                seen.add(member.name)
    except tarfile.TarError as exc:
        raise DamagedArchive(f"it cannot be read as a whole ({exc})") from exc
    except (EOFError, OSError) as exc:
        raise DamagedArchive(f"it ends early ({exc})") from exc
    missing = set(manifest.members) - seen
    if missing:
        raise DamagedArchive(f"{len(missing)} member(s) are missing, e.g. {sorted(missing)[0]}")
    if DUMP not in seen or manifest.key_in_archive != (KEY in seen):
        raise DamagedArchive("its manifest does not match what it holds")
    return manifest


def _read_member(archive: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    data = archive.extractfile(member)
    if data is None:
        raise DamagedArchive(f"{member.name} is not a file")
    return data.read()


@dataclass(frozen=True)
class Restored:
    revision: str
    files: int
    missing_objects: list[str]
    key_restored: bool


async def _in_use(settings: Settings) -> list[str]:
    """What already holds an installation at the target: reasons not to overwrite it."""
    reasons: list[str] = []
    engine = create_engine(settings.database_url, pool_size=1)
    try:
        async with engine.connect() as connection:
            tables = await connection.scalar(
                text(
                    "SELECT count(*) FROM information_schema.tables "
                    "WHERE table_schema = current_schema()"
                )
            )
    finally:
        await engine.dispose()
    if tables:
        reasons.append(f"the database already has {tables} table(s)")
    files = settings.files_dir
    if files.is_dir() and any(
        path.is_file() and not path.name.startswith(".")
        for shard in files.iterdir()
        if shard.is_dir() and shard.name != ".staging"
        for path in shard.iterdir()
    ):
        reasons.append(f"{files} already holds files")
    if settings.secret_key_file.exists():
        reasons.append(f"{settings.secret_key_file} already exists")
    return reasons


@contextlib.contextmanager
def _extracted(archive_path: Path, name: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="docchat-restore-") as work:
        with tarfile.open(archive_path, "r:") as archive:
            member = archive.getmember(name)
            data = archive.extractfile(member)
            assert data is not None
            path = Path(work) / "member"
            with path.open("wb") as out:
                shutil.copyfileobj(data, out, COPY_CHUNK)
        yield path


async def restore(settings: Settings, archive_path: Path, *, overwrite: bool = False) -> Restored:
    """Restore the archive into the database, folder (or bucket) and key file the settings
    name. Checks everything first; the database is restored in one transaction."""
    pg_restore = _tool("pg_restore")
    manifest = await asyncio.to_thread(verify, archive_path)
    if manifest.revision not in known_revisions():
        raise BackupError(
            f"the archive's schema ({manifest.revision}) is newer than this version knows: "
            "restore it with the version that took it (or a newer one)"
        )
    kind = "bucket" if settings.storage.s3_bucket else "folder"
    if manifest.storage != kind:
        raise BackupError(
            f"the archive's files were in a {manifest.storage}, and this installation keeps "
            f"them in a {kind}: restore with the same kind of storage, then move the files"
        )
    reasons = await _in_use(settings)
    if reasons and not overwrite:
        raise BackupError(
            "the target is in use: " + "; ".join(reasons) + ". Restore into an empty database "
            "and DATA_DIR, or pass --overwrite to replace what is there"
        )
    url, env = libpq(settings.database_url)
    with _extracted(archive_path, DUMP) as dump:
        command = [pg_restore, "--no-owner", "--no-privileges", "--exit-on-error"]
        command += ["--single-transaction", f"--dbname={url}"]
        if overwrite:
            command += ["--clean", "--if-exists"]
        await _run([*command, str(dump)], env)
    storage = build_storage(settings.storage, settings.files_dir)
    files = 0
    missing_objects: list[str] = []
    if isinstance(storage, LocalFileStorage):
        files = await asyncio.to_thread(_restore_files, archive_path, storage)
    else:
        for key in manifest.bucket_objects:
            if not await storage.exists(key):
                missing_objects.append(key)
    key_restored = False
    if manifest.key_in_archive:
        with _extracted(archive_path, KEY) as key_file:
            target = settings.secret_key_file
            target.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "wb") as out:
                out.write(key_file.read_bytes())
            key_restored = True
    return Restored(
        revision=manifest.revision,
        files=files,
        missing_objects=missing_objects,
        key_restored=key_restored,
    )


def _restore_files(archive_path: Path, storage: LocalFileStorage) -> int:
    restored = 0
    with tarfile.open(archive_path, "r:") as archive:
        for member in archive:
            if not member.name.startswith(FILES):
                continue
            key = member.name[len(FILES) :]
            target = storage.path(key)
            if not target.resolve().is_relative_to(storage.root.resolve()):
                raise DamagedArchive(f"{member.name} points outside the files folder")
            data = archive.extractfile(member)
            assert data is not None
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f".{target.name}.partial")
            with partial.open("wb") as out:
                shutil.copyfileobj(data, out, COPY_CHUNK)
            partial.replace(target)
            restored += 1
    return restored
