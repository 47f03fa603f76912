"""A Git repository as a source: the document files (by their extension: Markdown, text, PDF,
Office, HTML, ...) at a branch or tag, optionally below one folder of it.

dulwich (pure Python, no `git` program needed) fetches the branch or tag with depth 1 into a
bare repository kept in the data folder, remembering the commit it fetched, so each sync
downloads only what changed since the last; a file's version is its blob id, which changes
exactly when its content does. Only http(s) remotes; a token (GitHub, GitLab, Gitea) goes in
the credentials, never in the URL. Everything blocks: it runs in a thread.

A fetch is bounded (SOURCES_GIT_MAX_BYTES, SOURCES_GIT_MAX_OBJECTS, SOURCES_GIT_TIMEOUT_SECONDS):
the pack is counted as it arrives and its header's object count read first, and at a bound the
fetch stops and what it received is discarded. What the pack's objects inflate to is counted
before it is unpacked (SOURCES_GIT_MAX_INFLATED_BYTES, `sources.git_pack`). A repository kept
from earlier syncs that has grown past the byte bound is fetched afresh. Its connections go only
to checked addresses (`sources.connections`).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import posixpath
import shutil
import struct
import tempfile
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import IO, Any

from docchat.documents.storage import ByteSource, FileSource
from docchat.extraction.kinds import FORMATS
from docchat.sources.connections import AddressRefused, Guard, pool_manager
from docchat.sources.git_pack import PackTooLarge, PackUnreadable, inflated_size
from docchat.sources.port import (
    Connector,
    Setting,
    SettingType,
    SourceError,
    SourceItem,
    SourceLimit,
)

DOCUMENT_SUFFIXES = frozenset(
    suffix.lower() for entry in FORMATS.values() for suffix in entry.suffixes if suffix
)
# The local branch that remembers the last commit fetched (the next fetch says it has it).
FETCHED = b"refs/heads/docchat-fetched"
# A pack is kept in memory up to this size while it arrives, then in a file of the cache.
SPOOL_BYTES = 4 * 1024 * 1024
MB = 1024 * 1024


def _reason(exc: Exception) -> str:
    """What went wrong, for the source's owner: never the server's own words, which could
    tell a user what answers where on a network (a refused port, a redirect's target)."""
    from dulwich.client import HTTPUnauthorized
    from dulwich.errors import GitProtocolError, NotGitRepository

    if isinstance(exc, AddressRefused):
        return str(exc)
    if isinstance(exc, HTTPUnauthorized):
        return "the server refused the credentials (check the token)"
    if isinstance(exc, NotGitRepository):
        return "there is no Git repository at that address"
    if isinstance(exc, GitProtocolError) and "unexpected http resp" in str(exc):
        status = str(exc).split("unexpected http resp ", 1)[1].split(" ", 1)[0]
        moved = " (give the address it moves to: redirects are not followed)"
        return f"the server answered {status}" + (moved if status.startswith("3") else "")
    return "the repository could not be reached or read"


def _pool_manager(guard: Guard, seconds: float) -> Any:
    """HTTP without redirects (each would need the same address checks as the first), to
    checked addresses only, and with time limits."""
    import urllib3

    return pool_manager(
        guard,
        retries=urllib3.util.Retry(total=2, redirect=0, raise_on_redirect=False),
        timeout=urllib3.Timeout(connect=min(10, seconds), read=min(120, seconds)),
    )


def _size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


class _Pack:
    """The pack a fetch receives, held to the bounds as it arrives."""

    def __init__(self, folder: Path, max_bytes: int, max_objects: int, guard: Guard) -> None:
        self.file = tempfile.SpooledTemporaryFile(  # noqa: SIM115 - closed by the fetch
            max_size=SPOOL_BYTES, dir=str(folder), prefix="incoming-"
        )
        self.max_bytes = max_bytes
        self.max_objects = max_objects
        self.guard = guard
        self.size = 0
        self._head = b""

    def write(self, data: bytes) -> int:
        if self.guard.expired:
            raise TimeoutError("the fetch ran out of time")
        self.size += len(data)
        if self.size > self.max_bytes:
            raise SourceLimit(
                f"the repository sends more than {_amount(self.max_bytes)} for this branch or "
                "tag (SOURCES_GIT_MAX_BYTES): nothing of it was kept; choose a smaller "
                "repository or ask an administrator to raise the limit"
            )
        if len(self._head) < 12:
            self._head += data[: 12 - len(self._head)]
            if len(self._head) == 12:
                self._check_count()
        self.file.write(data)
        return len(data)

    def _check_count(self) -> None:
        """A pack starts with "PACK", its version and the number of objects it holds."""
        count = struct.unpack(">I", self._head[8:12])[0] if self._head[:4] == b"PACK" else 0
        if count > self.max_objects:
            raise SourceLimit(
                f"the repository sends {count:,} objects for this branch or tag, more than "
                f"{self.max_objects:,} (SOURCES_GIT_MAX_OBJECTS): nothing of it was kept"
            )


def _amount(size: int) -> str:
    return f"{size // MB} MB" if size >= MB else f"{size:,} bytes"


class GitSource:
    def __init__(
        self,
        url: str,
        ref: str,
        cache: Path,
        *,
        folder: str = "",
        username: str | None = None,
        token: str | None = None,
        max_bytes: int = 50 * 1024 * 1024,
        fetch_max_bytes: int = 200 * MB,
        fetch_max_objects: int = 200_000,
        fetch_max_inflated: int = 1024 * MB,
        fetch_seconds: float = 300.0,
        allowed_hosts: tuple[str, ...] = (),
    ) -> None:
        if not url.startswith(("https://", "http://")):
            raise SourceError("a Git source needs an http:// or https:// address")
        if not ref:
            raise SourceError("a Git source needs a branch or tag (ref)")
        self.url = url
        self.ref = ref
        self.cache = cache
        self.folder = folder.strip("/")
        self.username = username or ("x-access-token" if token else None)
        self.token = token
        self.max_bytes = max_bytes
        self.fetch_max_bytes = fetch_max_bytes
        self.fetch_max_objects = fetch_max_objects
        self.fetch_max_inflated = fetch_max_inflated
        self.fetch_seconds = fetch_seconds
        self.allowed_hosts = allowed_hosts
        self._store: Any = None  # the object store of the last listing, to read blobs from
        self._repository_open: Any = None

    @classmethod
    def from_settings(cls, settings: Mapping[str, str]) -> GitSource:
        return cls(
            settings.get("url", ""),
            settings.get("ref", "main"),
            Path(settings.get("cache_dir", "")),
            folder=settings.get("folder", ""),
            username=settings.get("username"),
            token=settings.get("token"),
            max_bytes=int(settings.get("max_bytes", str(50 * MB))),
            fetch_max_bytes=int(settings.get("git_max_bytes", str(200 * MB))),
            fetch_max_objects=int(settings.get("git_max_objects", "200000")),
            fetch_max_inflated=int(settings.get("git_max_inflated_bytes", str(1024 * MB))),
            fetch_seconds=float(settings.get("git_timeout_seconds", "300")),
            allowed_hosts=tuple(
                host for host in settings.get("fetch_allowed_hosts", "").split(",") if host
            ),
        )

    def close(self) -> None:
        """Let go of the fetched repository's open pack files (the sync calls it at its end)."""
        if self._repository_open is not None:
            self._repository_open.close()
            self._repository_open = self._store = None

    def _repository(self) -> Any:
        from dulwich.repo import Repo

        self.close()

        if self.cache.is_dir() and _size(self.cache) > self.fetch_max_bytes:
            # Grown past the bound over many syncs: fetched afresh (one snapshot, bounded).
            shutil.rmtree(self.cache)
        if (self.cache / "objects").is_dir():
            self._repository_open = Repo(str(self.cache))
        else:
            self.cache.mkdir(parents=True, exist_ok=True)
            self._repository_open = Repo.init_bare(str(self.cache))
        return self._repository_open

    def _fetch(self, guard: Guard) -> tuple[Any, bytes]:
        """The repository, with the ref's commit fetched (depth 1) within the bounds; the
        commit's tree id."""
        from dulwich.client import get_transport_and_path
        from dulwich.objects import ObjectID
        from dulwich.refs import Ref

        repository = self._repository()
        client, path = get_transport_and_path(
            self.url,
            username=self.username,
            password=self.token,
            pool_manager=_pool_manager(guard, self.fetch_seconds),
        )
        wanted = [Ref(f"refs/heads/{self.ref}".encode()), Ref(f"refs/tags/{self.ref}".encode())]

        def determine_wants(
            refs: Mapping[Ref, ObjectID], depth: int | None = None
        ) -> list[ObjectID]:
            found = [refs[name] for name in wanted if name in refs]
            if not found:
                raise SourceError(f"the repository has no branch or tag named {self.ref!r}")
            return [sha for sha in found[:1] if sha not in repository.object_store]

        pack = _Pack(self.cache, self.fetch_max_bytes, self.fetch_max_objects, guard)
        with pack.file:
            result = client.fetch_pack(
                path, determine_wants, repository.get_graph_walker(), pack.write, depth=1
            )
            if pack.size:
                self._check_inflated(pack.file)
                repository.object_store.add_thin_pack(pack.file.read, None)
        repository.update_shallow(result.new_shallow, result.new_unshallow)
        head = next((result.refs[name] for name in wanted if name in result.refs), None)
        if head is None:
            raise SourceError(f"the repository has no branch or tag named {self.ref!r}")
        commit = repository[head]
        while commit.type_name == b"tag":  # an annotated tag: the commit it names
            commit = repository[commit.object[1]]
        repository.refs[Ref(FETCHED)] = commit.id
        return repository, commit.tree

    def _check_inflated(self, file: IO[bytes]) -> None:
        """What the received pack unpacks to is within the bound (read from its start, left
        at its start for the unpacking)."""
        file.seek(0)
        try:
            inflated_size(file, self.fetch_max_inflated)
        except PackTooLarge as exc:
            raise SourceLimit(
                f"the repository's objects for this branch or tag take more than "
                f"{_amount(self.fetch_max_inflated)} once unpacked ({exc}; "
                "SOURCES_GIT_MAX_INFLATED_BYTES): nothing of it was kept; choose a smaller "
                "repository or ask an administrator to raise the limit"
            ) from exc
        except PackUnreadable as exc:
            raise SourceError(f"what the repository sent cannot be read ({exc})") from exc
        file.seek(0)

    def _listing(self) -> list[SourceItem]:
        with Guard(self.allowed_hosts, self.fetch_seconds) as guard:
            try:
                repository, tree = self._fetch(guard)
                entries = list(repository.object_store.iter_tree_contents(tree))
            except SourceError:
                raise
            except Exception as exc:
                if guard.expired:
                    raise SourceError(
                        f"fetching the repository took longer than {self.fetch_seconds:g} s "
                        "(SOURCES_GIT_TIMEOUT_SECONDS): nothing of it was kept"
                    ) from exc
                raise SourceError(_reason(exc)) from exc
        prefix = f"{self.folder}/" if self.folder else ""
        items = []
        for entry in entries:
            path = entry.path.decode("utf-8", "replace")
            if not path.startswith(prefix) or entry.mode & 0o170000 != 0o100000:
                continue  # outside the folder, or a link or submodule rather than a file
            if posixpath.splitext(path)[1].lower() not in DOCUMENT_SUFFIXES:
                continue
            key = path[len(prefix) :]
            items.append(SourceItem(key, posixpath.basename(key), entry.sha.decode()))
        self._store = repository.object_store
        return items

    async def items(self) -> AsyncIterator[SourceItem]:
        for item in await asyncio.to_thread(self._listing):
            yield item

    def _read(self, item: SourceItem) -> bytes:
        """The blob as the listing saw it: a sync reads the commit it listed, whatever was
        pushed since (the next sync sees that)."""
        if self._store is None:
            raise SourceError("the repository has not been listed yet")
        try:
            blob = self._store[item.version.encode()]
        except KeyError as exc:
            raise SourceError(f"{item.key} is not in the fetched repository") from exc
        data: bytes = blob.as_raw_string()
        if len(data) > self.max_bytes:
            limit = self.max_bytes // (1024 * 1024)
            raise SourceError(f"it is larger than the limit of {limit} MB")
        return data

    @contextlib.asynccontextmanager
    async def open(self, item: SourceItem) -> AsyncIterator[ByteSource]:
        yield FileSource(io.BytesIO(await asyncio.to_thread(self._read, item)))


GIT = Connector(
    GitSource.from_settings,
    "Git repository",
    (
        Setting(
            "url",
            "Repository address",
            placeholder="https://git.example.com/team/handbook.git",
            type=SettingType.url,
            required=True,
            address=True,
        ),
        Setting("ref", "Branch or tag", placeholder="main"),
        Setting("folder", "Folder in it", placeholder="docs"),
        Setting("username", "User name", help="if the server wants one", secret=True),
        Setting(
            "token",
            "Access token",
            help="private repositories; stored encrypted, never shown again",
            secret=True,
        ),
    ),
)
