"""`docchat doctor`: is this installation healthy, and if not, what to do about it.

Each check looks at one thing an installation needs and says, in one line, what it found and
what to do when something is wrong: the database and its migrations, the vector index against
the embedding model, whether every completed document can be found (BM25 rows, vectors where
searches look), the file storage, the model endpoint, OCR, what translates questions in other
languages, the signing key, the clocks and the disk. Each check runs and reports on its own: a
part that cannot be opened (a vector store in an unwritable DATA_DIR) fails its checks, and
the others still look at theirs. The command prints them and exits 1
when one failed (a warning alone exits 0, so a cron job or a deployment script can act on the
status); administrators get the same findings in `/readyz` (`details`).

The checks run against the parts the caller already has (`Subjects`): the running app's, or
the command's own, built from the settings as `docchat serve` would.
"""

from __future__ import annotations

import asyncio
import enum
import shutil
import stat
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.config import (
    MIN_SECRET_CHARS,
    PROJECT_ROOT,
    PUBLIC_SECRETS,
    Environment,
    LLMSettings,
    Settings,
)
from docchat.documents.storage import FileStorage, build_storage
from docchat.extraction.ocr import OcrOptions, tesseract_problem
from docchat.ingestion import upgrade
from docchat.llm.client import LLM
from docchat.llm.embeddings import Embedder
from docchat.main.components import Components, build_embedder, build_vector_store
from docchat.retrieval.index import BlockingVectorStore, VectorStoreUnavailable
from docchat.retrieval.offline_translator import APERTIUM_PACKAGES, Apertium
from docchat.retrieval.word_by_word import FREEDICT, installed_sources

# Clocks further apart than this make tokens and job leases expire early or late.
CLOCK_WARNING_SECONDS = 5.0
CLOCK_FAILURE_SECONDS = 120.0
# Free space in the data folder below either figure: uploads and the vector index will fail.
DISK_FAILURE_BYTES = 1 << 30
DISK_WARNING_BYTES = 5 << 30
DISK_WARNING_SHARE = 0.10
# A check that takes longer than this is reported as failed (a hung endpoint, say).
CHECK_SECONDS = 15.0


class Status(enum.StrEnum):
    ok = "ok"
    warning = "warning"
    failed = "failed"


@dataclass(frozen=True)
class Finding:
    """One check's outcome: what was found and, unless all is well, what to do."""

    check: str
    status: Status
    found: str
    advice: str = ""

    def line(self, width: int = 14) -> str:
        advice = f" -> {self.advice}" if self.advice else ""
        return f"{self.status.value:<8}{self.check:<{width}}{self.found}{advice}"

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def _ok(check: str, found: str) -> Finding:
    return Finding(check, Status.ok, found)


def _warning(check: str, found: str, advice: str) -> Finding:
    return Finding(check, Status.warning, found, advice)


def _failed(check: str, found: str, advice: str) -> Finding:
    return Finding(check, Status.failed, found, advice)


@dataclass(frozen=True)
class Subjects:
    """What the checks look at. The command builds the embedder and the vector store itself:
    one it could not open is None, with the reason in `unopened` (by part: "embedding",
    "vector index")."""

    settings: Settings
    sessionmaker: async_sessionmaker[AsyncSession]
    embedder: Embedder | None
    vector_store: BlockingVectorStore | None
    storage: FileStorage
    llm: LLM
    unopened: Mapping[str, str] = field(default_factory=dict)


def subjects_of(components: Components) -> Subjects:
    """What the checks look at in a running app."""
    return Subjects(
        settings=components.settings,
        sessionmaker=components.sessionmaker,
        embedder=components.embedder,
        vector_store=components.vector_store,
        storage=components.storage,
        llm=components.llm,
    )


