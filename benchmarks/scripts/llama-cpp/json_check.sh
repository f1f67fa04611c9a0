#!/bin/bash
# JSON-schema prompts (a folder's new.jsonl) through `specgen bench` (auto against the target alone)
# and through llama.cpp's llama-speculative-simple with its draft-free methods under the same
# schema, on the same chat-templated prompts. From the repository root:
#
#   benchmarks/scripts/llama-cpp/json_check.sh FOLDER REPEATS
#
# $T, $D: the 1.5B and 0.5B GGUF files; $BIN: the folder of llama-speculative-simple
# (../shared/anchors/build-llama-tools). Writes FOLDER/bench.{txt,json} and FOLDER/llama.txt.
set -u
R=$1 REPEATS=$2
P=$(mktemp -d)
python benchmarks/scripts/llama-cpp/template_prompts.py $P $T $R/new.jsonl
python - $R/new.jsonl $P <<'PY'
import json, sys
for line in open(sys.argv[1]):
    record = json.loads(line)
    json.dump(record["json_schema"], open(f"{sys.argv[2]}/{record['name']}.schema.json", "w"))
PY
specgen bench $R/new.jsonl --target $T --draft $D -k auto --no-lookup \
  -r $REPEATS --warmup 0 -n 256 -t 2 --json $R/bench.json > $R/bench.txt
for name in $(python -c 'import json,sys; [print(json.loads(l)["name"]) for l in open(sys.argv[1])]' $R/new.jsonl); do
  for method in ngram-mod ngram-simple ngram-map-k; do
    out=$(timeout 600 $BIN/llama-speculative-simple -m $T --spec-type $method -f $P/$name.txt \
          -jf $P/$name.schema.json -n 256 -t 2 --temp 0 -c 4096 2>&1)
    decoded=$(grep -oE "decoded +[0-9]+ tokens in +[0-9.]+ seconds, speed: +[0-9.]+" <<<"$out" | head -1)
    accepted=$(grep -oE "accept += [0-9.]+%" <<<"$out" | head -1)
    echo "$name $method | $decoded | $accepted"
  done
done > $R/llama.txt
rm -rf $P
