#!/bin/bash
# How these files were made, from the repository root of this commit ($T, $D: the 1.5B and 0.5B GGUF
# files; $OLD: a worktree of a165e1d, the commit before the change). For each of the six held-out
# record-list prompts, the bench of this commit and then of a165e1d, so that drift hits both alike;
# then the short answers (final-check-4's and final-check-5's prompts) with this commit.
set -u
ROOT=$PWD
R=$ROOT/benchmarks/results/2026-11-26-schema-foresight
H=$ROOT/benchmarks/prompts/heldout
for name in library csv meals fleet courses orders; do
  for tree in new old; do
    dir=$ROOT; [ $tree = old ] && dir=$OLD
    (cd $dir && python -m specgen bench $H/json-$name.jsonl --target $T --draft $D -k auto --no-lookup \
      -r 3 --warmup 0 -n 512 -t 2 --json $R/live-$tree-$name.json) > $R/live-$tree-$name.txt 2>&1
  done
done
python -m specgen bench $ROOT/benchmarks/results/2026-11-26-final-check-4/new.jsonl \
  $ROOT/benchmarks/results/2026-11-26-final-check-5/new.jsonl --target $T --draft $D -k auto --no-lookup \
  -r 4 --warmup 0 -n 256 -t 2 --json $R/short.json > $R/short.txt 2>&1
