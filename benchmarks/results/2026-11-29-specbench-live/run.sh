#!/usr/bin/env bash
# Live on this machine (2 threads, greedy, 128 tokens), from the repository root, on an idle machine:
#   bash benchmarks/results/2026-11-29-specbench-live/run.sh OUT   (about 30 minutes)
# Held-out Spec-Bench prompts (benchmarks/prompts/heldout/specbench): all summaries and RAG answers,
# two each of QA, translation and math. auto without a draft model interleaved with the target
# alone (`specgen bench`, 3 repeats), and llama.cpp's draft-free methods on the same chat-templated
# prompts (llama-speculative-simple; its -f drops the file's last newline, so it is given back).
# env PROMPTS: a JSONL file of prompts to run instead of that set.
set -u
L=${1:?OUT folder}; N=${N:-128}; PY=${PYTHON:-.venv/bin/python}
M=~/.cache/specgen-models; T=$M/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
BIN=${BIN:-$(../shared/anchors/build-llama-tools "$PY" llama-speculative-simple)}
S=benchmarks/prompts/heldout/specbench
mkdir -p "$L"
if [ -n "${PROMPTS:-}" ]; then cp "$PROMPTS" "$L/prompts.jsonl"  # another set (benchmarks/results/2026-11-29-overlap)
else { cat $S/summarization.jsonl $S/rag.jsonl; head -2 $S/qa.jsonl; head -2 $S/translation.jsonl; head -2 $S/math.jsonl; } > "$L/prompts.jsonl"
fi
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
