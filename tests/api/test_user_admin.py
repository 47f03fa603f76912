"""User administration (API and command line) and the audit log that records it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import text, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.main.cli import main
from docchat.users.models import Role, User
from tests.support.users import PASSWORD, admin_headers, auth_headers, login, unique_email

NEW_PASSWORD = "purple elephant staircase"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def audit(
    client: httpx.AsyncClient, admin: dict[str, str], **filters: Any
) -> list[dict[str, Any]]:
    response = await client.get("/api/v1/admin/audit", headers=admin, params=filters)
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


async def test_created_user_must_choose_a_password_before_anything_else(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    admin = await admin_headers(client, session)
    email = unique_email("new")
    created = await client.post(
        "/api/v1/admin/users", headers=admin, json={"email": email, "display_name": "New"}
    )
    assert created.status_code == 201, created.text
    body = created.json()
    temporary = body["temporary_password"]
    assert body["must_change_password"] and body["role"] == "user" and len(temporary) >= 12

    tokens = (await login(client, email, temporary)).json()
    assert tokens["password_change_required"] is True
    first = bearer(tokens["access_token"])
    me = await client.get("/api/v1/users/me", headers=first)
    assert me.status_code == 200 and me.json()["must_change_password"] is True
    blocked = await client.get("/api/v1/chats", headers=first)
    assert blocked.status_code == 403 and "choose a new one" in blocked.json()["detail"]

    wrong = await client.post(
        "/api/v1/users/me/password",
        headers=first,
        json={"current_password": "not it at all", "new_password": NEW_PASSWORD},
    )
    assert wrong.status_code == 403
    weak = await client.post(
        "/api/v1/users/me/password",
        headers=first,
        json={"current_password": temporary, "new_password": "password1"},
    )
    assert weak.status_code == 422
    changed = await client.post(
        "/api/v1/users/me/password",
        headers=first,
        json={"current_password": temporary, "new_password": NEW_PASSWORD},
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["password_change_required"] is False
    # The token from before the change is void; the one the change returned works.
    assert (await client.get("/api/v1/chats", headers=first)).status_code == 401
    after = bearer(changed.json()["access_token"])
    assert (await client.get("/api/v1/chats", headers=after)).status_code == 200
    assert (await login(client, email, NEW_PASSWORD)).status_code == 200
    assert (await login(client, email, temporary)).status_code == 401

    user_id = body["id"]
    actions = [entry["action"] for entry in await audit(client, admin, target_id=user_id)]
    assert {"user.created", "auth.login", "auth.password_changed"} <= set(actions)


async def test_deactivation_stops_tokens_at_once_and_reactivation_restores_login(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    admin = await admin_headers(client, session)
    email = unique_email("leaver")
    user = await auth_headers(client, email)
    user_id = (await client.get("/api/v1/users/me", headers=user)).json()["id"]

    off = await client.patch(
        f"/api/v1/admin/users/{user_id}", headers=admin, json={"is_active": False}
    )
    assert off.status_code == 200 and off.json()["is_active"] is False
    assert (await client.get("/api/v1/chats", headers=user)).status_code == 401
    refused = await login(client, email)
    # Told why, once the password is right (a wrong one is still just "incorrect").
    assert refused.status_code == 403 and "deactivated" in refused.json()["detail"]
    wrong = await client.post(
        "/api/v1/auth/login", data={"username": email, "password": "not the password"}
    )
    assert wrong.status_code == 401 and wrong.json()["detail"] == "Incorrect email or password"
    on = await client.patch(
        f"/api/v1/admin/users/{user_id}", headers=admin, json={"is_active": True}
    )
    assert on.status_code == 200
    assert (await login(client, email)).status_code == 200

    entries = await audit(client, admin, target_id=user_id)
    actions = [entry["action"] for entry in entries]
    assert "user.deactivated" in actions and "user.reactivated" in actions
    failures = [entry for entry in entries if entry["action"] == "auth.login_failed"]
    assert {failure["detail"]["reason"] for failure in failures} == {"inactive", "password"}
    assert all(failure["actor_email"] == email for failure in failures)


async def test_role_changes_and_the_last_administrator(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    await session.execute(update(User).where(User.role == Role.admin).values(role=Role.user))
    admin = await admin_headers(client, session)
    admin_id = (await client.get("/api/v1/users/me", headers=admin)).json()["id"]
    last = await client.patch(
        f"/api/v1/admin/users/{admin_id}", headers=admin, json={"role": "user"}
    )
    assert last.status_code == 409 and "last active administrator" in last.json()["detail"]
    alone = await client.patch(
        f"/api/v1/admin/users/{admin_id}", headers=admin, json={"is_active": False}
    )
    assert alone.status_code == 409

    other = await auth_headers(client)
    other_id = (await client.get("/api/v1/users/me", headers=other)).json()["id"]
    promoted = await client.patch(
        f"/api/v1/admin/users/{other_id}", headers=admin, json={"role": "admin"}
    )
    assert promoted.status_code == 200 and promoted.json()["role"] == "admin"
    assert (await client.get("/api/v1/admin/usage", headers=other)).status_code == 200
    # With a second administrator the first may step down.
    down = await client.patch(
        f"/api/v1/admin/users/{admin_id}", headers=admin, json={"role": "user"}
    )
    assert down.status_code == 200
    assert (await client.get("/api/v1/admin/usage", headers=admin)).status_code == 403
    entry = (await audit(client, other, action="user.role_changed", target_id=admin_id))[0]
    assert entry["detail"] == {
        "email": entry["detail"]["email"],
        "before": "admin",
        "after": "user",
    }


async def test_password_reset_ends_sessions_and_forces_a_change(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    admin = await admin_headers(client, session)
    email = unique_email("forgetful")
    user = await auth_headers(client, email)
    user_id = (await client.get("/api/v1/users/me", headers=user)).json()["id"]
    reset = await client.post(f"/api/v1/admin/users/{user_id}/reset-password", headers=admin)
    assert reset.status_code == 200
    assert (await client.get("/api/v1/users/me", headers=user)).status_code == 401
    assert (await login(client, email)).status_code == 401
    tokens = (await login(client, email, reset.json()["temporary_password"])).json()
    assert tokens["password_change_required"] is True


async def test_listing_searches_and_filters(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    admin = await admin_headers(client, session)
    tag = unique_email("zebra").split("@")[0]
    await auth_headers(client, f"{tag}@example.com")
    await auth_headers(client, f"{tag}-2@example.com")
    found = await client.get("/api/v1/admin/users", headers=admin, params={"q": tag, "limit": 1})
    assert found.status_code == 200
    assert found.json()["total"] == 2 and len(found.json()["items"]) == 1
    wildcard = await client.get("/api/v1/admin/users", headers=admin, params={"q": "%"})
    assert wildcard.json()["total"] == 0  # `%` is a character here, not "anything"
    admins = await client.get("/api/v1/admin/users", headers=admin, params={"role": "admin"})
    assert all(item["role"] == "admin" for item in admins.json()["items"])


async def test_admin_routes_are_refused_to_users_and_unknown_ids_are_404(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    user = await auth_headers(client)
    admin = await admin_headers(client, session)
    for method, path in (
        ("GET", "/api/v1/admin/users"),
        ("POST", "/api/v1/admin/users"),
        ("GET", "/api/v1/admin/audit"),
    ):
        response = await client.request(method, path, headers=user, json={"email": "x@example.com"})
        assert response.status_code == 403, (method, path)
    missing = "00000000-0000-0000-0000-000000000000"
    assert (await client.get(f"/api/v1/admin/users/{missing}", headers=admin)).status_code == 404
    duplicate = await client.post(
        "/api/v1/admin/users",
        headers=admin,
        json={"email": unique_email(), "password": "password"},
    )
    assert duplicate.status_code == 422  # an administrator's password must be strong too


async def test_the_audit_log_cannot_be_changed(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    admin = await admin_headers(client, session)
    assert (await login(client, unique_email("nobody"), PASSWORD)).status_code == 401
    entries = await audit(client, admin, action="auth.login_failed")
    assert entries and entries[0]["detail"]["reason"] == "unknown email"
    for statement in ("UPDATE audit_log SET action = 'x'", "DELETE FROM audit_log"):
        with pytest.raises(DBAPIError, match="append-only"):
            async with session.begin_nested():
                await session.execute(text(statement))
    assert (await client.delete("/api/v1/admin/audit", headers=admin)).status_code == 405


def test_command_line_user_administration(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, database_url: str
) -> None:
    monkeypatch.setenv("DATABASE_URL", database_url)
    from docchat.config import get_settings

    get_settings.cache_clear()
    email = unique_email("cli")
    try:
        main(["users", "create", email, "--name", "Cli"])
        created = capsys.readouterr().out
        assert "temporary password:" in created
        main(["users", "list", "--search", email])
        assert email in capsys.readouterr().out
        main(["users", "deactivate", email])
        assert "deactivated" in capsys.readouterr().out
        main(["users", "reset-password", email])
        assert "temporary password" in capsys.readouterr().out
        with pytest.raises(SystemExit, match="already exists"):
            main(["users", "create", email])
        with pytest.raises(SystemExit, match="No user"):
            main(["users", "reactivate", unique_email("ghost")])
    finally:
        get_settings.cache_clear()


async def test_the_user_list_says_when_each_account_was_last_active(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    admin = await admin_headers(client, session)
    active = unique_email("active")
    await auth_headers(client, active)  # signs up and logs in
    created = await client.post(
        "/api/v1/admin/users", headers=admin, json={"email": unique_email("idle")}
    )
    idle = created.json()["email"]
    listed = await client.get("/api/v1/admin/users", headers=admin, params={"limit": 100})
    by_email = {user["email"]: user for user in listed.json()["items"]}
    assert by_email[active]["last_active_at"] is not None
    assert by_email[idle]["last_active_at"] is None
