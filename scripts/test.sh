#!/usr/bin/env bash
# Run every check CI runs: lint, format, types, and all tests against a real PostgreSQL.
set -euo pipefail
source "$(dirname "$0")/_common.sh"
cd "$ROOT"
ensure_venv "dev"
ensure_postgres "${TEST_DATABASE_ADMIN_URL:-postgresql+asyncpg://postgres@127.0.0.1:5432/postgres}"

say "ruff"
"$VENV/bin/ruff" check backend tests migrations bench
"$VENV/bin/ruff" format --check backend tests migrations bench
say "mypy"
"$VENV/bin/mypy"
say "pytest"
"$VENV/bin/pytest" "$@"
