#!/usr/bin/env bash
# `specgen serve` (auto, copies only) against llama-server's draft-free methods, through the same
# OpenAI-style streamed chat request (`specgen bench --endpoint`), on the three held-out renames of
# stdlib-edits with their files as OpenAI's `prediction` (llama-server ignores the field), 512
# tokens, 2 threads each, servers up at once and asked in turn. Each prompt carries Qwen2.5's
# default system message itself, so llama-server's Jinja template adds none and both servers
# render the same prompt. From the repository root, on an idle machine:
#   (the bench also runs auto and the target alone locally)
#   BIN=path/to/llama.cpp/bin bash benchmarks/results/2026-11-29-specbench-live/serve.sh OUT   (about 15 minutes)
set -u
L=${1:?OUT folder}; N=${N:-512}; PY=${PYTHON:-.venv/bin/python}
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
$PY -m specgen serve --target $T --no-draft -t 2 --port 8091 2> "$L/specgen-serve.log" &
S1=$!
"$BIN/llama-server" -m $T -t 2 -c 4096 -np 1 --port 8092 --spec-type ngram-mod > "$L/llama-server-ngram-mod.log" 2>&1 &
S2=$!
"$BIN/llama-server" -m $T -t 2 -c 4096 -np 1 --port 8093 --spec-type ngram-map-k > "$L/llama-server-ngram-map-k.log" 2>&1 &
S3=$!
for port in 8091 8092 8093; do
  for _ in $(seq 180); do curl -sf http://127.0.0.1:$port/health > /dev/null && break; sleep 1; done
done
$PY -m specgen bench "$L/prompts.jsonl" --target $T --no-draft -k auto -r 1 --warmup 0 -n $N -t 2 \
  --endpoint http://127.0.0.1:8091/v1 --endpoint http://127.0.0.1:8092/v1 --endpoint http://127.0.0.1:8093/v1 \
  --json "$L/serve.json" > "$L/serve.txt" 2>&1
kill -INT $S1; kill $S2 $S3; wait