async def subjects_from(
    settings: Settings, sessionmaker: async_sessionmaker[AsyncSession], llm: LLM
) -> Subjects:
    """What `docchat doctor` looks at, built from the settings as `docchat serve` would; the
    embedding model or vector store that cannot be opened is left out, with why."""
    unopened: dict[str, str] = {}
    embedder: Embedder | None = None
    store: BlockingVectorStore | None = None
    try:
        embedder = await asyncio.to_thread(build_embedder, settings)
    except Exception as exc:
        unopened["embedding"] = unopened["vector index"] = f"{type(exc).__name__}: {exc}"
    if embedder is not None:
        try:
            store = await asyncio.to_thread(build_vector_store, settings, embedder)
        except Exception as exc:
            unopened["vector index"] = f"{type(exc).__name__}: {exc}"
    return Subjects(
        settings=settings,
        sessionmaker=sessionmaker,
        embedder=embedder,
        vector_store=store,
        storage=build_storage(settings.storage, settings.files_dir),
        llm=llm,
        unopened=unopened,
    )


async def _database(subjects: Subjects) -> Finding:
    try:
        async with subjects.sessionmaker() as session:
            exists = await session.scalar(text("SELECT to_regclass('alembic_version')"))
            revision = (
                await session.scalar(text("SELECT version_num FROM alembic_version"))
                if exists
                else None
            )
    except Exception as exc:  # any driver or network error: the database cannot be reached
        return _failed(
            "database",
            f"unreachable: {_first_line(getattr(exc, 'orig', None) or exc)}",
            "start PostgreSQL and check DATABASE_URL (host, port, user, password, database)",
        )
    head = alembic_head()
    if revision == head:
        return _ok("database", f"reachable, migrations current ({head})")
    if revision is None:
        return _failed("database", "reachable, no schema", "run `docchat migrate`")
    if revision not in known_revisions():
        return _failed(
            "database",
            f"at migration {revision}, which this version does not know",
            "the database was upgraded by a newer docchat: run that version (or restore a "
            "backup taken before the upgrade)",
        )
    return _failed(
        "database",
        f"migrations behind ({revision}, this version needs {head})",
        "run `docchat migrate` (take a backup first: `docchat backup`)",
    )


def _first_line(error: BaseException) -> str:
    """The gist of an error, without SQLAlchemy's appendices (the statement, a help link)."""
    lines = str(error).strip().splitlines()
    return (lines[0] if lines else type(error).__name__)[:160]


