"""The source port (`Source`, registered in `SOURCES`): what every kind of sync connector
promises, run over each one. A kind registered without a maker here fails
`test_every_registered_source_is_tested`."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

import docchat.main.components  # noqa: F401  (registers the implementations)
from docchat.sources.port import SOURCES, Source, SourceError, SourceItem

# A maker gets a folder of files (name -> bytes written there) and returns the source over
# them, and a function that changes one item's content in the source as its kind would.
Maker = Callable[[Path], tuple[Source, Callable[[str, bytes], None]]]


def _folder(root: Path) -> tuple[Source, Callable[[str, bytes], None]]:
    source = SOURCES.get("folder")({"path": str(root / "docs"), "allowed_roots": str(root)})

    def change(name: str, content: bytes) -> None:
        path = root / "docs" / name
        path.write_bytes(content)
        later = path.stat().st_mtime_ns + 2_000_000_000
        os.utime(path, ns=(later, later))

    return source, change


MAKERS: dict[str, Maker] = {"folder": _folder}
FILES = {"handbook.md": b"# Handbook\n\nHolidays: 25 days.", "notes/ferry.txt": b"Nine o'clock."}


def test_every_registered_source_is_tested() -> None:
    assert sorted(MAKERS) == SOURCES.names()


@pytest.fixture(params=sorted(MAKERS))
def made(
    request: pytest.FixtureRequest, tmp_path: Path
) -> tuple[Source, Callable[[str, bytes], None]]:
    for name, content in FILES.items():
        (tmp_path / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "docs" / name).write_bytes(content)
    return MAKERS[request.param](tmp_path)


async def _listed(source: Source) -> dict[str, SourceItem]:
    return {item.key: item async for item in source.items()}


async def test_items_are_listed_and_open_to_their_bytes(
    made: tuple[Source, Callable[[str, bytes], None]],
) -> None:
    source, _ = made
    listed = await _listed(source)
    assert sorted(listed) == sorted(FILES)
    assert listed["notes/ferry.txt"].name == "ferry.txt"
    for key, item in listed.items():
        async with source.open(item) as stream:
            assert await stream.read(-1) == FILES[key]


async def test_a_version_changes_with_the_content_and_only_then(
    made: tuple[Source, Callable[[str, bytes], None]],
) -> None:
    source, change = made
    before = await _listed(source)
    assert await _listed(source) == before, "nothing changed: the same versions"
    change("handbook.md", b"# Handbook\n\nHolidays: 30 days.")
    after = await _listed(source)
    assert after["handbook.md"].version != before["handbook.md"].version
    assert after["notes/ferry.txt"] == before["notes/ferry.txt"]


async def test_an_item_gone_since_the_listing_is_a_source_error(
    made: tuple[Source, Callable[[str, bytes], None]], tmp_path: Path
) -> None:
    source, _ = made
    item = (await _listed(source))["handbook.md"]
    (tmp_path / "docs" / "handbook.md").unlink()
    with pytest.raises(SourceError):
        async with source.open(item):
            pass


def test_a_folder_outside_the_allowed_roots_is_refused(tmp_path: Path) -> None:
    (tmp_path / "inside").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "inside" / "escape").symlink_to(tmp_path / "outside")
    factory = SOURCES.get("folder")
    for path in (tmp_path / "outside", tmp_path / "inside" / "escape", tmp_path / "inside" / ".."):
        with pytest.raises(SourceError):
            factory({"path": str(path), "allowed_roots": str(tmp_path / "inside")})
