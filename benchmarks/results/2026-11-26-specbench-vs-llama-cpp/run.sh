#!/bin/bash
# How these files were made (from the repository root; $T, $D: the 1.5B and 0.5B GGUF files, $BIN: the
# folder holding llama.cpp's llama-speculative-simple, built by ../shared/anchors/build-llama-tools; $OUT: a folder).
set -u
H=benchmarks/prompts/heldout/specbench
python benchmarks/scripts/llama-cpp/template_prompts.py $OUT/prompts $T $H/{chat,translation,summarization,qa,math,rag}.jsonl
# 1. all five draft-free methods on every prompt (04:12-04:58; pytest ran beside it 04:18-04:36, see README)
N=128 bash benchmarks/scripts/llama-cpp/draft_free.sh $OUT/prompts $T $BIN > draft_free.txt
# 2. each prompt's two fastest methods of run 1 again (05:21-05:39), then specgen at once after (05:39-)
python - > $OUT/best2.txt <<'PY'
import re, collections
rates = collections.defaultdict(dict)
for line in open("draft_free.txt"):
    m = re.match(r"^(\S+) (\S+) \| decoded +\d+ tokens in +[\d.]+ seconds, speed: +([\d.]+)", line)
    if m: rates[m[1]][m[2]] = float(m[3])
for prompt, methods in sorted(rates.items()):
    for method in sorted(methods, key=methods.get, reverse=True)[:2]:
        print(prompt, method)
PY
while read prompt method; do
  out=$(timeout 600 $BIN/llama-speculative-simple -m $T --spec-type $method -f $OUT/prompts/$prompt.txt -n 128 -t 2 --temp 0 -c 4096 2>&1)
  decoded=$(grep -oE "decoded +[0-9]+ tokens in +[0-9.]+ seconds, speed: +[0-9.]+" <<<"$out" | head -1)
  accepted=$(grep -oE "accept += [0-9.]+%" <<<"$out" | head -1)
  echo "$prompt $method | $decoded | $accepted" >> draft_free_rerun.txt
done < $OUT/best2.txt
specgen bench $H/{chat,translation,summarization,qa,math,rag}.jsonl --target $T --draft $D -k auto --no-lookup \
    -r 1 --warmup 0 -n 128 -t 2 --json bench.json > bench.txt
python benchmarks/scripts/llama-cpp/compare.py draft_free_rerun.txt bench.json
