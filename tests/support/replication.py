"""A PostgreSQL primary and a streaming standby of it on loopback, each a server of its own
(`initdb`, then `pg_basebackup -R`, as an operator sets one up), for the tests of read replicas.

PostgreSQL refuses to run as root: under root both servers run as the `postgres` account."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.llm_server import free_port

DATABASE = "docchat"


def _bindir() -> Path:
    """The server programs' folder (Debian keeps them out of PATH)."""
    found = shutil.which("pg_ctl")
    if found is not None:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not versions:
        raise RuntimeError("PostgreSQL's server programs (pg_ctl, initdb) are not installed")
    return Path(versions[-1]).parent


def _as_server_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@dataclass
class Server:
    name: str
    data: Path
    port: int
    bindir: Path
    sockets: Path

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/{DATABASE}"

    def run(self, program: str, *arguments: str) -> str:
        completed = subprocess.run(  # noqa: S603
            _as_server_user([str(self.bindir / program), *arguments]),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if completed.returncode != 0:
            log = self.data.parent / f"{self.name}.log"
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            raise RuntimeError(f"{program} failed: {completed.stderr}\n{tail}")
        return completed.stdout

    def start(self, *settings: str) -> None:
        options = " ".join(
            [
                f"-p {self.port}",
                "-c listen_addresses=127.0.0.1",
                f"-c unix_socket_directories={self.sockets}",
                "-c fsync=off",
                *(f"-c {setting}" for setting in settings),
            ]
        )
        log = self.data.parent / f"{self.name}.log"
        self.run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(log), "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        with contextlib.suppress(RuntimeError):
            self.run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def sql_or_none(self, statement: str) -> str | None:
        """The statement's answer, or None when the server does not take it (it is down)."""
        try:
            return self.sql(statement)
        except RuntimeError:
            return None

    def sql(self, statement: str, database: str = DATABASE) -> str:
        return self.run(
            "psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database,
            "-Atqc", statement,
        ).strip()  # fmt: skip


@dataclass
class Replication:
    primary: Server
    standby: Server

    def caught_up(self, seconds: float = 30) -> None:
        """Until the standby has replayed everything the primary has written so far."""
        written = self.primary.sql("SELECT pg_current_wal_lsn()")
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.standby.sql(f"SELECT pg_last_wal_replay_lsn() >= '{written}'") == "t":
                return
            time.sleep(0.05)
        raise AssertionError("the standby never replayed the primary's log")


@contextlib.contextmanager
def primary_and_standby() -> Iterator[Replication]:
    """A primary with an empty `docchat` database, and a hot standby streaming from it."""
    bindir = _bindir()
    root = Path(tempfile.mkdtemp(prefix="docchat-replication-"))
    sockets = root / "sockets"
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sockets, "postgres")
    primary = Server("primary", root / "primary", free_port(), bindir, sockets)
    standby = Server("standby", root / "standby", free_port(), bindir, sockets)
    try:
        primary.run("initdb", "-D", str(primary.data), "-U", "postgres", "--auth=trust",
                    "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")  # fmt: skip
        primary.start("wal_level=replica", "max_wal_senders=4")
        primary.sql(f'CREATE DATABASE "{DATABASE}"', database="postgres")
        primary.run("pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U",
                    "postgres", "-D", str(standby.data), "-R", "-X", "stream", "-c", "fast",
                    "--no-sync")  # fmt: skip
        standby.start("hot_standby=on")
        yield Replication(primary, standby)
    finally:
        standby.stop("immediate")
        primary.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)
