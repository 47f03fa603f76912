#!/usr/bin/env bash
# Run every check CI runs: lint, format, types, and all tests against a real PostgreSQL.
set -euo pipefail
source "$(dirname "$0")/_common.sh"
cd "$ROOT"
ensure_venv "dev"
ensure_postgres "${TEST_DATABASE_ADMIN_URL:-postgresql+asyncpg://postgres@127.0.0.1:5432/postgres}"
case " $* " in
  *" --ignore=tests/e2e "*) ;;
  *) ensure_chromium ;;
esac
ensure_tesseract
ensure_translation
ensure_slapd

command -v npm >/dev/null 2>&1 || die "Node.js 20+ and npm are required for the web app's checks"
ensure_frontend
ensure_test_identity_provider
say "web app: API contract, lint, types, unit tests"
(
  cd "$ROOT/frontend"
  npx --no-install openapi-typescript openapi.json -o /tmp/docchat-schema.d.ts >/dev/null 2>&1
  diff -q src/api/schema.d.ts /tmp/docchat-schema.d.ts >/dev/null ||
    die "frontend/src/api/schema.d.ts is stale: run bash scripts/generate_client.sh"
  npx --no-install eslint . --max-warnings 0
  npx --no-install vitest run --reporter=dot
)
say "ruff"
"$VENV/bin/ruff" check backend tests migrations bench
"$VENV/bin/ruff" format --check backend tests migrations bench
say "mypy"
"$VENV/bin/mypy"
say "docs: mkdocs build --strict (links, anchors, the nav)"
# Not --quiet: it hides the warnings that --strict counts, and the build then passes. The log
# is shown only when the build fails; the site goes to a temporary folder, never the tree.
site="$(mktemp -d)"
if ! docs_log="$(NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict \
  --config-file "$ROOT/mkdocs.yml" --site-dir "$site" 2>&1)"; then
  rm -rf "$site"
  printf '%s\n' "$docs_log" >&2
  die "the documentation does not build; run: $VENV/bin/mkdocs build --strict"
fi
rm -rf "$site"
# The tests run in TEST_WORKERS processes (pytest-xdist, `--dist loadfile`: a file's tests stay
# together; each process has its own database, model server, data folder and browser). By
# default one per core, up to two: on this 2-core machine two ran the suite in 788 s where one
# had taken 1696 s (docs/development.md). More (TEST_WORKERS=N) on more cores, PostgreSQL's
# max_connections permitting (each process opens several pools); 0 runs them in this process.
cores="$(nproc 2>/dev/null || echo 2)"
workers="${TEST_WORKERS:-$((cores < 2 ? cores : 2))}"
parallel=()
if [ "$workers" != 0 ]; then parallel=(-n "$workers" --dist loadfile); fi
say "pytest"
"$VENV/bin/pytest" "${parallel[@]}" "$@"
