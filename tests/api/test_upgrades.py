"""Upgrades from any release: a database filled under the first schema, and again under every
later one, migrated one release at a time to the newest, loses nothing and still serves its
people through the API."""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import uuid
from typing import Any

import httpx
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncConnection

from docchat.db import create_engine, create_sessionmaker
from docchat.main.app import attach_components, create_app
from docchat.main.components import Components
from docchat.main.doctor import migration_chain
from docchat.users.passwords import hash_password_now
from tests.support.database import alembic, create_database, drop_database
from tests.support.users import PASSWORD, login

EARLY = "early.adopter@example.com"


async def fill_the_first_schema(connection: AsyncConnection) -> dict[str, str]:
    """What a team had under the first release: an account, a read document, a chat with a
    cited answer, the document's finished job."""
    user, document, chat = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    digest = hashlib.sha256(b"handbook").hexdigest()
    now = datetime.datetime.now(datetime.UTC)
    common = {"created_at": now, "updated_at": now}
    statements: list[tuple[str, dict[str, Any]]] = [
        (
            "INSERT INTO users (id, email, password_hash, display_name, role, is_active, "
            "created_at, updated_at) VALUES (:id, :email, :hash, 'Early Adopter', 'user', true, "
            ":created_at, :updated_at)",
            {"id": user, "email": EARLY, "hash": hash_password_now(PASSWORD)},
        ),
        (
            "INSERT INTO documents (id, owner_id, visibility, filename, content_type, "
            "size_bytes, sha256, storage_key, status, page_count, chunk_count, pages_done, "
            "chunks_done, created_at, updated_at) VALUES (:id, :owner, 'private', "
            "'handbook.pdf', 'application/pdf', 1234, :sha, :key, 'completed', 3, 5, 3, 5, "
            ":created_at, :updated_at)",
            {"id": document, "owner": user, "sha": digest, "key": f"{digest[:2]}/{digest}"},
        ),
        (
            "INSERT INTO ingestion_jobs (id, document_id, status, attempts, available_at, "
            "created_at, updated_at) VALUES (:id, :document, 'done', 1, :created_at, "
            ":created_at, :updated_at)",
            {"id": uuid.uuid4(), "document": document},
        ),
        (
            "INSERT INTO chats (id, owner_id, title, created_at, updated_at) "
            "VALUES (:id, :owner, 'First chat', :created_at, :updated_at)",
            {"id": chat, "owner": user},
        ),
        (
            "INSERT INTO messages (id, chat_id, role, content, created_at, updated_at) "
            "VALUES (:id, :chat, 'user', 'When does the ferry leave?', :created_at, :updated_at)",
            {"id": uuid.uuid4(), "chat": chat},
        ),
        (
            "INSERT INTO messages (id, chat_id, role, content, sources, model, created_at, "
            "updated_at) VALUES (:id, :chat, 'assistant', 'At nine [1].', "
            "CAST(:sources AS jsonb), 'm', :created_at, :updated_at)",
            {
                "id": uuid.uuid4(),
                "chat": chat,
                "sources": json.dumps(
                    [
                        {
                            "document_id": str(document),
                            "document_name": "handbook.pdf",
                            "chunk_id": f"{document}_0",
                            "page": 2,
                            "similarity": 0.8,
                            "content_preview": "The ferry leaves at nine.",
                        }
                    ]
                ),
            },
        ),
    ]
    for statement, values in statements:
        await connection.execute(sa.text(statement), {**common, **values})
    return {"document": str(document), "chat": str(chat)}


