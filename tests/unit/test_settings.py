from __future__ import annotations

import pytest
from pydantic import ValidationError

from docchat.config import AuthSettings, Environment, IndexingSettings, Settings


def test_production_refuses_the_default_secret() -> None:
    with pytest.raises(ValidationError, match="AUTH_SECRET_KEY must be set"):
        Settings(_env_file=None, environment=Environment.production)  # type: ignore[call-arg]


def test_production_refuses_a_short_secret() -> None:
    auth = AuthSettings(_env_file=None, secret_key="too-short")  # type: ignore[call-arg, arg-type]
    with pytest.raises(ValidationError, match="at least 32 characters"):
        Settings(_env_file=None, environment=Environment.production, auth=auth)  # type: ignore[call-arg]


def test_production_starts_with_a_real_secret() -> None:
    auth = AuthSettings(_env_file=None, secret_key="x" * 40)  # type: ignore[call-arg, arg-type]
    settings = Settings(_env_file=None, environment=Environment.production, auth=auth)  # type: ignore[call-arg]
    assert settings.environment is Environment.production


def test_overlap_must_be_smaller_than_chunks() -> None:
    with pytest.raises(ValidationError, match="RAG_CHUNK_OVERLAP"):
        IndexingSettings(_env_file=None, chunk_size=500, chunk_overlap=500)  # type: ignore[call-arg]


PRIMARY = "postgresql+asyncpg://postgres@primary:5432/docchat"


@pytest.mark.parametrize(
    ("replicas", "message"),
    [
        (["postgresql://standby/docchat"], "must start with postgresql\\+asyncpg://"),
        ([PRIMARY], "lists DATABASE_URL itself"),
    ],
)
def test_read_replicas_are_asyncpg_urls_of_other_servers(replicas: list[str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Settings(_env_file=None, database_url=PRIMARY, database_replica_urls=replicas)  # type: ignore[call-arg]


def test_read_replicas_are_read_from_the_environment_as_a_json_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    standby = "postgresql+asyncpg://postgres@standby:5432/docchat"
    monkeypatch.setenv("DATABASE_REPLICA_URLS", f'["{standby}"]')
    assert Settings(_env_file=None).database_replica_urls == [standby]  # type: ignore[call-arg]
