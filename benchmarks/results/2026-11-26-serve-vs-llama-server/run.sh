#!/bin/bash
# specgen serve and llama-server (two draft-free methods) on the stdlib edits with their predictions, via bench --endpoint
cd "$(git rev-parse --show-toplevel)"
T=$MODELS/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
D=$MODELS/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
B=$LLAMA_BIN
exec 9>/tmp/cpu.lock; flock 9
specgen serve --target $T --draft $D -t 2 --port 8091 2> ./serve-specgen.log &
S1=$!
$B/llama-server -m $T -t 2 -c 4096 -np 1 --port 8092 --spec-type ngram-cache > ./serve-llama-cache.log 2>&1 &
S2=$!
$B/llama-server -m $T -t 2 -c 4096 -np 1 --port 8093 --spec-type ngram-mod > ./serve-llama-mod.log 2>&1 &
S3=$!
for port in 8091 8092 8093; do
  for i in $(seq 120); do curl -sf http://127.0.0.1:$port/health > /dev/null && break; sleep 1; done
done
specgen bench benchmarks/prompts/heldout/stdlib-edits/edits-predicted-3.jsonl --target $T --draft $D -k auto --no-lookup -r 1 --warmup 0 -n 1024 -t 2   --endpoint http://127.0.0.1:8091/v1 --endpoint http://127.0.0.1:8092/v1 --endpoint http://127.0.0.1:8093/v1 --json ./serve.json > ./serve.out 2> ./serve.err
kill -INT $S1; kill $S2 $S3; wait
