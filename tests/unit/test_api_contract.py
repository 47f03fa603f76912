from __future__ import annotations

from pathlib import Path

from docchat.main.cli import openapi_json

ROOT = Path(__file__).resolve().parents[2]


def test_committed_openapi_schema_matches_the_api() -> None:
    assert (ROOT / "frontend" / "openapi.json").read_text() == openapi_json(), (
        "The API changed: run `bash scripts/generate_client.sh` and commit the result"
    )
