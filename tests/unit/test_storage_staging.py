"""Temporary files a killed process left in the staging folder are swept at start."""

from __future__ import annotations

import os
import time
from pathlib import Path

from docchat.documents.storage import STALE_STAGING_SECONDS, LocalFileStorage


def _file(path: Path, age_seconds: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x")
    then = time.time() - age_seconds
    os.utime(path, (then, then))
    return path


async def test_only_stale_temporary_files_are_swept(tmp_path: Path) -> None:
    storage = LocalFileStorage(tmp_path)
    old = STALE_STAGING_SECONDS + 3600
    left_upload = _file(tmp_path / ".upload-abc123", old)
    left_copy = _file(tmp_path / ".copy-def456", old)
    # Another process sharing the folder may be receiving this one right now.
    receiving = _file(tmp_path / ".upload-ghi789", 60)
    stored = _file(tmp_path / "ab" / ("ab" + "0" * 62), old)
    other = _file(tmp_path / "notes.txt", old)

    assert await storage.sweep_staging() == 2

    assert not left_upload.exists() and not left_copy.exists()
    assert receiving.exists() and stored.exists() and other.exists()


async def test_a_missing_staging_folder_is_nothing_to_sweep(tmp_path: Path) -> None:
    assert await LocalFileStorage(tmp_path / "not-yet").sweep_staging() == 0