def _migration_scripts() -> ScriptDirectory:
    config = Config(str(PROJECT_ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(PROJECT_ROOT / "migrations"))
    return ScriptDirectory.from_config(config)


def alembic_head() -> str | None:
    """The newest migration this version has: the database's must be this one."""
    return _migration_scripts().get_current_head()


def migration_chain() -> list[str]:
    """Every migration this version has, the first release's first."""
    return [script.revision for script in reversed(list(_migration_scripts().walk_revisions()))]


def known_revisions() -> set[str]:
    """Every migration this version has."""
    return set(migration_chain())


def _unopened(subjects: Subjects, check: str, advice: str) -> Finding:
    reason = subjects.unopened.get(check, "it was not opened")
    return _failed(check, f"cannot be opened: {reason[:200]}", advice)


async def _vector_index(subjects: Subjects) -> Finding:
    embedder = subjects.embedder
    if subjects.vector_store is None or embedder is None:
        return _unopened(
            subjects,
            "vector index",
            "make DATA_DIR a folder the service's user can write (or check the vector store's "
            "settings, and EMBEDDING_* when the embedding model failed too)",
        )
    mismatch = getattr(subjects.vector_store, "mismatch", None)
    if mismatch:
        return _failed("vector index", str(mismatch), "run `docchat reindex`")
    try:
        await asyncio.to_thread(subjects.vector_store.ping)
    except Exception as exc:
        return _failed(
            "vector index",
            f"unusable: {str(exc)[:160]}",
            "check DATA_DIR (or the vector store's settings) and run `docchat reindex` if the "
            "index was lost",
        )
    return _ok("vector index", f"built with {embedder.name} ({embedder.dimension} dimensions)")


async def _embedding_model(subjects: Subjects) -> Finding:
    embedder = subjects.embedder
    if embedder is None:
        return _unopened(
            subjects,
            "embedding",
            "check EMBEDDING_BACKEND and, for a remote model, EMBEDDING_BASE_URL and its key",
        )
    try:
        (vector,) = await asyncio.to_thread(embedder.embed, ["doctor"])
    except Exception as exc:
        return _failed(
            "embedding",
            f"{embedder.name} failed: {str(exc)[:160]}",
            "check EMBEDDING_BACKEND and, for a remote model, EMBEDDING_BASE_URL and its key",
        )
    if len(vector) != embedder.dimension:
        return _failed(
            "embedding",
            f"{embedder.name} returns {len(vector)} dimensions, not {embedder.dimension}",
            "set the model the index was built with, or run `docchat reindex`",
        )
    return _ok("embedding", f"{embedder.name} answers")


async def _documents(subjects: Subjects) -> Finding:
    """Completed documents that no search finds: without BM25 rows, or with their vectors in
    the layout of an earlier version (what `docchat migrate` leaves of a first release's
    installation until the service starts)."""
    try:
        backlog = await upgrade.backlog(subjects.sessionmaker, subjects.vector_store)
    except VectorStoreUnavailable as exc:
        return _warning("documents", f"not counted: {_first_line(exc)}", "")
    except Exception:  # the database check says why
        return _warning("documents", "not counted: the database cannot be reached", "")
    if backlog:
        return _failed(
            "documents",
            f"{backlog.describe()}: searches do not find them",
            f"start the service (`docchat serve` or `docchat worker` bring them up to date "
            f"at start, progress in the log), or run `{upgrade.COMMAND}`",
        )
    if backlog.outdated_rows:
        return _warning(
            "documents",
            f"{backlog.outdated_rows} BM25 row(s) of German, French, Spanish or Chinese text "
            "were written by an earlier version of the index: found less well by questions in "
            "other languages",
            f"start the service (it writes them again at start), or run `{upgrade.COMMAND}`",
        )
    if subjects.vector_store is None:
        return _warning(
            "documents",
            "every completed document has its BM25 rows; their vectors were not looked at",
            "see the vector index line",
        )
    return _ok("documents", "every completed document has its BM25 rows and vectors")


async def _storage(subjects: Subjects) -> Finding:
    where = subjects.storage.describe()
    try:
        await subjects.storage.probe()
    except Exception as exc:
        advice = (
            "check the STORAGE_S3_* settings, that the bucket exists and that its key may "
            "put, read and delete objects"
            if subjects.settings.storage.s3_bucket
            else "make the folder writable by the user the service runs as (or set DATA_DIR)"
        )
        return _failed("storage", f"{where}: cannot store a file ({str(exc)[:160]})", advice)
    return _ok("storage", f"{where}: a file written, read and removed")


async def _model(subjects: Subjects) -> Finding:
    settings = subjects.settings.llm
    endpoint = settings.base_url
    if not endpoint:
        return await _builtin_model(settings)
    try:
        models = await subjects.llm.list_models()
    except Exception as exc:
        return _failed(
            "model",
            f"{endpoint} does not answer ({_first_line(exc)})",
            "start the model server, or set LLM_BASE_URL and LLM_API_KEY to one that runs "
            "(documents are still searched; answers need a model)",
        )
    if settings.model not in models:
        listed = ", ".join(models[:5]) + (" ..." if len(models) > 5 else "")
        return _warning(
            "model",
            f"{endpoint} answers but does not list {settings.model}",
            f"set LLM_MODEL to one it serves ({listed or 'none listed'})",
        )
    note = " (the built-in demo model: answers quote the documents)" if settings.builtin else ""
    return _ok("model", f"{settings.model} at {endpoint}{note}")


async def _builtin_model(settings: LLMSettings) -> Finding:
    """No LLM_BASE_URL in this environment: `scripts/run.sh` sets it for the service alone,
    when it starts the built-in demo model on LLM_LOCAL_PORT. Is that one answering?"""
    local = f"http://127.0.0.1:{settings.local_port}/v1"
    builtin = LLM(settings.model_copy(update={"base_url": local, "max_retries": 0}))
    try:
        await builtin.list_models()
    except Exception:
        return _failed(
            "model",
            "no model is configured: questions get no answer",
            "set LLM_BASE_URL (and LLM_API_KEY), or start with `bash scripts/run.sh`, which "
            "runs the built-in demo model",
        )
    finally:
        await builtin.close()
    return _ok(
        "model",
        f"the built-in demo model at {local} (started by scripts/run.sh: answers quote the "
        "documents; set LLM_BASE_URL for a real model)",
    )


async def _ocr(subjects: Subjects) -> Finding:
    settings = subjects.settings.ocr
    if not settings.enabled:
        return _ok("ocr", "off (OCR_ENABLED=false): scans and photos are refused")
    options = OcrOptions(languages=settings.languages)
    problem, advice = await asyncio.to_thread(tesseract_problem, options)
    if problem:
        return _warning("ocr", f"{problem}: scans and photos are refused", advice)
    return _ok("ocr", f"Tesseract with {settings.languages}")


def _translation(subjects: Subjects) -> Finding:
    translation, indexing = subjects.settings.translation, subjects.settings.indexing
    if not translation.translate_questions or indexing.lexical_language != "english":
        return _ok("translation", "off (RAG_TRANSLATE_QUESTIONS or RAG_LEXICAL_LANGUAGE)")
    machine = sorted(Apertium().languages)
    words = sorted(installed_sources(translation.dictionary_folder))
    missing = [f"dict-freedict-{FREEDICT[code]}-eng" for code in FREEDICT if code not in words]
    missing += [
        f"dict-freedict-eng-{FREEDICT[code]}" for code in FREEDICT if f"en>{code}" not in words
    ]
    missing += [] if {"es", "fr"} <= set(machine) else list(APERTIUM_PACKAGES)
    into = ", ".join(word for word in words if ">" not in word) or "none"
    out = ", ".join(word.split(">")[1] for word in words if ">" in word) or "none"
    found = (
        f"Apertium for {', '.join(machine) or 'none'}, dictionaries for {into} (into English) "
        f"and {out} (from English)"
    )
    if missing:
        return _warning(
            "translation",
            f"{found}: questions in other languages are searched as asked unless a connected "
            "model translates them",
            f"sudo apt-get install {' '.join(missing)}",
        )
    return _ok("translation", f"{found} (questions searched in the documents' languages too)")


def _signing_key(subjects: Subjects) -> Finding:
    settings = subjects.settings
    secret = settings.auth.secret_key
    path = settings.secret_key_file
    # A running app holds the key it read from the file as if configured: judge the file.
    if secret is not None and not _read_from(path, secret.get_secret_value()):
        value = secret.get_secret_value()
        if value in PUBLIC_SECRETS:
            return _failed(
                "signing key",
                "AUTH_SECRET_KEY is a publicly known value: anyone can sign tokens",
                "set a random one: AUTH_SECRET_KEY=$(openssl rand -hex 32)",
            )
        if len(value) < MIN_SECRET_CHARS or len(set(value)) < 8:
            judge = _failed if settings.environment is Environment.production else _warning
            return judge(
                "signing key",
                "AUTH_SECRET_KEY is short or repetitive: it can be guessed",
                "set a random one: AUTH_SECRET_KEY=$(openssl rand -hex 32)",
            )
        return _ok("signing key", "AUTH_SECRET_KEY is set")
    if not path.exists():
        return _ok("signing key", f"none yet: the first start writes one to {path}")
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        return _warning(
            "signing key",
            f"{path} may be read by other users of this machine",
            f"chmod 600 {path}",
        )
    return _ok("signing key", f"kept in {path}, readable by its owner only")


def _read_from(path: Path, key: str) -> bool:
    try:
        return path.read_text(encoding="utf-8").strip() == key
    except OSError:
        return False


async def _clock(subjects: Subjects) -> Finding:
    try:
        async with subjects.sessionmaker() as session:
            before = time.time()
            database_now: datetime = await session.scalar(text("SELECT now()"))  # type: ignore[assignment]
            after = time.time()
    except Exception:
        return _warning("clock", "not compared: the database cannot be reached", "")
    here = (before + after) / 2
    skew = here - database_now.astimezone(UTC).timestamp()
    found = f"this machine and the database {abs(skew):.1f} s apart"
    advice = "keep every machine's clock in sync (NTP, e.g. systemd-timesyncd or chrony)"
    if abs(skew) > CLOCK_FAILURE_SECONDS:
        return _failed("clock", found, advice)
    if abs(skew) > CLOCK_WARNING_SECONDS:
        return _warning("clock", found, advice)
    return _ok("clock", found)


def _disk(subjects: Subjects) -> Finding:
    folder = _existing(subjects.settings.data_dir)
    usage = shutil.disk_usage(folder)
    share = usage.free / usage.total if usage.total else 0.0
    found = f"{_gib(usage.free)} free of {_gib(usage.total)} ({share:.0%}) where {folder} is"
    advice = "free space or move DATA_DIR to a larger disk (uploads and the index grow there)"
    if usage.free < DISK_FAILURE_BYTES:
        return _failed("disk", found, advice)
    if usage.free < DISK_WARNING_BYTES or share < DISK_WARNING_SHARE:
        return _warning("disk", found, advice)
    return _ok("disk", found)


def _existing(path: Path) -> Path:
    """The folder itself, or its nearest existing parent (a data folder not made yet)."""
    path = path.resolve()
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def _gib(size: int) -> str:
    return f"{size / (1 << 30):.1f} GiB"


Check = Callable[[Subjects], Awaitable[Finding]]


def _awaitable(check: Callable[[Subjects], Finding]) -> Check:
    async def run(subjects: Subjects) -> Finding:
        return check(subjects)

    return run


CHECKS: dict[str, Check] = {
    "database": _database,
    "vector index": _vector_index,
    "embedding": _embedding_model,
    "documents": _documents,
    "storage": _storage,
    "model": _model,
    "ocr": _ocr,
    "translation": _awaitable(_translation),
    "signing key": _awaitable(_signing_key),
    "clock": _clock,
    "disk": _awaitable(_disk),
}


async def _run(name: str, check: Check, subjects: Subjects) -> Finding:
    try:
        return await asyncio.wait_for(check(subjects), CHECK_SECONDS)
    except TimeoutError:
        return _failed(name, f"no answer within {CHECK_SECONDS:.0f} s", "see the line above")
    except Exception as exc:  # a check that breaks is a finding too, not a crash
        return _failed(name, f"the check itself failed: {type(exc).__name__}: {exc}", "")


async def examine(subjects: Subjects, checks: dict[str, Check] | None = None) -> list[Finding]:
    """Every check's finding, in order (they run one after the other: a slow model endpoint
    does not hide the database's state)."""
    return [await _run(name, check, subjects) for name, check in (checks or CHECKS).items()]


def report(findings: Sequence[Finding]) -> str:
    width = max((len(finding.check) for finding in findings), default=0) + 2
    lines = [finding.line(width) for finding in findings]
    failed = sum(finding.status is Status.failed for finding in findings)
    warned = sum(finding.status is Status.warning for finding in findings)
    if failed:
        lines.append(f"{failed} check(s) failed, {warned} warning(s)")
    elif warned:
        lines.append(f"healthy, with {warned} warning(s)")
    else:
        lines.append("healthy")
    return "\n".join(lines)


def exit_status(findings: Sequence[Finding]) -> int:
    return 1 if any(finding.status is Status.failed for finding in findings) else 0


def as_json(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    return [finding.as_dict() for finding in findings]
