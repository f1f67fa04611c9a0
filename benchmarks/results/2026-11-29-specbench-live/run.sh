#!/usr/bin/env bash
# Live on this machine (2 threads, greedy, 128 tokens), from the repository root, on an idle machine:
#   bash benchmarks/results/2026-11-29-specbench-live/run.sh OUT   (about 30 minutes)
# Held-out Spec-Bench prompts (benchmarks/prompts/heldout/specbench): all summaries and RAG answers,
# two each of QA, translation and math. auto without a draft model interleaved with the target
# alone (`specgen bench`, 3 repeats), and llama.cpp's draft-free methods on the same chat-templated
# prompts (benchmarks/scripts/llama-cpp/draft_free.sh: five methods, each line marked `stop eog` or
# `stop length`; the llama.txt files recorded here ran four, before draft_free.sh marked the stop).
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
N=$N bash benchmarks/scripts/llama-cpp/draft_free.sh "$L/P" $T "$BIN" > "$L/llama.txt"
