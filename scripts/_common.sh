# Shared by run.sh and test.sh: a Python 3.11 venv with the project installed.
# shellcheck shell=bash
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"

say() { printf '\033[1;34m==>\033[0m %s\n' "$*"; }
die() { printf '\033[1;31merror:\033[0m %s\n' "$*" >&2; exit 1; }

find_python() {
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
      command -v "$candidate"; return 0
    fi
  done
  die "Python 3.11 is required (install python3.11 and python3.11-venv)"
}

# ensure_venv EXTRAS: create the venv once; reinstall when pyproject.toml changed.
ensure_venv() {
  local extras="$1"
  if [ ! -x "$PY" ]; then
    say "creating a virtual environment in $VENV"
    "$(find_python)" -m venv "$VENV"
    "$PY" -m pip install --quiet --upgrade pip
  fi
  local stamp="$VENV/.docchat-installed-$extras"
  if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
    say "installing Python dependencies ($extras); the first time takes a few minutes"
    # torch first and pinned, so nothing pulls a multi-GB CUDA build instead of the CPU one.
    "$PY" -m pip install --quiet "torch==2.13.0"
    if [[ "$extras" == *local-llm* ]]; then
      # llama.cpp compiles here. A portable build, not -march=native: a virtual machine can
      # report CPU features it does not let programs use (AMX), and a native build then dies
      # with a protection fault on the first question. No cache: a native wheel may be there.
      CMAKE_ARGS="-DGGML_NATIVE=OFF ${CMAKE_ARGS:-}" "$PY" -m pip install --quiet --no-cache-dir \
        "llama-cpp-python[server]>=0.3"
    fi
    "$PY" -m pip install --quiet -e "$ROOT[$extras]"
    touch "$stamp"
  fi
}

pg_reachable() {
  "$PY" - "$1" <<'PYEOF'
import asyncio, sys
import asyncpg
url = sys.argv[1].replace("postgresql+asyncpg://", "postgresql://")
async def main() -> None:
    connection = await asyncpg.connect(url, timeout=3)
    await connection.close()
try:
    asyncio.run(main())
except Exception:
    sys.exit(1)
PYEOF
}

# ensure_postgres MAINTENANCE_URL: start a local cluster if one is installed but down.
ensure_postgres() {
  local url="$1"
  pg_reachable "$url" && return 0
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    local version
    version="$(ls /etc/postgresql | sort -V | tail -n 1)"
    say "starting the local PostgreSQL $version cluster"
    pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
    for _ in $(seq 1 30); do pg_reachable "$url" && return 0; sleep 1; done
  fi
  die "No PostgreSQL at ${url}.
  Either install it (Debian/Ubuntu: sudo apt-get install postgresql) and run this again,
  or point DATABASE_URL at a server you have, e.g.
  DATABASE_URL=postgresql+asyncpg://user:password@host:5432/docchat"
}

# ensure_frontend: install the web app's packages when package-lock.json changed, then build it.
ensure_frontend() {
  command -v npm >/dev/null 2>&1 || return 1
  local stamp="$ROOT/frontend/node_modules/.docchat-installed"
  if [ ! -f "$stamp" ] || [ "$ROOT/frontend/package-lock.json" -nt "$stamp" ]; then
    say "installing the web app's packages"
    (cd "$ROOT/frontend" && npm ci --no-audit --no-fund --loglevel=error) && touch "$stamp"
  fi
  say "building the web app"
  (cd "$ROOT/frontend" && npm run --silent build >/dev/null)
}

# ensure_test_identity_provider: the OpenID Connect provider the single sign-on tests start
# (npm oidc-provider, tests/oidc_provider/), installed from its lock file when that changed.
ensure_test_identity_provider() {
  local folder="$ROOT/tests/oidc_provider"
  local stamp="$folder/node_modules/.docchat-installed"
  if [ ! -f "$stamp" ] || [ "$folder/package-lock.json" -nt "$stamp" ]; then
    say "installing the test OpenID Connect provider (npm oidc-provider)"
    (cd "$folder" && npm ci --no-audit --no-fund --loglevel=error) && touch "$stamp"
  fi
}

