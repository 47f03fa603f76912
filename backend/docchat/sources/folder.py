"""A folder on the server as a source: its files, below an administrator's allow-listed root.

Every path is resolved and must stay inside the root (no `..`, no symbolic link that leads
out); a file's version is its modification time and size, which is what `rsync` and
`make` trust too.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

from docchat.documents.storage import ByteSource, FileSource
from docchat.extraction.dates import timestamp_date
from docchat.sources.port import Connector, Setting, SourceError, SourceItem


class FolderSource:
    def __init__(self, folder: Path, allowed_roots: list[Path]) -> None:
        resolved = folder.resolve()
        if not any(resolved.is_relative_to(root.resolve()) for root in allowed_roots):
            raise SourceError(f"{folder} is not inside a folder sources may read")
        if not resolved.is_dir():
            raise SourceError(f"{folder} is not a folder")
        self.folder = resolved

    @classmethod
    def from_settings(cls, settings: Mapping[str, str]) -> FolderSource:
        roots = [Path(root) for root in settings.get("allowed_roots", "").split(":") if root]
        return cls(Path(settings["path"]), roots)

    def _inside(self, path: Path) -> Path | None:
        resolved = path.resolve()
        return resolved if resolved.is_relative_to(self.folder) else None

    def _listing(self) -> list[SourceItem]:
        found = []
        for path in sorted(self.folder.rglob("*")):
            inside = self._inside(path)
            if inside is None or not inside.is_file() or path.name.startswith("."):
                continue
            stat = inside.stat()
            key = path.relative_to(self.folder).as_posix()
            version = f"{stat.st_mtime_ns}-{stat.st_size}"
            modified = timestamp_date(stat.st_mtime)
            found.append(SourceItem(key, path.name, version, stat.st_size, modified))
        return found

    def _listing_or_error(self) -> list[SourceItem]:
        try:
            return self._listing()
        except OSError as exc:  # unreadable, unmounted, a file gone while listing
            raise SourceError(f"the folder could not be read ({exc.strerror or exc})") from exc

    async def items(self) -> AsyncIterator[SourceItem]:
        for item in await asyncio.to_thread(self._listing_or_error):
            yield item

    @contextlib.asynccontextmanager
    async def open(self, item: SourceItem) -> AsyncIterator[ByteSource]:
        path = self._inside(self.folder / item.key)
        if path is None or not path.is_file():
            raise SourceError(f"{item.key} is no longer in the folder")
        file = await asyncio.to_thread(path.open, "rb")
        try:
            yield FileSource(file)
        finally:
            await asyncio.to_thread(file.close)


FOLDER = Connector(
    FolderSource.from_settings,
    "Folder on the server",
    (Setting("path", "Folder", placeholder="/srv/shared/handbooks", required=True, target=True),),
    administrators_only=True,
)
