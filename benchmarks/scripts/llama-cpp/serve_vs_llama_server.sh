#!/usr/bin/env bash
# `specgen serve` (auto, copies only) against llama-server's draft-free methods (ngram-mod,
# ngram-map-k), through the same OpenAI-style streamed chat request (`specgen bench --endpoint`),
# on the three held-out renames of stdlib-edits with their files as OpenAI's `prediction`
# (llama-server ignores the field), N tokens (default 512), 2 threads each, R repeats (default 1;
# the bench reverses the configurations' order on every other repeat). Each prompt carries
# Qwen2.5's default system message itself, so llama-server's Jinja template adds none and both
# servers render the same prompt. The bench also runs auto and the target alone in its own
# process. `specgen serve` answers /health once it has measured its step costs; the llama-servers
# start after that, so that it measures them on a quiet machine (TOGETHER=1 starts all three at
# once, as the run of 2026-11-29-specbench-live did). From the repository root, on an idle machine:
#   BIN=path/to/llama.cpp/bin bash benchmarks/scripts/llama-cpp/serve_vs_llama_server.sh OUT
# (BIN defaults to what ../shared/anchors/build-llama-tools builds; where llama.cpp's AMX kernels
# crash, PRELOAD=path/to/noamx.so, as draft_free.sh takes it; R=2: about 30 minutes)
set -u
L=${1:?OUT folder}; N=${N:-512}; R=${R:-1}; PY=${PYTHON:-.venv/bin/python}
T=~/.cache/specgen-models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
BIN=${BIN:-$(../shared/anchors/build-llama-tools "$PY" llama-server)}
mkdir -p "$L"
cp benchmarks/prompts/heldout/stdlib-edits/{colorsys,genericpath,reprlib}.py "$L"/  # the predictions, read beside the prompts
$PY - "$L/prompts.jsonl" <<'PYEOF'
import json, sys
system = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
with open(sys.argv[1], "w") as out:
    for line in open("benchmarks/prompts/heldout/stdlib-edits/edits-predicted.jsonl"):
        record = json.loads(line)
        if any(f"stdlib-{name}" in record["name"] for name in ("colorsys", "genericpath", "reprlib")):
            prompt = record.pop("prompt")
            record["messages"] = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
            out.write(json.dumps(record) + "\n")
PYEOF
up() { for _ in $(seq 300); do curl -sf "http://127.0.0.1:$1/health" > /dev/null && return; sleep 1; done; }
$PY -m specgen serve --target $T --no-draft -t 2 --port 8091 2> "$L/specgen-serve.log" &
S1=$!
[ "${TOGETHER:-0}" = 1 ] || up 8091
LD_PRELOAD=${PRELOAD:-} "$BIN/llama-server" -m $T -t 2 -c 4096 -np 1 --port 8092 --spec-type ngram-mod > "$L/llama-server-ngram-mod.log" 2>&1 &
S2=$!
LD_PRELOAD=${PRELOAD:-} "$BIN/llama-server" -m $T -t 2 -c 4096 -np 1 --port 8093 --spec-type ngram-map-k > "$L/llama-server-ngram-map-k.log" 2>&1 &
S3=$!
for port in 8091 8092 8093; do up $port; done
$PY -m specgen bench "$L/prompts.jsonl" --target $T --no-draft -k auto -r "$R" --warmup 0 -n $N -t 2 \
  --endpoint http://127.0.0.1:8091/v1 --endpoint http://127.0.0.1:8092/v1 --endpoint http://127.0.0.1:8093/v1 \
  --json "$L/serve.json" > "$L/serve.txt" 2>&1
kill -INT $S1; kill $S2 $S3; wait
rm -f "$L"/{colorsys,genericpath,reprlib}.py
