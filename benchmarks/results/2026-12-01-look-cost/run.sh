#!/usr/bin/env bash
# Replays every recorded greedy output in the repository with --oracle on every curve of
# tests/copyreplay.py (or CURVE's), a weighing round costing LOOK_MS ms; one text file per
# recording in OUT. Run from the repository root:
#   LOOK_MS=0.3 bash benchmarks/results/2026-12-01-look-cost/run.sh OUT
# (env LOOK_MS: copyreplay.py --look-ms; CURVE: --curve; RISK: --risk; PYTHON, VOCAB)
# 2026-11-29-policy/run.sh with the two settings added.
set -euo pipefail
out=${1:?usage: run.sh OUT}
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
  PYTHONPATH=$PWD "$python" tests/copyreplay.py --oracle ${RISK:+--risk $RISK} ${LOOK_MS:+--look-ms $LOOK_MS} ${CURVE:+--curve $CURVE} --vocab "$vocab" "${files[$name]}" > "$out/$name.txt" &
done
wait
