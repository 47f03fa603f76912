"""The files users read and run stay true to the code: .env.example, the docs, docker-compose."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from docchat.main.settings_docs import (
    CONFIGURATION_PAGE,
    env_example,
    markdown_table,
    settings_table_in,
    variables,
)

ROOT = Path(__file__).resolve().parents[2]


def test_env_example_is_generated_from_the_settings() -> None:
    assert (ROOT / ".env.example").read_text() == env_example(), (
        "regenerate it: python scripts/sync_docs.py"
    )


def test_configuration_page_has_the_generated_variables_table() -> None:
    table = settings_table_in((ROOT / CONFIGURATION_PAGE).read_text())
    assert table is not None, f"{CONFIGURATION_PAGE} lost its settings-table markers"
    assert table == markdown_table(), (
        f"{CONFIGURATION_PAGE} is stale; run: python scripts/sync_docs.py"
    )


def test_readme_is_short_and_starts_with_the_two_commands() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move detail into docs/"
    head = [line.strip() for line in lines[:15]]
    for command in ("bash scripts/run.sh", "bash scripts/test.sh"):
        assert any(line.startswith(command) for line in head), (
            f"README.md must show `{command}` in its first 15 lines"
        )


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def test_compose_services_and_references() -> None:
    compose = _compose()
    services = compose["services"]
    assert {"postgres", "chroma", "app", "worker", "llm"} <= set(services)
    named_volumes = set(compose["volumes"])
    for name, service in services.items():
        assert "image" in service or "build" in service, name
        for dependency in service.get("depends_on", {}):
            assert dependency in services, (name, dependency)
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert source.startswith((".", "/")) or source in named_volumes, (name, volume)


def test_the_scale_out_profile_reads_questions_from_its_replica() -> None:
    compose = _compose()
    services = compose["services"]
    profile = {
        name for name, service in services.items() if "scale-out" in service.get("profiles", [])
    }
    assert profile == {"postgres-replica", "app-2", "worker-2"}
    known = {variable.name for variable in variables()}
    for name in ("app-2", "worker-2"):
        assert set(services[name]["environment"]) <= known, name
    replicas = json.loads(services["app-2"]["environment"]["DATABASE_REPLICA_URLS"])
    assert [url.split("@")[1].split(":")[0] for url in replicas] == ["postgres-replica"]
    assert all(url.startswith("postgresql+asyncpg://") for url in replicas)
    # The primary lets the standby stream its log: the config it runs at first start exists.
    for config in services["postgres"]["configs"]:
        assert config["source"] in compose["configs"]
    assert "host replication" in compose["configs"]["allow-replication"]["content"]
    assert "pg_basebackup" in " ".join(services["postgres-replica"]["command"])


def test_compose_app_environment_uses_real_settings() -> None:
    known = {variable.name for variable in variables()}
    environment = _compose()["services"]["app"]["environment"]
    unknown = set(environment) - known
    assert not unknown, f"docker-compose sets variables docchat does not read: {unknown}"


def test_the_local_model_gets_its_own_port_whatever_port_docchat_is_given() -> None:
    # llama_cpp.server reads HOST and PORT from the environment over its --host/--port flags,
    # so `PORT=8011 bash scripts/run.sh` once put the model on docchat's port (found by running
    # it). The script must hand the model its own values in the command's environment.
    script = (ROOT / "scripts" / "run.sh").read_text()
    launch = next(line for line in script.splitlines() if "-m llama_cpp.server" in line)
    assert 'PORT="$LLM_PORT"' in launch and "HOST=127.0.0.1" in launch
