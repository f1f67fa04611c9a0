#!/usr/bin/env bash
# Live on this machine (2 threads, greedy, 128 tokens), from the repository root, on an idle machine:
#   bash benchmarks/results/2026-11-29-overlap/run.sh OUT   (about 20 minutes)
# The held-out Spec-Bench summaries and RAG answers (benchmarks/prompts/heldout/specbench): auto
# without a draft model interleaved with the target alone (`specgen bench`, 3 repeats), then
# llama.cpp's draft-free methods on the same chat-templated prompts (llama-speculative-simple, one
# run each; its -f drops the file's last newline, so it is given back). As
# benchmarks/results/2026-11-29-specbench-live/run.sh, for these two kinds only.
set -u
L=${1:?OUT folder}; N=${N:-128}; PY=${PYTHON:-.venv/bin/python}
M=~/.cache/specgen-models; T=$M/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
BIN=${BIN:-$(../shared/anchors/build-llama-tools "$PY" llama-speculative-simple)}
S=benchmarks/prompts/heldout/specbench
mkdir -p "$L"
cat $S/summarization.jsonl $S/rag.jsonl > "$L/prompts.jsonl"
$PY -m specgen bench "$L/prompts.jsonl" --target $T --no-draft -k auto -r 3 --warmup 0 -n $N -t 2 \
  --json "$L/bench.json" > "$L/bench.txt" 2>&1
$PY benchmarks/scripts/llama-cpp/template_prompts.py "$L/P" $T "$L/prompts.jsonl" > /dev/null 2>&1
for prompt in "$L"/P/*.txt; do
  { cat "$prompt"; echo; } > "$L/ask.txt"
  for method in ngram-simple ngram-map-k ngram-mod ngram-cache; do
    out=$(timeout 600 "$BIN/llama-speculative-simple" -m $T --spec-type $method -f "$L/ask.txt" -n $N -t 2 --temp 0 -c 4096 2>&1)
    echo "$(basename "$prompt" .txt) $method | $(grep -oE "decoded +[0-9]+ tokens in +[0-9.]+ seconds, speed: +[0-9.]+" <<<"$out" | head -1) | $(grep -oE "accept += [0-9.]+%" <<<"$out" | head -1)"
  done
done > "$L/llama.txt"
rm -f "$L/ask.txt"
