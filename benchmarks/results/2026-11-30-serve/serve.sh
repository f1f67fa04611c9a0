#!/usr/bin/env bash
# `specgen serve` (auto, copies only) against llama-server's draft-free methods, through the same
# OpenAI-style streamed chat request (`specgen bench --endpoint`), on the three held-out renames of
# stdlib-edits with their files as OpenAI's `prediction` (llama-server ignores the field), 512
# tokens, 2 threads each, R repeats. As 2026-11-29-specbench-live/serve.sh, except that `specgen
# serve` is up (its step costs measured at start-up) before the llama-servers start loading, so
# that it does not measure them on a busy machine. Each prompt carries Qwen2.5's default system
# message itself, so llama-server's Jinja template adds none and both servers render the same
# prompt. The bench also runs auto and the target alone in its own process. From the repository
# root, on an idle machine (where llama.cpp's AMX kernels crash, PRELOAD=path/to/noamx.so, as
# benchmarks/scripts/llama-cpp/draft_free.sh takes it):
#   BIN=path/to/llama.cpp/bin bash benchmarks/results/2026-11-30-serve/serve.sh OUT   (R=2: about 30 minutes)
set -u
L=${1:?OUT folder}; N=${N:-512}; R=${R:-2}; PY=${PYTHON:-.venv/bin/python}
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
up 8091
LD_PRELOAD=${PRELOAD:-} "$BIN/llama-server" -m $T -t 2 -c 4096 -np 1 --port 8092 --spec-type ngram-mod > "$L/llama-server-ngram-mod.log" 2>&1 &
S2=$!
LD_PRELOAD=${PRELOAD:-} "$BIN/llama-server" -m $T -t 2 -c 4096 -np 1 --port 8093 --spec-type ngram-map-k > "$L/llama-server-ngram-map-k.log" 2>&1 &
S3=$!
up 8092
up 8093
$PY -m specgen bench "$L/prompts.jsonl" --target $T --no-draft -k auto -r "$R" --warmup 0 -n $N -t 2 \
  --endpoint http://127.0.0.1:8091/v1 --endpoint http://127.0.0.1:8092/v1 --endpoint http://127.0.0.1:8093/v1 \
  --json "$L/serve.json" > "$L/serve.txt" 2>&1
kill -INT $S1; kill $S2 $S3; wait
