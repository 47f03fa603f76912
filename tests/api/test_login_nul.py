"""A NUL in a login's user name is a failed login, not a server error (PostgreSQL refuses NUL
in text, so the lookup must not send it)."""

from __future__ import annotations

import httpx


async def test_a_nul_in_the_user_name_is_a_failed_login(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/api/v1/auth/login", data={"username": "admin\x00@example.com", "password": "whatever1"}
    )
    assert response.status_code == 401, response.text
