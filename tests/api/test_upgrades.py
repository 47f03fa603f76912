"""Upgrades from any release: a database filled under the first schema, and again under every
later one, migrated one release at a time to the newest, loses nothing and still serves its
people through the API; the first release's documents (vectors with their text in one Chroma
collection, no BM25 rows) are found again, by both halves of hybrid search, once the
service starts."""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

import chromadb
import httpx
import sqlalchemy as sa
from chromadb.config import Settings as ChromaSettings
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from docchat.config import Settings
from docchat.db import create_engine, create_sessionmaker
from docchat.documents import repository as documents_repository
from docchat.documents.models import Document, DocumentStatus, IngestionJob, JobStatus
from docchat.events.publisher import EventPublisher
from docchat.ingestion import upgrade
from docchat.llm.client import LLM
from docchat.llm.embeddings import Embedder
from docchat.main import doctor
from docchat.main.app import create_app
from docchat.main.components import Components
from docchat.main.doctor import migration_chain
from docchat.retrieval.chroma import ChromaVectorStore
from docchat.retrieval.index import DocumentRef
from docchat.users.models import User
from docchat.users.passwords import hash_password_now
from tests.support.chat import ask
from tests.support.database import alembic, create_database, drop_database
from tests.support.llm_server import ScriptedLLM
from tests.support.users import PASSWORD, login

EARLY = "early.adopter@example.com"
# The handbook's five chunks, as the first release read them.
HANDBOOK = [
    "The ferry leaves at nine from the north pier.",
    "Tickets are sold on board; children under six travel free.",
    "Alarm code KX-4471 means the bilge pump of the ferry runs dry.",
    "The harbour canteen opens at seven and closes at noon.",
    "Lost property is kept at the harbour office for thirty days.",
]


async def fill_the_first_schema(connection: AsyncConnection) -> dict[str, str]:
    """What a team had under the first release: an account, a read document, a chat with a
    cited answer, the document's finished job (the document's chunks: `keep_first_vectors`)."""
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
    return {"document": str(document), "chat": str(chat), "user": str(user)}


def keep_first_vectors(
    folder: Path, settings: Settings, embedder: Embedder, made: dict[str, str]
) -> None:
    """The first release's data folder: every chunk of every owner in one Chroma collection,
    its text stored with it, ids `{document}_{index}`, no version in its metadata."""
    client = chromadb.PersistentClient(
        path=str(folder), settings=ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    )
    single = client.get_or_create_collection(
        settings.indexing.collection,
        embedding_function=None,
        metadata={
            "hnsw:space": "cosine",
            "embedding_model": embedder.name,
            "dimension": embedder.dimension,
        },
    )
    single.upsert(
        ids=[f"{made['document']}_{index}" for index in range(len(HANDBOOK))],
        embeddings=[list(vector) for vector in embedder.embed(HANDBOOK)],
        documents=HANDBOOK,
        metadatas=[
            {
                "document_id": made["document"],
                "chunk_index": index,
                "owner_id": made["user"],
                "visibility": "private",
                "filename": "handbook.pdf",
                "page": index // 2 + 1,
            }
            for index in range(len(HANDBOOK))
        ],
    )


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
    components: Components, fresh_llm: ScriptedLLM, tmp_path: Path
) -> None:
    chain = migration_chain()
    url = await create_database("docchat_upgrades")
    engine = create_engine(url, pool_size=1)
    try:
        await alembic(url, "upgrade", chain[0])
        async with engine.begin() as connection:
            made = await fill_the_first_schema(connection)
        keep_first_vectors(tmp_path / "chroma", components.settings, components.embedder, made)
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

        # The newest release over the first one's data folder. Migrated, not yet started: the
        # doctor says the old document cannot be found, and what makes it searchable.
        settings = components.settings
        store = ChromaVectorStore(
            collection=settings.indexing.collection,
            embedding_model=components.embedder.name,
            dimension=components.embedder.dimension,
            path=tmp_path / "chroma",
        )
        upgraded = dataclasses.replace(
            components,
            sessionmaker=create_sessionmaker(engine),
            vector_store=store,
            # The app closes these when it stops: its own, not those other tests share.
            llm=LLM(settings.llm),
            publisher=EventPublisher(settings.amqp_url, settings.amqp_exchange),
        )
        documents = {"documents": doctor.CHECKS["documents"]}
        (before,) = await doctor.examine(doctor.subjects_of(upgraded), documents)
        assert before.status is doctor.Status.failed, before
        assert "1 completed document(s) have no BM25 rows" in before.found
        assert f"{len(HANDBOOK)} chunk(s) wait in the single vector collection" in before.found
        assert "docchat reindex --layout-only" in before.advice

        async def started(_: Settings) -> Components:
            return upgraded

        # `docchat serve`: its start brings the old document up to date, beside the worker.
        app = create_app(settings, components_factory=started, run_worker=True)
        async with app.router.lifespan_context(app):
            await app.state.upgrading
            await serves_what_the_first_release_stored(app, upgraded, made, fresh_llm)
        (after,) = await doctor.examine(doctor.subjects_of(upgraded), documents)
        assert after.status is doctor.Status.ok, after

        # Safe to repeat: the next start finds nothing left to do, and changes nothing.
        assert await upgrade.bring_up_to_date(upgraded) == upgrade.Outcome()
        ref = DocumentRef(uuid.UUID(made["document"]), uuid.UUID(made["user"]))
        assert await upgraded.vector_index.count(ref) == len(HANDBOOK)
        async with engine.connect() as connection:
            rows = await connection.scalar(
                sa.text("SELECT count(*) FROM document_chunks WHERE document_id = :id"),
                {"id": ref.id},
            )
        assert rows == len(HANDBOOK)
    finally:
        await engine.dispose()
        await drop_database(url)