def _value(column: sa.Column[Any], step: int, parents: dict[str, Any]) -> Any:
    """A value of the column's type (a row the schema accepts, if not one the app writes)."""
    kind = column.type
    if column.foreign_keys:
        return parents.get(next(iter(column.foreign_keys)).column.table.name)
    if isinstance(kind, sa.Uuid):
        return uuid.uuid4()
    if isinstance(kind, sa.Boolean):
        return False
    if isinstance(kind, sa.Integer):
        return 1
    if isinstance(kind, sa.Float | sa.Numeric):
        return 1.0
    if isinstance(kind, sa.DateTime):
        return datetime.datetime.now(datetime.UTC)
    if isinstance(kind, postgresql.JSONB | sa.JSON):
        return {}
    if isinstance(kind, postgresql.ARRAY):
        return []
    if isinstance(kind, postgresql.TSVECTOR):
        return sa.func.to_tsvector(sa.literal_column("'simple'::regconfig"), "the ferry at nine")
    if isinstance(kind, sa.String):
        return f"r{step}-{uuid.uuid4().hex[:8]}"[: kind.length or 100]
    return None


async def fill_every_table(connection: AsyncConnection, step: int) -> None:
    """One more row in every table of the schema as it is now, parents first (a table whose
    checks refuse a made-up row is left as it is)."""
    metadata = sa.MetaData()
    await connection.run_sync(metadata.reflect)
    parents: dict[str, Any] = {}
    for table in metadata.sorted_tables:
        if table.name == "alembic_version":
            continue
        row: dict[str, Any] = {}
        for column in table.columns:
            if column.server_default is not None and not column.primary_key:
                continue
            value = _value(column, step, parents)
            if value is None and not column.nullable:
                row = {}
                break
            row[column.name] = value
        if not row:
            continue
        try:
            async with connection.begin_nested():
                await connection.execute(table.insert().values(**row))
        except sa.exc.DBAPIError:
            continue
        keys = list(table.primary_key.columns)
        if len(keys) == 1:
            parents[table.name] = row.get(keys[0].name)


async def row_counts(connection: AsyncConnection) -> dict[str, int]:
    names = await connection.run_sync(lambda sync: sa.inspect(sync).get_table_names())
    return {
        name: int(
            await connection.scalar(sa.select(sa.func.count()).select_from(sa.table(name))) or 0
        )
        for name in names
        if name != "alembic_version"
    }


async def test_every_release_upgrades_to_the_newest_with_its_data(
    components: Components,
) -> None:
    chain = migration_chain()
    url = await create_database("docchat_upgrades")
    engine = create_engine(url, pool_size=1)
    try:
        await alembic(url, "upgrade", chain[0])
        async with engine.begin() as connection:
            made = await fill_the_first_schema(connection)
        counts: dict[str, int] = {}
        for step, revision in enumerate(chain):
            await alembic(url, "upgrade", revision)
            async with engine.begin() as connection:
                now = await row_counts(connection)
                # Nothing filled under an earlier release is lost by this one.
                lost = {
                    name: (n, now.get(name)) for name, n in counts.items() if now.get(name, 0) < n
                }
                assert not lost, f"{revision} lost rows: {lost}"
                await fill_every_table(connection, step)
                counts = await row_counts(connection)

        # Every table of the newest schema was filled under some release, but for two whose
        # checks no made-up row passes (a collection member is a user, a group or an invited
        # address, exactly one; a cached answer's key is derived).
        empty = sorted(name for name, n in counts.items() if n == 0)
        assert empty == ["answer_cache", "collection_members"], empty

        # The newest release serves what the first one stored.
        upgraded = dataclasses.replace(components, sessionmaker=create_sessionmaker(engine))
        app = create_app(components.settings, run_worker=False)
        attach_components(app, upgraded)
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://docchat.test") as client:
            signed_in = await login(client, EARLY)
            assert signed_in.status_code == 200, signed_in.text
            headers = {"Authorization": f"Bearer {signed_in.json()['access_token']}"}
            document = await client.get(f"/api/v1/documents/{made['document']}", headers=headers)
            assert document.status_code == 200, document.text
            assert document.json()["status"] == "completed"
            messages = await client.get(f"/api/v1/chats/{made['chat']}/messages", headers=headers)
            assert messages.status_code == 200, messages.text
            answer = messages.json()["items"][-1]
            assert answer["content"] == "At nine [1]."
            assert answer["sources"][0]["document_name"] == "handbook.pdf"
            assert answer["sources"][0]["page"] == 2
    finally:
        await engine.dispose()
        await drop_database(url)
