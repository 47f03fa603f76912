"""Fuzz every operation from the API's own OpenAPI schema against a live server on loopback.

Whatever schemathesis sends (valid or not), the server must answer without a 5xx and without
leaking a stack trace. Examples per operation are bounded so the run stays short.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from docchat.config import Settings, WorkerSettings
from docchat.main.app import create_app
from tests.support import glossary
from tests.support.live_server import LiveServer
from tests.support.users import PASSWORD

schema = schemathesis.openapi.from_dict(create_app().openapi())


@pytest.fixture(scope="module")
def fuzz_server(
    settings: Settings, tmp_path_factory: pytest.TempPathFactory, compiled_glossary: Path
) -> Iterator[LiveServer]:
    fuzz_settings = settings.model_copy(
        update={
            "data_dir": glossary.seed(compiled_glossary, tmp_path_factory.mktemp("fuzz-data")),
            "worker": WorkerSettings(_env_file=None, enabled=False),  # type: ignore[call-arg]
        }
    )
    server = LiveServer(fuzz_settings).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def token(fuzz_server: LiveServer) -> str:
    email = f"fuzz-{uuid.uuid4().hex[:8]}@example.com"
    with httpx.Client(base_url=fuzz_server.url) as client:
        client.post("/api/v1/auth/register", json={"email": email, "password": PASSWORD})
        response = client.post("/api/v1/auth/login", data={"username": email, "password": PASSWORD})
        return str(response.json()["access_token"])


@schema.parametrize()
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_server_errors(case: schemathesis.Case, fuzz_server: LiveServer, token: str) -> None:
    response = case.call(
        base_url=fuzz_server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    failure = (case.method, case.path, case.query, case.body, response.status_code)
    assert response.status_code < 500, failure
    assert b"Traceback" not in response.content  # bytes: some answers are files (a zip)


@pytest.fixture(scope="module")
def admin_token(fuzz_server: LiveServer, settings: Settings) -> str:
    """An administrator made the way an operator would (ADMIN_* is not set on this server)."""
    import asyncio

    from docchat.db import create_engine, create_sessionmaker, session_scope
    from docchat.users import service as users_service
    from docchat.users.models import Role

    email = f"fuzz-admin-{uuid.uuid4().hex[:8]}@example.com"

    async def make_admin() -> None:
        engine = create_engine(settings.database_url, pool_size=1)
        async with session_scope(create_sessionmaker(engine)) as session:
            await users_service.create(session, email=email, password=PASSWORD, role=Role.admin)
        await engine.dispose()

    asyncio.run(make_admin())
    with httpx.Client(base_url=fuzz_server.url) as client:
        response = client.post("/api/v1/auth/login", data={"username": email, "password": PASSWORD})
        return str(response.json()["access_token"])


@schema.include(path_regex="^/api/v1/admin").parametrize()
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_server_errors_as_administrator(
    case: schemathesis.Case, fuzz_server: LiveServer, admin_token: str
) -> None:
    """The administration routes, fuzzed with the rights to reach past their 403."""
    response = case.call(
        base_url=fuzz_server.url, headers={"Authorization": f"Bearer {admin_token}"}, timeout=30
    )
    failure = (case.method, case.path, case.query, case.body, response.status_code)
    assert response.status_code < 500, failure
    assert b"Traceback" not in response.content  # bytes: some answers are files (a zip)
