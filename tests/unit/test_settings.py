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
