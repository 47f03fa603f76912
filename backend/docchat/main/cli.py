"""`docchat` command line: serve, worker, create-admin, users, migrate, reindex, doctor,
backup, restore."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docchat.config import Settings, get_settings
from docchat.users import commands as users_commands
from docchat.users.emails import InvalidEmail

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

    from docchat.ingestion.upgrade import Backlog
    from docchat.retrieval.index import BlockingVectorStore


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """How `docchat serve` runs uvicorn (the tests' live servers use the same).

    X-Forwarded-For is believed only from the proxies listed in FORWARDED_ALLOW_IPS: uvicorn
    would otherwise trust it from loopback, and anyone on the machine could pose as any address
    (to dodge the login throttle, say).

    On SIGTERM, requests in flight get SHUTDOWN_TIMEOUT_SECONDS and are then cancelled (a
    streamed answer keeps what was sent); without a limit uvicorn waits for every open
    stream, however slow the model writing it."""
    trusted = settings.forwarded_allow_ips
    return {
        "proxy_headers": bool(trusted),
        "forwarded_allow_ips": ",".join(trusted) if trusted else "",
        "log_level": settings.log_level.lower(),
        "timeout_graceful_shutdown": settings.shutdown_timeout_seconds,
    }


def _serve(args: argparse.Namespace) -> None:
    import uvicorn

    uvicorn.run(
        "docchat.main.app:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        **uvicorn_options(get_settings()),
    )


async def _worker() -> None:
    from docchat.auth.signing_key import with_signing_key
    from docchat.db import create_engine, create_sessionmaker
    from docchat.ingestion import upgrade
    from docchat.ingestion.worker import IngestionWorker
    from docchat.kit.heap import freeze_startup_heap
    from docchat.main import telemetry
    from docchat.main.components import build_components
    from docchat.sources.sync import SourceSyncer

    settings = with_signing_key(get_settings())
    telemetry.configure_logging(settings.log_level)
    engine = create_engine(settings.database_url, pool_size=2)
    provider = telemetry.tracer_provider(settings.tracing)
    traces = None if provider is None else telemetry.Telemetry(provider, settings.tracing)
    if traces is not None:
        traces.start()
        traces.instrument_engine(engine)
    try:
        components = await build_components(settings, create_sessionmaker(engine))
        freeze_startup_heap()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await asyncio.gather(
                IngestionWorker(components).run_forever(stop),
                SourceSyncer(components).run_forever(stop),
                upgrade.run_at_start(components, stop),
            )
        finally:
            components.close()
    finally:
        await engine.dispose()
        if traces is not None:
            traces.stop()


async def _create_admin(email: str, password: str) -> str:
    from docchat.db import create_engine, create_sessionmaker, session_scope
    from docchat.users import service as users_service

    engine = create_engine(get_settings().database_url, pool_size=1)
    action = ""
    try:
        async with session_scope(create_sessionmaker(engine)) as session:
            _, action = await users_service.ensure_admin(
                session, email=email, password=password, reset_password=True
            )
    finally:
        await engine.dispose()
    return action


def _apply_migrations() -> None:
    from alembic import command
    from alembic.config import Config

    from docchat.config import PROJECT_ROOT

    command.upgrade(Config(str(PROJECT_ROOT / "alembic.ini")), "head")


def _migrate(_: argparse.Namespace) -> None:
    """Apply the migrations, then say what the database still holds of an earlier version
    that searches cannot find yet, and what makes it searchable."""
    _apply_migrations()
    backlog = asyncio.run(_database_backlog())
    if backlog:
        from docchat.ingestion.upgrade import COMMAND

        print(
            f"{backlog.describe()}: the service brings them up to date when it starts "
            f"(`docchat serve` or `docchat worker`, progress in its log), or run `{COMMAND}`"
        )


async def _database_backlog() -> Backlog:
    from docchat.db import create_engine, create_sessionmaker
    from docchat.ingestion import upgrade

    engine = create_engine(get_settings().database_url, pool_size=1)
    try:
        return await upgrade.backlog(create_sessionmaker(engine), None)
    finally:
        await engine.dispose()


async def _reindex(layout_only: bool) -> None:
    """Rebuild the vector index for the configured embedder and queue every document again;
    with `layout_only`, bring documents of earlier versions up to date instead, embedding
    nothing again: their chunks moved out of the older single-collection layout to their
    owners' collections, and their BM25 rows written (`ingestion.upgrade`)."""
    from docchat.db import create_engine, create_sessionmaker, session_scope
    from docchat.documents import jobs_repository
    from docchat.documents import repository as documents_repository
    from docchat.main.components import build_embedder, build_vector_store

    settings = get_settings()
    embedder = build_embedder(settings)
    store = build_vector_store(settings, embedder)
    engine = create_engine(settings.database_url, pool_size=1)
    try:
        if layout_only:
            await _bring_up_to_date(settings, create_sessionmaker(engine), store)
            return
        store.reset_collection()
        async with session_scope(create_sessionmaker(engine)) as session:
            documents = await documents_repository.live_documents(session)
            for document in documents:
                document.chunks_done = 0
                await jobs_repository.enqueue(session, document)
        print(f"queued {len(documents)} documents for re-indexing with {embedder.name}")
    finally:
        await engine.dispose()


async def _bring_up_to_date(
    settings: Settings,
    sessionmaker: async_sessionmaker[AsyncSession],
    store: BlockingVectorStore,
) -> None:
    from docchat.ingestion import upgrade
    from docchat.main import telemetry
    from docchat.main.components import build_glossary
    from docchat.retrieval.passage_glosses import PassageGlosses

    telemetry.configure_logging(settings.log_level)  # the progress, batch by batch
    glosses = PassageGlosses(build_glossary(settings))
    parts = upgrade.Parts.of(settings, sessionmaker, store, glosses)
    outcome = await upgrade.bring_up_to_date(parts)
    queued = (
        f"; {outcome.requeued} document(s) queued to be read again from their files, which "
        "a running worker does (`docchat serve` or `docchat worker`)"
        if outcome.requeued
        else ""
    )
    print(
        f"moved {outcome.moved} chunks of the older layout, wrote the BM25 rows of "
        f"{outcome.rebuilt} document(s){queued}"
    )


async def _delete_account(args: argparse.Namespace) -> tuple[bool, str]:
    """`docchat users delete`: (succeeded, what to print)."""
    from docchat.account import deletion
    from docchat.account.schemas import OthersDocuments
    from docchat.db import create_engine, create_sessionmaker
    from docchat.documents.storage import build_storage
    from docchat.kit.errors import DocchatError
    from docchat.kit.routing import run_after_commit
    from docchat.main.components import build_embedder, build_vector_store
    from docchat.retrieval.index import ThreadedIndex
    from docchat.users import administration

    settings = get_settings()
    store = build_vector_store(settings, build_embedder(settings))
    engine = create_engine(settings.database_url, pool_size=1)
    sessionmaker = create_sessionmaker(engine)
    places = deletion.Places(
        ThreadedIndex(store),
        build_storage(settings.storage, settings.files_dir),
        sessionmaker,
        settings,
    )
    try:
        async with sessionmaker() as session:
            user = await administration.get_by_email(session, args.email)
            heir = args.transfer_to and await administration.get_by_email(session, args.transfer_to)
            choice = (
                OthersDocuments.transfer
                if heir
                else (OthersDocuments.delete if args.delete_shared else None)
            )
            plan = await deletion.plan_of(session, user)
            decision = deletion.Decision(choice, heir.id if heir else None)
            await deletion.delete_by_admin(session, None, user.id, decision, places, None)
            await session.commit()
            await run_after_commit(session)
    except deletion.DecisionNeeded as exc:
        return False, exc.advice("--transfer-to EMAIL", "--delete-shared")
    except DocchatError as exc:
        return False, exc.message
    finally:
        await engine.dispose()
    relied_on = len(plan.relied_on_documents) + len(plan.relied_on_collections)
    handed = f"; {relied_on} document(s) and collection(s) went to {heir.email}" if heir else ""
    return True, (
        f"deleted {args.email}: {plan.documents} document(s), {plan.chats} chat(s), "
        f"{plan.api_keys} API key(s){handed}"
    )


async def _doctor(as_json: bool) -> int:
    """Run every check against the installation the settings describe; print the findings."""
    import json

    from docchat.db import create_engine, create_sessionmaker
    from docchat.llm.client import LLM
    from docchat.main import doctor

    settings = get_settings()
    logging.basicConfig(level=logging.ERROR)  # the findings say it, once
    engine = create_engine(settings.database_url, pool_size=1)
    llm = LLM(settings.llm.model_copy(update={"max_retries": 0}))
    subjects = await doctor.subjects_from(settings, create_sessionmaker(engine), llm)
    store = subjects.vector_store
    try:
        findings = await doctor.examine(subjects)
    finally:
        await llm.close()
        await engine.dispose()
        close = getattr(store, "close", None)
        if callable(close):
            close()
    print(json.dumps(doctor.as_json(findings), indent=2) if as_json else doctor.report(findings))
    return doctor.exit_status(findings)


async def _backup(target: Path | None) -> None:
    from datetime import UTC, datetime

    from docchat.main.backup import backup

    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    path = target or Path(f"docchat-backup-{stamp}.tar")
    summary = await backup(get_settings(), path)
    print(
        f"{summary.path}: {summary.bytes / 1e6:.1f} MB, the database at migration "
        f"{summary.revision} and {summary.documents_files} stored file(s)"
    )
    if summary.missing_files:
        print(
            f"{len(summary.missing_files)} file(s) of live documents are missing from the "
            f"storage and could not be archived, e.g. {summary.missing_files[0]}"
        )


async def _restore(archive: Path, overwrite: bool) -> None:
    from docchat.main.backup import restore

    restored = await restore(get_settings(), archive, overwrite=overwrite)
    print(f"database restored (migration {restored.revision}), {restored.files} stored file(s)")
    if restored.missing_objects:
        print(
            f"{len(restored.missing_objects)} object(s) the archive lists are not in the "
            f"bucket, e.g. {restored.missing_objects[0]}: their documents cannot be read"
        )
    print("signing key restored" if restored.key_restored else "signing key: AUTH_SECRET_KEY")


def openapi_json() -> str:
    """The API's OpenAPI schema, as committed to frontend/openapi.json."""
    import json
    import secrets

    from pydantic import SecretStr

    from docchat.main.app import create_app

    # The schema does not depend on the key; a throwaway one leaves no key file behind.
    settings = get_settings()
    auth = settings.auth.model_copy(update={"secret_key": SecretStr(secrets.token_hex(32))})
    app = create_app(settings.model_copy(update={"auth": auth}))
    return json.dumps(app.openapi(), indent=2, sort_keys=True) + "\n"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="docchat", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the API (and the worker loop)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    commands.add_parser("worker", help="run an ingestion worker alone")
    admin = commands.add_parser("create-admin", help="create or promote an administrator")
    admin.add_argument("email")
    admin.add_argument("--password", help="read from the terminal when omitted")
    _add_user_deletion(users_commands.add_parser(commands))
    commands.add_parser("migrate", help="apply database migrations (alembic upgrade head)")
    reindex = commands.add_parser(
        "reindex", help="rebuild the vector index for the configured embedder"
    )
    reindex.add_argument(
        "--layout-only",
        action="store_true",
        help="only bring documents of earlier versions up to date, embedding nothing again: "
        "move their chunks out of the single collection to their owners', write their BM25 "
        "rows (the service also does this when it starts)",
    )
    commands.add_parser("openapi", help="print the OpenAPI schema (for the generated TS client)")
    doctor = commands.add_parser(
        "doctor", help="check the installation and say what to do (exit 1 when a check fails)"
    )
    doctor.add_argument("--json", action="store_true", help="print the findings as JSON")
    _add_backup_and_restore(commands)
    return parser


def _add_user_deletion(
    user_actions: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    remove = user_actions.add_parser(
        "delete",
        help="delete an account for good: documents, files, vectors, chats, keys; the audit "
        "log keeps its entries with the name replaced",
    )
    remove.add_argument("email")
    others = remove.add_mutually_exclusive_group()
    others.add_argument(
        "--transfer-to",
        metavar="EMAIL",
        help="the account that takes over the documents and collections others rely on",
    )
    others.add_argument(
        "--delete-shared",
        action="store_true",
        help="delete the documents and collections others rely on too",
    )


def _add_backup_and_restore(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    backup = commands.add_parser(
        "backup", help="archive the database, stored files and signing key (while it runs)"
    )
    backup.add_argument("archive", nargs="?", type=Path, help="default: docchat-backup-<time>.tar")
    restore = commands.add_parser(
        "restore", help="restore an archive into an empty installation, then re-index it"
    )
    restore.add_argument("archive", type=Path)
    restore.add_argument(
        "--overwrite", action="store_true", help="replace an installation that is already there"
    )


def _run_create_admin(args: argparse.Namespace) -> None:
    password = args.password or getpass.getpass("Password for the administrator: ")
    if len(password) < 8:
        sys.exit("The password must have at least 8 characters")
    try:
        action = asyncio.run(_create_admin(args.email, password))
    except InvalidEmail as exc:  # a new account's address, by sign-up's rule
        sys.exit(str(exc))
    if action == "created":
        print(f"{args.email} is an administrator")
    else:
        print(
            f"{args.email} is an administrator ({action}): its password is now the one "
            "given here and every earlier session of the account has ended"
            + (", and so has every API key made with it" if action == "promoted" else "")
        )


def _run_users(args: argparse.Namespace) -> None:
    if args.action == "delete":
        succeeded, output = asyncio.run(_delete_account(args))
    else:
        succeeded, output = asyncio.run(users_commands.run(args, get_settings().database_url))
    if not succeeded:
        sys.exit(output)
    print(output)


def _run_backup_or_restore(args: argparse.Namespace) -> None:
    from docchat.main.backup import BackupError, DamagedArchive

    try:
        if args.command == "backup":
            asyncio.run(_backup(args.archive))
            return
        asyncio.run(_restore(args.archive, args.overwrite))
    except BackupError as exc:
        damaged = (
            "the archive is damaged, nothing was restored: "
            if isinstance(exc, DamagedArchive)
            else ""
        )
        sys.exit(f"docchat {args.command}: {damaged}{exc}")
    # The database may be older than this version, and holds no vectors: bring both up.
    _apply_migrations()
    asyncio.run(_reindex(False))


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    match args.command:
        case "serve":
            _serve(args)
        case "worker":
            asyncio.run(_worker())
        case "create-admin":
            _run_create_admin(args)
        case "users":
            _run_users(args)
        case "migrate":
            _migrate(args)
        case "reindex":
            asyncio.run(_reindex(args.layout_only))
        case "openapi":
            sys.stdout.write(openapi_json())
        case "doctor":
            sys.exit(asyncio.run(_doctor(args.json)))
        case "backup" | "restore":
            _run_backup_or_restore(args)


if __name__ == "__main__":
    main()
