#!/usr/bin/env bash
# Replays every recorded greedy output with --oracle on every curve of tests/copyreplay.py, with
# one trial variant applied (variants/NAME.py, executed before the replay; none: today's policy).
# Run from the repository root: bash benchmarks/results/2026-11-29-frontier/run.sh NAME OUT
# (env RISK: the loss budget's share, as copyreplay.py --risk; PYTHON, VOCAB)
set -euo pipefail
name=$1
out=$2
here=benchmarks/results/2026-11-29-frontier
vocab=${VOCAB:-$HOME/.cache/specgen-models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf}
python=${PYTHON:-python}
patch=$here/variants/$name.py
[ -f "$patch" ] || patch=/dev/null
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
for recording in "${!files[@]}"; do
  PYTHONPATH=$PWD:$PWD/tests "$python" -c "
import sys
sys.argv = ['copyreplay.py', '--oracle', *'${RISK:+--risk $RISK}'.split(), '--vocab', '$vocab', '${files[$recording]}']
exec(open('$patch').read())
import copyreplay
copyreplay.main()
" > "$out/$recording.txt" &
done
wait
