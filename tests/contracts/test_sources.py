"""The source port (`Source`, registered in `SOURCES`): what every kind of sync connector
promises, run over each one. A kind registered without a maker here fails
`test_every_registered_source_is_tested`."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import docchat.main.components  # noqa: F401  (registers the implementations)
from docchat.sources.port import SOURCES, Source, SourceError, SourceItem, close_source
from tests.support.git_server import git_server
from tests.support.s3_server import (
    ACCESS_KEY_ID,
    SECRET_ACCESS_KEY,
    bucket_client,
    empty_and_remove,
    s3_server,
)
from tests.support.web_site import DocsSite

# A maker gets a folder of files (name -> bytes written there, below `docs`) and returns the
# source over them, and functions that change and remove one item in the source as its kind
# would; it may ask for fixtures (a server) through `request`.
Made = tuple[Source, Callable[[str, bytes], None], Callable[[str], None]]
Maker = Callable[[Path, pytest.FixtureRequest], Made]
BUCKET = "docchat-source"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    with s3_server() as endpoint:
        yield endpoint


def _folder(root: Path, _: pytest.FixtureRequest) -> Made:
    source = SOURCES.get("folder")({"path": str(root / "docs"), "allowed_roots": str(root)})

    def change(name: str, content: bytes) -> None:
        path = root / "docs" / name
        existed = path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        if not existed:
            return
        later = path.stat().st_mtime_ns + 2_000_000_000
        os.utime(path, ns=(later, later))

    def remove(name: str) -> None:
        (root / "docs" / name).unlink()

    return source, change, remove


def _s3(root: Path, request: pytest.FixtureRequest) -> Made:
    """The same files as objects below the prefix `team/docs` (an object beside it, under
    `team/docs-old`, and a "folder" object are not the source's files)."""
    endpoint = request.getfixturevalue("s3_endpoint")
    client = bucket_client(endpoint)
    client.create_bucket(Bucket=BUCKET)
    request.addfinalizer(lambda: empty_and_remove(client, BUCKET))
    client.put_object(Bucket=BUCKET, Key="team/docs-old/stale.md", Body=b"old")
    client.put_object(Bucket=BUCKET, Key="team/docs/folder/", Body=b"")

    def put(name: str, content: bytes) -> None:
        client.put_object(Bucket=BUCKET, Key=f"team/docs/{name}", Body=content)

    def remove(name: str) -> None:
        client.delete_object(Bucket=BUCKET, Key=f"team/docs/{name}")

    for name, content in FILES.items():
        put(name, content)
    settings = {
        "bucket": BUCKET,
        "prefix": "team/docs",
        "endpoint_url": endpoint,
        "access_key_id": ACCESS_KEY_ID,
        "secret_access_key": SECRET_ACCESS_KEY,
        "fetch_allowed_hosts": "127.0.0.1",  # the server is on loopback
    }
    return SOURCES.get("s3")(settings), put, remove


def _git(root: Path, request: pytest.FixtureRequest) -> Made:
    """The same files below `docs/` of branch `main` of a repository served over smart HTTP
    (beside them a source file, which is no document, and a file outside the folder)."""
    stack = contextlib.ExitStack()
    request.addfinalizer(stack.close)
    url, repository = stack.enter_context(git_server(root / "served.git"))
    files = {f"docs/{name}": content for name, content in FILES.items()}
    files |= {"docs/build.py": b"print('not a document')", "README.md": b"# Outside"}
    repository.commit(files)

    def change(name: str, content: bytes) -> None:
        files[f"docs/{name}"] = content
        repository.commit(files)

    def remove(name: str) -> None:
        del files[f"docs/{name}"]
        repository.commit(files)

    settings = {
        "url": url,
        "ref": "main",
        "folder": "docs",
        "cache_dir": str(root / "cache"),
        "fetch_allowed_hosts": "127.0.0.1",  # the server is on loopback
    }
    source = SOURCES.get("git")(settings)
    request.addfinalizer(lambda: close_source(source))
    return source, change, remove


def _website(root: Path, request: pytest.FixtureRequest) -> Made:
    """The same files under /docs/ of a site on loopback, found in its sitemap (no lastmod:
    each is fetched and hashed); a page outside /docs/ is not the source's."""
    site = DocsSite()
    request.addfinalizer(site.stop)
    site.pages["/elsewhere.md"] = (b"# Not in the folder", "text/markdown")

    def put(name: str, content: bytes) -> None:
        site.pages[f"/docs/{name}"] = (content, "text/plain")
        site.last_modified[f"/docs/{name}"] = LAST_MODIFIED

    def remove(name: str) -> None:
        del site.pages[f"/docs/{name}"]

    for name, content in FILES.items():
        put(name, content)
    settings = {
        "url": f"{site.base}/docs/sitemap.xml",
        "fetch_allowed_hosts": "127.0.0.1",
        "max_bytes": str(1024 * 1024),
    }
    source = SOURCES.get("website")(settings)
    request.addfinalizer(lambda: close_source(source))
    return source, put, remove


MAKERS: dict[str, Maker] = {"folder": _folder, "s3": _s3, "git": _git, "website": _website}
# Kinds that fetch a snapshot to list (a commit, a site's pages) and read items as it had them.
SNAPSHOTS = {"git", "website"}
# The day each kind says its items last changed: folders and buckets the day they were written
# (today), the site its `Last-Modified`; a Git branch fetched at depth 1 has no file's history.
LAST_MODIFIED = "Sat, 01 Apr 2023 09:30:00 GMT"
MODIFIED: dict[str, dt.date | None] = {
    "folder": dt.datetime.now(dt.UTC).date(),
    "s3": dt.datetime.now(dt.UTC).date(),
    "website": dt.date(2023, 4, 1),
    "git": None,
}
FILES = {"handbook.md": b"# Handbook\n\nHolidays: 25 days.", "notes/ferry.txt": b"Nine o'clock."}


def test_every_registered_source_is_tested() -> None:
    assert sorted(MAKERS) == SOURCES.names()


@pytest.fixture(params=sorted(MAKERS))
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def made(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Made:
    for name, content in FILES.items():
        (tmp_path / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "docs" / name).write_bytes(content)
    return MAKERS[kind](tmp_path, request)


async def _listed(source: Source) -> dict[str, SourceItem]:
    return {item.key: item async for item in source.items()}


async def test_items_are_listed_and_open_to_their_bytes(
    made: Made,
) -> None:
    source, _, _ = made
    listed = await _listed(source)
    assert sorted(listed) == sorted(FILES)
    assert listed["notes/ferry.txt"].name == "ferry.txt"
    for key, item in listed.items():
        async with source.open(item) as stream:
            assert await stream.read(-1) == FILES[key]


async def test_items_say_when_they_last_changed_where_the_kind_knows(made: Made, kind: str) -> None:
    source, _, _ = made
    listed = await _listed(source)
    assert {item.modified for item in listed.values()} == {MODIFIED[kind]}


async def test_a_version_changes_with_the_content_and_only_then(
    made: Made,
) -> None:
    source, change, _ = made
    before = await _listed(source)
    assert await _listed(source) == before, "nothing changed: the same versions"
    change("handbook.md", b"# Handbook\n\nHolidays: 30 days.")
    after = await _listed(source)
    assert after["handbook.md"].version != before["handbook.md"].version
    assert after["notes/ferry.txt"] == before["notes/ferry.txt"]


async def test_an_item_gone_since_the_listing_is_a_source_error_or_read_as_listed(
    made: Made, kind: str
) -> None:
    source, _, remove = made
    item = (await _listed(source))["handbook.md"]
    remove("handbook.md")
    if kind in SNAPSHOTS:
        async with source.open(item) as stream:
            assert await stream.read(-1) == FILES["handbook.md"]
        return
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


async def test_a_file_that_comes_and_goes_is_listed_then_not(made: Made) -> None:
    source, change, remove = made
    change("new/agenda.md", b"# Agenda")
    assert "new/agenda.md" in await _listed(source)
    remove("new/agenda.md")
    assert "new/agenda.md" not in await _listed(source)
