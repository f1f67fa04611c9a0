#!/usr/bin/env bash
# Live on this machine (2 threads, greedy, 128 tokens), from the repository root, on an idle machine:
#   bash benchmarks/results/2026-11-29-overlap/run.sh OUT   (about 25 minutes)
# The held-out Spec-Bench summaries and RAG answers (benchmarks/prompts/heldout/specbench), run as
# benchmarks/results/2026-11-29-specbench-live/run.sh runs its set: auto without a draft model
# interleaved with the target alone (`specgen bench`, 3 repeats), then llama.cpp's draft-free methods
# once each on the same chat-templated prompts.
set -eu
S=benchmarks/prompts/heldout/specbench
mkdir -p "${1:?OUT folder}"
cat $S/summarization.jsonl $S/rag.jsonl > "$1/set.jsonl"
PROMPTS="$1/set.jsonl" bash benchmarks/results/2026-11-29-specbench-live/run.sh "$1"
rm -f "$1/set.jsonl"
