"""The scope of a search is asked of PostgreSQL at every message, but an unchanged one is not
sent again: it comes back as this process last read it. What changes it (a new document, a
deletion, a new version, a share revoked) counts at the very next question."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.documents import repository
from docchat.ingestion.worker import IngestionWorker
from docchat.main.components import Components
from docchat.users.models import User
from tests.support.documents import upload, upload_and_process
from tests.support.users import auth_headers


async def _signed_up(
    client: httpx.AsyncClient, session: AsyncSession
) -> tuple[dict[str, str], User]:
    """A new user's headers, and the user as the repository takes it."""
    headers = await auth_headers(client)
    me = (await client.get("/api/v1/users/me", headers=headers)).json()
    statement = select(User).where(User.id == uuid.UUID(me["id"]))
    return headers, (await session.execute(statement)).scalar_one()


def _versions(scope: Any) -> dict[str, int]:
    return {str(document.id): document.version for document in scope}


async def test_an_unchanged_scope_is_reused_and_a_changed_one_read_at_once(
    client: httpx.AsyncClient, components: Components, session: AsyncSession
) -> None:
    headers, user = await _signed_up(client, session)
    first = await upload_and_process(client, components, headers, "a.md", b"Alpha notes.")
    scope = await repository.completed_refs(session, user)
    assert _versions(scope) == {first["id"]: 1}
    assert await repository.completed_refs(session, user) is scope  # not sent again
    assert scope.by_owner == {user.id: {uuid.UUID(first["id"]): 1}}

    second = await upload_and_process(client, components, headers, "b.md", b"Beta notes.")
    grown = await repository.completed_refs(session, user)
    assert _versions(grown) == {first["id"]: 1, second["id"]: 1}

    replaced = await client.post(
        f"/api/v1/documents/{second['id']}/versions",
        headers=headers,
        files={"file": ("b.md", b"Beta notes, second edition.")},
    )
    assert replaced.status_code == 202, replaced.text
    await IngestionWorker(components).run_until_idle()
    assert _versions(await repository.completed_refs(session, user)) == {
        first["id"]: 1,
        second["id"]: 2,
    }

    assert (await client.delete(f"/api/v1/documents/{first['id']}", headers=headers)).is_success
    assert _versions(await repository.completed_refs(session, user)) == {second["id"]: 2}


async def test_scopes_asked_differently_are_kept_apart(
    client: httpx.AsyncClient, components: Components, session: AsyncSession
) -> None:
    headers, user = await _signed_up(client, session)
    kept = await upload_and_process(client, components, headers, "a.md", b"Alpha notes.")
    queued = await upload(client, headers, "b.md", b"Beta notes.")  # not completed: no scope
    everything = await repository.completed_refs(session, user)
    only = await repository.completed_refs(session, user, among=[uuid.UUID(queued.json()["id"])])
    assert _versions(everything) == {kept["id"]: 1} and len(only) == 0
    assert await repository.completed_refs(session, user) is everything
    _, other = await _signed_up(client, session)
    assert len(await repository.completed_refs(session, other)) == 0
