#!/usr/bin/env bash
# Replays every recorded greedy output in the repository with --oracle on every curve of
# tests/copyreplay.py; one text file per recording in OUT (default: this folder's baseline/).
# Run from the repository root: bash benchmarks/results/2026-11-29-policy/run.sh [OUT]
# (env RISK: the loss budget's share, as copyreplay.py --risk; LOOK_MS: --look-ms, the Python ms of a
# weighing round (2026-12-01-look-cost); CURVE: --curve; PREDICT: --predict, each output beside a
# prediction of that kind (2026-12-01-prediction-trust); PYTHON, VOCAB)
set -euo pipefail
out=${1:-benchmarks/results/2026-11-29-policy/baseline}
vocab=${VOCAB:-$HOME/.cache/specgen-models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf}
python=${PYTHON:-python}
mkdir -p "$out"
declare -A files=(
  [dev]=tests/data/greedy-outputs.json
  [kinds]=benchmarks/results/2026-11-25-learnt-rewrites/replay-kinds.json
  [final]=benchmarks/results/2026-11-25-learnt-rewrites/replay-edits-reformats.json
  [reformat-seen]=benchmarks/results/2026-11-25-record-pattern-rules/seen-outputs.json
  [reformat-heldout]=benchmarks/results/2026-11-25-record-pattern-rules/heldout-outputs.json
  [reformat-heldout-2]=benchmarks/results/2026-11-25-record-pattern-rules/heldout-outputs-2.json
  [reformat-heldout-3]=benchmarks/results/2026-11-25-record-pattern-rules/heldout-outputs-3.json
  [json-tools]=benchmarks/results/2026-11-26-hindsight/json-tools-outputs.json
  [json-schema]=benchmarks/results/2026-11-26-schema-example/json-outputs.json
  [specbench]=benchmarks/results/2026-11-26-hindsight/specbench-outputs.json
  [specbench-dev]=benchmarks/results/2026-11-26-cold-start/replay-specbench-dev.json
)
for name in "${!files[@]}"; do
  PYTHONPATH=$PWD "$python" tests/copyreplay.py --oracle ${RISK:+--risk $RISK} ${LOOK_MS:+--look-ms $LOOK_MS} ${CURVE:+--curve $CURVE} ${PREDICT:+--predict $PREDICT} --vocab "$vocab" "${files[$name]}" > "$out/$name.txt" &
done
wait
