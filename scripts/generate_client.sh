#!/usr/bin/env bash
# Regenerate the API contract: frontend/openapi.json from the backend, then the TS types from it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/.venv/bin/docchat" openapi > "$ROOT/frontend/openapi.json"
cd "$ROOT/frontend" && npx --no-install openapi-typescript openapi.json -o src/api/schema.d.ts
