from __future__ import annotations

import uuid

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.users import service as users_service
from docchat.users.models import Role

PASSWORD = "correct horse battery"


def unique_email(prefix: str = "user") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}@example.com"


async def register(client: httpx.AsyncClient, email: str | None = None) -> str:
    email = email or unique_email()
    response = await client.post(
        "/api/v1/auth/register", json={"email": email, "password": PASSWORD}
    )
    assert response.status_code == 201, response.text
    return email


async def login(client: httpx.AsyncClient, email: str, password: str = PASSWORD) -> httpx.Response:
    return await client.post("/api/v1/auth/login", data={"username": email, "password": password})


async def auth_headers(client: httpx.AsyncClient, email: str | None = None) -> dict[str, str]:
    email = await register(client, email)
    response = await login(client, email)
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['access_token']}"}


async def admin_headers(client: httpx.AsyncClient, session: AsyncSession) -> dict[str, str]:
    email = unique_email("admin")
    await users_service.create(session, email=email, password=PASSWORD, role=Role.admin)
    await session.commit()
    response = await login(client, email)
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['access_token']}"}
