#!/bin/bash
# How these files were made (from the repository root; $T, $D: the 1.5B and 0.5B GGUF files, $BIN: the
# folder holding llama.cpp's llama-speculative-simple, built by ../shared/anchors/build-llama-tools; $OUT: a folder).
# Each kind's best llama.cpp draft-free method is the one with the highest geometric mean over the kind's
# five prompts in ../2026-11-26-specbench-vs-llama-cpp/draft_free.txt (all five methods on every prompt).
# It runs on every prompt of its kind before specgen and again after, so the two passes bracket specgen's.
set -u
H=benchmarks/prompts/heldout/specbench
R=benchmarks/results/2026-11-26-specbench-per-kind
python benchmarks/scripts/llama-cpp/template_prompts.py $OUT/prompts $T $H/{chat,translation,summarization,qa,math,rag}.jsonl
declare -A BEST=([chat]=ngram-map-k [translation]=ngram-simple [summarization]=ngram-mod [qa]=ngram-map-k4v
                 [math]=ngram-map-k [rag]=ngram-map-k4v)
llama_pass() {
  for file in $OUT/prompts/*.txt; do
    prompt=$(basename $file .txt); method=${BEST[${prompt%-*}]}
    out=$(timeout 600 $BIN/llama-speculative-simple -m $T --spec-type $method -f $file -n 128 -t 2 --temp 0 -c 4096 2>&1)
    decoded=$(grep -oE "decoded +[0-9]+ tokens in +[0-9.]+ seconds, speed: +[0-9.]+" <<<"$out" | head -1)
    accepted=$(grep -oE "accept += [0-9.]+%" <<<"$out" | head -1)
    echo "$prompt $method | $decoded | $accepted"
  done
}
llama_pass > $R/llama_before.txt
specgen bench $H/{chat,translation,summarization,qa,math,rag}.jsonl --target $T --draft $D -k auto --no-lookup \
    -r 1 --warmup 0 -n 128 -t 2 --json $R/bench.json > $R/bench.txt
llama_pass > $R/llama_after.txt
python benchmarks/scripts/llama-cpp/compare.py --per-kind $R/llama_before.txt $R/llama_after.txt $R/bench.json > $R/compare.md