async def serves_what_the_first_release_stored(
    app: Any, upgraded: Components, made: dict[str, str], llm: ScriptedLLM
) -> None:
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

        # A new question about the old document: both halves of hybrid search find it.
        question = "What does alarm code KX-4471 mean?"
        ref = DocumentRef(uuid.UUID(made["document"]), uuid.UUID(made["user"]))
        (lexical, *_) = await upgraded.lexical.search([ref], question, 5)
        assert "KX-4471" in lexical.chunk.text
        (vector,) = upgraded.embedder.embed([question])
        nearest = await upgraded.vector_index.query(vector, [ref], 1)
        assert [hit.chunk.chunk_index for hit in nearest] == [2]
        llm.script("The bilge pump of the ferry runs dry [1].")
        asked = await ask(client, headers, question)
        assert asked.status_code == 200, asked.text
        message = asked.json()["assistant_message"]
        assert message["meta"]["retrieval_mode"] == "hybrid"
        cited = message["sources"][0]
        assert cited["document_name"] == "handbook.pdf"
        assert "KX-4471" in cited["content_preview"]
        assert cited["page"] == 2


async def test_a_document_whose_vectors_are_lost_too_is_read_again(
    components: Components, session: AsyncSession
) -> None:
    """Completed, with no BM25 rows and no chunk in the vector store (its text is nowhere but
    in its file): bringing it up to date queues it to be read again, once."""
    owner = User(email=f"early-{uuid.uuid4().hex[:8]}@example.com", password_hash="x")
    session.add(owner)
    await session.flush()
    lost = Document(
        owner_id=owner.id,
        filename="lost.pdf",
        content_type="application/pdf",
        size_bytes=1,
        sha256="0" * 64,
        storage_key="lost",
        status=DocumentStatus.completed,
        page_count=1,
        chunk_count=3,
        chunks_done=3,
    )
    session.add(lost)
    await session.commit()

    first = await upgrade.bring_up_to_date(components)
    assert first.requeued >= 1 and first.finished
    await session.refresh(lost)
    assert lost.status == DocumentStatus.queued and lost.chunks_done == 0
    queued = await session.scalar(
        sa.select(sa.func.count())
        .select_from(IngestionJob)
        .where(IngestionJob.document_id == lost.id, IngestionJob.status == JobStatus.queued)
    )
    assert queued == 1
    # Queued, it is no longer a completed document without rows: nothing more to do for it.
    async with components.sessionmaker() as other:
        listed = await documents_repository.without_lexical_rows(other, None, 1000)
    assert lost.id not in {document.id for document in listed}
