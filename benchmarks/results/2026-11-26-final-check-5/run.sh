#!/bin/bash
# How these files were made, at commit af45599, from the repository root ($T, $D: the 1.5B and 0.5B
# GGUF files; $BIN: the folder of llama.cpp's llama-speculative-simple, built by
# ../shared/anchors/build-llama-tools). Both prompts were written after every change they measure.
set -u
R=benchmarks/results/2026-11-26-final-check-5
python benchmarks/scripts/llama-cpp/template_prompts.py /tmp/fc5prompts $T $R/new.jsonl
python - <<'PY'
import json
for line in open("benchmarks/results/2026-11-26-final-check-5/new.jsonl"):
    record = json.loads(line)
    json.dump(record["json_schema"], open(f"/tmp/{record['name']}.schema.json", "w"))
PY
specgen bench $R/new.jsonl --target $T --draft $D -k auto --no-lookup \
  -r 4 --warmup 0 -n 256 -t 2 --json $R/bench.json > $R/bench.txt
for name in json-boiling json-museum; do
  for method in ngram-mod ngram-simple ngram-map-k; do
    out=$(timeout 600 $BIN/llama-speculative-simple -m $T --spec-type $method -f /tmp/fc5prompts/$name.txt \
          -jf /tmp/$name.schema.json -n 256 -t 2 --temp 0 -c 4096 2>&1)
    decoded=$(grep -oE "decoded +[0-9]+ tokens in +[0-9.]+ seconds, speed: +[0-9.]+" <<<"$out" | head -1)
    accepted=$(grep -oE "accept += [0-9.]+%" <<<"$out" | head -1)
    echo "$name $method | $decoded | $accepted"
  done
done > $R/llama.txt
