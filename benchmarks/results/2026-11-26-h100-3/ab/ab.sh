#!/bin/bash
# interleaved: old tree (HEAD) and new tree, SmolLM2-135M as a fast target, copies only, auto vs -k 0
M=${SPECGEN_MODELS:-$HOME/.cache/specgen-models}/SmolLM2-135M-Instruct.Q4_1.gguf
H=/work/main/benchmarks/prompts/heldout/specbench
for rep in 1 2; do
  for tree in old new; do
    dir=/work/main; [ $tree = old ] && dir=/tmp/old
    (cd $dir && /work/main/.venv/bin/python -m specgen bench $H/*.jsonl --target $M --no-draft -k auto -r 2 --warmup 1 -n 128 -t 2 \
      --json /work/runs/s41/ab/$tree-$rep.json > /work/runs/s41/ab/$tree-$rep.txt 2>&1)
    grep -E "^\s+all|lookup-auto" /work/runs/s41/ab/$tree-$rep.txt | tail -1 | sed "s/^/$tree $rep: /"
  done
done
