#!/bin/bash
# CPU A/B of the switch-aware costs: this tree (new) against 115ef3a (old, unpacked beside it by
# `mkdir .old && git archive 115ef3a specgen | tar x -C .old`), interleaved twice, three JSON
# record lists (json3.jsonl), the 1.5B:0.5B pair, 2 threads. From the repository root.
set -u
T=~/.cache/specgen-models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf D=~/.cache/specgen-models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
O=$(realpath "${O:-benchmarks/results/2026-11-27-h100-4/cpu-ab}") VENV=${VENV:-$PWD/.venv}
for i in 1 2; do
  for tree in new old; do
    dir=$PWD; [ $tree = old ] && dir=$PWD/.old
    (cd "$dir" && "$VENV"/bin/python -m specgen bench "$O"/json3.jsonl --target $T --draft $D -k auto --no-lookup \
       -r 2 --warmup 0 -n 256 -t 2 --json "$O/$tree-$i.json" > "$O/$tree-$i.txt" 2>&1)
    echo "$tree-$i $(grep -E '^ +all' -A1 "$O/$tree-$i.txt" | tail -1)"
  done
done
