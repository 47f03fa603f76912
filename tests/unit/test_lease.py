"""The workers' lease (`kit.lease`), on its own and as the one lease of the code base: the
ingestion worker and the source sync both hold their rows through it, so the fence (a worker
whose claim was taken writes nothing) is written once."""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import pytest

from docchat.kit.lease import Lease, LostClaim

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "docchat"
LEASE = PACKAGE / "kit" / "lease.py"


class _Session:
    def __init__(self) -> None:
        self.committed = False

    async def commit(self) -> None:
        self.committed = True

    async def __aenter__(self) -> _Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


def _lease(
    hold: Callable[[Any], Any],
    beat: Callable[[Any, datetime], Any] | None = None,
    sessions: list[_Session] | None = None,
) -> Lease[Any]:
    opened = sessions if sessions is not None else []

    def sessionmaker() -> _Session:
        opened.append(_Session())
        return opened[-1]

    async def alive(session: Any, now: datetime) -> bool:
        return True

    return Lease(
        cast(Any, sessionmaker),
        hold=hold,
        beat=beat or alive,
        heartbeat_seconds=0.01,
        name="job 1",
        lost_message="job 1 was taken over by another worker",
    )


async def test_a_fenced_transaction_commits_only_while_the_claim_holds() -> None:
    async def ours(session: Any) -> bool:
        return True

    async def taken(session: Any) -> None:
        return None

    sessions: list[_Session] = []
    async with _lease(ours, sessions=sessions).fenced():
        pass
    assert sessions[-1].committed

    wrote = False
    with pytest.raises(LostClaim, match="taken over"):
        async with _lease(taken, sessions=sessions).fenced():
            wrote = True
    assert not wrote and not sessions[-1].committed


async def test_heartbeats_outlast_a_failed_beat_and_stop_once_the_claim_is_gone() -> None:
    beats: list[str] = []

    async def beat(session: Any, now: datetime) -> bool:
        beats.append("beat")
        if len(beats) == 1:
            raise ConnectionError("the database blinked")
        return len(beats) < 3

    async def ours(session: Any) -> bool:
        return True

    lost = asyncio.Event()
    await asyncio.wait_for(_lease(ours, beat).heartbeats(lost), timeout=10)
    assert lost.is_set() and len(beats) == 3


def _defined_classes(name: str) -> list[str]:
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name == name:
                found.append(str(path.relative_to(PACKAGE)))
    return found


def _heartbeat_sleeps() -> list[str]:
    """Where a loop sleeps for `heartbeat_seconds`: a heartbeat of its own."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "sleep"
                and "heartbeat_seconds" in ast.unparse(node)
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_the_lease_is_written_once() -> None:
    assert _defined_classes("LostClaim") == ["kit/lease.py"]
    assert [where.split(":")[0] for where in _heartbeat_sleeps()] == ["kit/lease.py"]
