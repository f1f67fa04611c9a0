#!/usr/bin/env bash
# Live checks of issue 45 on this machine (2 threads, greedy), from the repository root, on an idle
# machine: bash benchmarks/results/2026-11-29-renames/live/run.sh OUT   (about 40 minutes)
# The three held-out renames of benchmarks/prompts/heldout/stdlib-edits (colorsys, genericpath,
# reprlib), 512 tokens: auto against the target alone with the file as prediction and without;
# llama.cpp's draft-free methods on the same chat-templated prompts; the target's greedy outputs
# recorded and replayed on the verify curve each bench measured (item 5: does the replay predict live?).
set -u
L=${1:?OUT folder}; N=${N:-512}; PY=${PYTHON:-.venv/bin/python}
M=~/.cache/specgen-models; T=$M/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
BIN=${BIN:-$(../shared/anchors/build-llama-tools "$PY" llama-speculative-simple)}
S=benchmarks/prompts/heldout/stdlib-edits
mkdir -p "$L"
cp $S/colorsys.py $S/genericpath.py $S/reprlib.py "$L"/
for f in edits edits-predicted; do
  grep -E '"name": "stdlib-(colorsys|genericpath|reprlib)' $S/$f.jsonl > "$L/$f.jsonl"
done
$PY -m specgen bench "$L/edits-predicted.jsonl" --target $T --no-draft -k auto -r 3 --warmup 0 -n $N -t 2 \
  --json "$L/predicted.json" > "$L/predicted.txt" 2>&1
$PY -m specgen bench "$L/edits.jsonl" --target $T --no-draft -k auto -r 3 --warmup 0 -n $N -t 2 \
  --json "$L/plain.json" > "$L/plain.txt" 2>&1
$PY benchmarks/scripts/llama-cpp/template_prompts.py "$L/P" $T "$L/edits.jsonl" > /dev/null 2>&1
for prompt in "$L"/P/*.txt; do
  { cat "$prompt"; echo; } > "$L/ask.txt"  # -f drops a file's last newline, and the template ends in one
  for method in ngram-mod ngram-cache ngram-map-k ngram-simple; do
    out=$(timeout 600 "$BIN/llama-speculative-simple" -m $T --spec-type $method -f "$L/ask.txt" -n $N -t 2 --temp 0 -c 4096 2>&1)
    echo "$(basename "$prompt" .txt) $method | $(grep -oE "decoded +[0-9]+ tokens in +[0-9.]+ seconds, speed: +[0-9.]+" <<<"$out" | head -1) | $(grep -oE "accept += [0-9.]+%" <<<"$out" | head -1)"
  done
done > "$L/llama.txt"
$PY benchmarks/scripts/record_outputs.py $T "$L/outputs.json" "$L/edits.jsonl" -n $N > /dev/null 2>&1
for run in plain predicted; do  # each bench's measured curve as a cost cache, for copyreplay --curve cached
  mkdir -p "$L/cache-$run/step-costs"
  $PY -c "import json, sys; d = json.load(open(sys.argv[1]))['step_costs']; json.dump({'verify': d['verify'], 'switch': d['switch']}, open(sys.argv[2], 'w'))" \
    "$L/$run.json" "$L/cache-$run/step-costs/live.json"
done
SPECGEN_CACHE_DIR="$L/cache-plain" PYTHONPATH=$PWD $PY tests/copyreplay.py --curve cached --oracle --vocab $T "$L/outputs.json" > "$L/replay-live-plain.txt"
SPECGEN_CACHE_DIR="$L/cache-predicted" PYTHONPATH=$PWD $PY tests/copyreplay.py --curve cached --predict file --vocab $T "$L/outputs.json" > "$L/replay-live-predicted.txt"
