"""`docchat doctor`: every check against the real parts, what it says when something is wrong,
its exit status, and the same findings in `/readyz` for administrators only."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.config import PROJECT_ROOT, LLMSettings, Settings
from docchat.db import create_engine, create_sessionmaker
from docchat.documents.storage import LocalFileStorage
from docchat.llm.client import LLM
from docchat.main import doctor
from docchat.main.components import Components
from tests.support.database import alembic, create_database, drop_database
from tests.support.users import admin_headers, auth_headers


def subjects_of(components: Components, **changes: object) -> doctor.Subjects:
    return dataclasses.replace(doctor.subjects_of(components), **changes)  # type: ignore[arg-type]


def by_check(findings: list[doctor.Finding]) -> dict[str, doctor.Finding]:
    return {finding.check: finding for finding in findings}


async def test_a_healthy_installation_passes_every_check(
    components: Components, tmp_path: Path
) -> None:
    findings = by_check(await doctor.examine(subjects_of(components)))
    assert list(findings) == list(doctor.CHECKS)
    healthy = (
        "database",
        "vector index",
        "embedding",
        "documents",
        "storage",
        "model",
        "translation",
    )
    for name in (*healthy, "clock", "disk"):
        assert findings[name].status is doctor.Status.ok, findings[name]
    assert "migrations current" in findings["database"].found
    assert "a file written, read and removed" in findings["storage"].found
    assert findings["model"].found.startswith("scripted-model at ")
    assert findings["translation"].found.startswith(
        "Apertium for es, fr, dictionaries for de, es, fr, zh"
    )
    assert doctor.exit_status(list(findings.values())) == 0
    # The storage probe leaves nothing behind: no file, and no folder it made for one. It
    # probes a folder of its own: the run's shared one lost a file mid-check on CI, removed
    # by another test's background deletion.
    files = tmp_path / "files"
    (files / "ab").mkdir(parents=True)
    (files / "ab" / "kept").write_bytes(b"a stored file")
    before = sorted(files.rglob("*"))
    probed = subjects_of(components, storage=LocalFileStorage(files))
    await doctor.examine(probed, {"storage": doctor.CHECKS["storage"]})
    assert sorted(files.rglob("*")) == before


async def test_a_database_behind_or_empty_is_told_to_migrate(components: Components) -> None:
    url = await create_database("docchat_doctor")
    engine = create_engine(url, pool_size=1)
    try:
        subjects = subjects_of(components, sessionmaker=create_sessionmaker(engine))
        empty = (await doctor.examine(subjects, {"database": doctor.CHECKS["database"]}))[0]
        assert empty.status is doctor.Status.failed
        assert (empty.found, empty.advice) == ("reachable, no schema", "run `docchat migrate`")

        await alembic(url, "upgrade", "0025")
        behind = (await doctor.examine(subjects, {"database": doctor.CHECKS["database"]}))[0]
        assert behind.status is doctor.Status.failed
        assert (
            behind.found == f"migrations behind (0025, this version needs {doctor.alembic_head()})"
        )
        assert behind.advice.startswith("run `docchat migrate`")
    finally:
        await engine.dispose()
        await drop_database(url)


async def test_each_problem_is_found_with_what_to_do(
    components: Components, tmp_path: Path
) -> None:
    # Nothing is listening there: the model is down.
    dead = LLM(LLMSettings(_env_file=None, base_url="http://127.0.0.1:9/v1", max_retries=0))  # type: ignore[call-arg]
    # The endpoint answers but serves another model than the one configured.
    llm = components.settings.llm.model_copy(update={"model": "gpt-9"})
    other = components.settings.model_copy(update={"llm": llm})
    # No LLM_BASE_URL here, and the built-in model of `scripts/run.sh` answering on its port
    # (the scripted model stands in for it): fine. With nothing on that port: no model.
    port = int(str(components.settings.llm.base_url).rsplit(":", 1)[1].split("/")[0])
    unset = components.settings.llm.model_copy(update={"base_url": None, "local_port": port})
    builtin = components.settings.model_copy(update={"llm": unset})
    nothing = components.settings.model_copy(
        update={"llm": unset.model_copy(update={"local_port": 9})}
    )
    # A file where the storage folder should be: nothing can be written there.
    (tmp_path / "blocked").write_text("not a folder")
    blocked = LocalFileStorage(tmp_path / "blocked" / "files")
    # A repetitive key, and a key file anyone on the machine may read.
    weak = components.settings.auth.model_copy(update={"secret_key": SecretStr("a" * 40)})
    key_file = tmp_path / "data" / "secret_key"
    key_file.parent.mkdir()
    key_file.write_text("k" * 64)
    key_file.chmod(0o644)
    loose = components.settings.model_copy(
        update={
            "data_dir": key_file.parent,
            "auth": components.settings.auth.model_copy(update={"secret_key": None}),
        }
    )
    # A running app holds the key it read from that file as if it were configured.
    loaded = loose.model_copy(
        update={"auth": loose.auth.model_copy(update={"secret_key": SecretStr("k" * 64)})}
    )
    try:
        cases = [
            (subjects_of(components, llm=dead), "model", doctor.Status.failed, "LLM_BASE_URL"),
            (subjects_of(components, settings=builtin), "model", doctor.Status.ok, "built-in"),
            (subjects_of(components, settings=nothing), "model", doctor.Status.failed, "run.sh"),
            (subjects_of(components, settings=other), "model", doctor.Status.warning, "scripted"),
            (subjects_of(components, storage=blocked), "storage", doctor.Status.failed, "writable"),
            (
                subjects_of(
                    components, settings=components.settings.model_copy(update={"auth": weak})
                ),
                "signing key",
                doctor.Status.warning,
                "openssl rand -hex 32",
            ),
            (
                subjects_of(components, settings=loose),
                "signing key",
                doctor.Status.warning,
                "chmod 600",
            ),
            (
                subjects_of(components, settings=loaded),
                "signing key",
                doctor.Status.warning,
                "chmod 600",
            ),
        ]
        for subjects, name, status, advice in cases:
            (finding,) = await doctor.examine(subjects, {name: doctor.CHECKS[name]})
            assert finding.status is status, finding
            assert advice in finding.advice + finding.found, finding
    finally:
        await dead.close()


def test_the_command_prints_one_line_per_check_and_exits_by_the_worst(
    settings: Settings, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(PROJECT_ROOT / "backend"),
        "DATABASE_URL": settings.database_url,
        "DATA_DIR": str(tmp_path),
        "LLM_BASE_URL": str(settings.llm.base_url),
        "LLM_MODEL": settings.llm.model,
        "OCR_ENABLED": "false",
    }
    command = [sys.executable, "-m", "docchat.main.cli", "doctor"]
    healthy = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)  # noqa: S603
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    lines = healthy.stdout.strip().splitlines()
    assert len(lines) == len(doctor.CHECKS) + 1 and lines[-1].startswith("healthy")
    # A machine short of disk space warns, and is still healthy.
    assert all(line.startswith(("ok ", "warning disk ")) for line in lines[:-1]), healthy.stdout

    # The model down, and a DATA_DIR nothing can be written to (even by root: a file stands
    # where its parent folder should be), so the vector store cannot be opened. Every check
    # still runs and reports on its own.
    (tmp_path / "blocked").write_text("a file, not a folder")
    down = {
        **env,
        "LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "DATA_DIR": str(tmp_path / "blocked" / "data"),
    }
    sick = subprocess.run(  # noqa: S603
        [*command, "--json"], env=down, capture_output=True, text=True, timeout=120
    )
    assert sick.returncode == 1, sick.stdout + sick.stderr
    findings = {finding["check"]: finding for finding in json.loads(sick.stdout)}
    assert list(findings) == list(doctor.CHECKS)
    assert findings["model"]["status"] == "failed"
    assert "start the model server" in findings["model"]["advice"]
    assert findings["vector index"]["status"] == "failed"
    assert findings["vector index"]["found"].startswith("cannot be opened: ")
    assert "DATA_DIR" in findings["vector index"]["advice"]
    assert findings["storage"]["status"] == "failed"
    assert "writable" in findings["storage"]["advice"]
    for name in ("database", "embedding", "translation", "clock"):
        assert findings[name]["status"] == "ok", findings[name]
    assert findings["documents"]["status"] == "warning"


@pytest.mark.parametrize("caller", ["anonymous", "user"])
async def test_readyz_details_are_for_administrators(
    client: httpx.AsyncClient, session: AsyncSession, caller: str
) -> None:
    headers = await auth_headers(client) if caller == "user" else {}
    body = (await client.get("/readyz", headers=headers)).json()
    assert body["status"] == "ready" and "details" not in body

    admin = await admin_headers(client, session)
    details = (await client.get("/readyz", headers=admin)).json()["details"]
    assert [finding["check"] for finding in details] == list(doctor.CHECKS)
    database = details[0]
    assert database["status"] == "ok" and "migrations current" in database["found"]
