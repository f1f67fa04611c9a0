#!/bin/bash
# How the live files were made, from the repository root of this commit ($T, $D: the 1.5B and 0.5B
# GGUF files; $OLD: a worktree of 0eca9e3, the commit before the change). For each of the six
# held-out record-list prompts and the three written for this run (new.jsonl), the bench of this
# commit and of 0eca9e3, one after the other, the order alternating by prompt, so drift hits both alike.
set -u
ROOT=$PWD
R=$ROOT/benchmarks/results/2026-11-26-copy-size-factor
H=$ROOT/benchmarks/prompts/heldout
split() {  # one prompt of new.jsonl to its own file
  grep "\"name\": \"json-$1\"" $R/new.jsonl > $R/prompt-$1.jsonl
}
n=0
for name in library csv meals fleet courses orders bridges patients sensors; do
  file=$H/json-$name.jsonl
  [ -f $file ] || { split $name; file=$R/prompt-$name.jsonl; }
  order="new old"; [ $((n % 2)) = 1 ] && order="old new"
  for tree in $order; do
    dir=$ROOT; [ $tree = old ] && dir=$OLD
    (cd $dir && python -m specgen bench $file --target $T --draft $D -k auto --no-lookup \
      -r 3 --warmup 0 -n 512 -t 2 --json $R/live-$tree-$name.json) > $R/live-$tree-$name.txt 2>&1
  done
  n=$((n + 1))
done