# ensure_chromium: Debian's Chromium for the browser tests (never a browser download). Installed
# when this runs as root with apt-get; otherwise stop at once with the line that installs it.
ensure_chromium() {
  command -v chromium >/dev/null 2>&1 && return 0
  local install="apt-get install -y chromium fonts-dejavu-core"
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Chromium for the browser tests ($install)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core >/dev/null
    return 0
  fi
  die "The browser tests need Chromium. Install it with:
  sudo $install
  (or run only the other tests: bash scripts/test.sh --ignore=tests/e2e)"
}

# ensure_slapd: Debian's OpenLDAP server, which the tests of directory logins start with a
# configuration of their own (its packaged service is not used). Installed when this runs as
# root with apt-get; otherwise the tests stop at once with the line that installs it.
ensure_slapd() {
  [ -x /usr/sbin/slapd ] && return 0
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    say "installing OpenLDAP's slapd for the directory login tests (apt-get install slapd)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slapd >/dev/null
    return 0
  fi
  die "The directory login tests need OpenLDAP's slapd. Install it with:
  sudo apt-get install -y slapd"
}

# ensure_translation [optional]: what translates a question into English, and an English question
# into the documents' languages, when no model does: Apertium's English-Spanish and French-Spanish
# pairs (rule-based machine translation) and FreeDict's German, French and Spanish dictionaries,
# both ways. Installed when this runs as root with apt-get; otherwise, when optional, such
# questions are searched as asked, and the tests stop with the line that installs them.
TRANSLATION_PACKAGES="apertium apertium-eng-spa apertium-fr-es dict-freedict-deu-eng dict-freedict-fra-eng dict-freedict-spa-eng dict-freedict-eng-deu dict-freedict-eng-fra dict-freedict-eng-spa"
ensure_translation() {
  local dictd=/usr/share/dictd modes=/usr/share/apertium/modes
  [ -f $dictd/freedict-deu-eng.index ] && [ -f $dictd/freedict-fra-eng.index ] \
    && [ -f $dictd/freedict-spa-eng.index ] && [ -f $dictd/freedict-eng-deu.index ] \
    && [ -f $dictd/freedict-eng-fra.index ] && [ -f $dictd/freedict-eng-spa.index ] \
    && [ -f $modes/spa-eng.mode ] && [ -f $modes/eng-spa.mode ] && [ -f $modes/es-fr.mode ] \
    && [ -f $modes/fr-es.mode ] && command -v apertium >/dev/null 2>&1 && return 0
  local install="apt-get install -y $TRANSLATION_PACKAGES"
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    say "installing what translates questions in other languages ($install)"
    apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $TRANSLATION_PACKAGES >/dev/null
    return 0
  fi
  if [ "${1:-}" = "optional" ]; then
    say "Apertium or FreeDict's dictionaries not found: German, French and Spanish questions are
searched as asked (names and numbers only) unless a connected model translates them. Install:
  sudo $install"
    return 0
  fi
  die "The tests of questions in other languages need Apertium and FreeDict. Install them with:
  sudo $install"
}

# ensure_tesseract [optional]: Debian's Tesseract (models included) for OCR of scanned PDFs and
# images. Installed when this runs as root with apt-get; otherwise, when optional, the service
# runs without OCR and says so, and the tests stop at once with the line that installs it.
ensure_tesseract() {
  command -v tesseract >/dev/null 2>&1 && return 0
  local install="apt-get install -y tesseract-ocr"
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Tesseract for OCR ($install)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr >/dev/null
    return 0
  fi
  if [ "${1:-}" = "optional" ]; then
    say "Tesseract not found: OCR is off (scanned PDFs and images are refused). Install it with:
  sudo $install"
    return 0
  fi
  die "The OCR tests need Tesseract. Install it with:
  sudo $install"
}
