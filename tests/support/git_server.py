"""A Git repository served over smart HTTP on loopback (dulwich's WSGI server, the protocol
`git clone https://...` speaks), with commits made by the test."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo
from dulwich.server import DictBackend
from dulwich.web import make_wsgi_chain


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


class _Threaded(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class Repository:
    """A bare repository whose branch `main` the test moves with `commit(files)`; the server
    counts the requests it gets and can be made slow (`pause_seconds`)."""

    def __init__(self, folder: Path) -> None:
        self.repo = Repo.init_bare(str(folder), mkdir=True)
        self.pause_seconds = 0.0  # how long the server waits before each answer (a slow one)
        self.requests = 0

    def _tree(self, files: Mapping[str, bytes]) -> bytes:
        """The tree of `files` (paths with "/"), its sub-trees and blobs stored."""
        store = self.repo.object_store
        folders: dict[str, dict[str, bytes]] = {}
        for path, content in files.items():
            blob = Blob.from_string(content)
            store.add_object(blob)
            parent, _, name = path.rpartition("/")
            folders.setdefault(parent, {})[name] = blob.id
        return self._folder("", folders)

    def _folder(self, prefix: str, folders: dict[str, dict[str, bytes]]) -> bytes:
        tree = Tree()
        for name, blob_id in folders.get(prefix, {}).items():
            tree.add(name.encode(), 0o100644, blob_id)
        children = {
            path[len(prefix) :].lstrip("/").split("/")[0]
            for path in folders
            if path != prefix and (not prefix or path.startswith(prefix + "/"))
        }
        for child in children:
            tree.add(
                child.encode(), 0o040000, self._folder(f"{prefix}/{child}".lstrip("/"), folders)
            )
        self.repo.object_store.add_object(tree)
        return tree.id

    def commit(self, files: Mapping[str, bytes], ref: bytes = b"refs/heads/main") -> bytes:
        commit = Commit()
        commit.tree = self._tree(files)
        parent = self.repo.refs.as_dict().get(ref)
        commit.parents = [parent] if parent else []
        commit.author = commit.committer = b"Docchat Test <test@example.com>"
        commit.author_time = commit.commit_time = int(time.time())
        commit.author_timezone = commit.commit_timezone = 0
        commit.encoding = b"UTF-8"
        commit.message = b"files"
        self.repo.object_store.add_object(commit)
        self.repo.refs[ref] = commit.id
        return commit.id


@contextlib.contextmanager
def git_server(folder: Path) -> Iterator[tuple[str, Repository]]:
    """The URL of a repository served while the block runs, and the repository."""
    repository = Repository(folder)
    git_app = make_wsgi_chain(DictBackend({"/": repository.repo}))

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        repository.requests += 1
        time.sleep(repository.pause_seconds)
        return git_app(environ, start_response)

    server = make_server("127.0.0.1", 0, app, server_class=_Threaded, handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/", repository
    finally:
        server.shutdown()
        server.server_close()
