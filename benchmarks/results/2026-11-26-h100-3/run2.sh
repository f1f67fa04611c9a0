#!/usr/bin/env bash
# The third call: auto before and after the weighing bound (`.old/specgen`: the commit before it,
# carried beside the tree), on the stand-ins of run.sh, interleaved. Builds only libllama and
# llama-quantize. Output: $OUT/log2.txt and the benches' JSON.
set -u
R=benchmarks/results/2026-11-26-h100-3
LOG=log2.txt LIMIT=${LIMIT:-320}
B=/tmp/b
source benchmarks/scripts/device/common.sh
fill_standins "target T --quiet-from 8 --scale 0.1" "draft N" "target S --layers 8" > /tmp/fill.log 2>&1 &
fill=$!
log "build"
build_llama "$B" llama llama-quantize || exit 1
log "built"
export LLAMA_CPP_LIB_PATH=$B/bin LD_LIBRARY_PATH=$B/bin
wait $fill
for m in T N S; do
  "$B/bin/llama-quantize" "/tmp/m/$m-f16.gguf" "/tmp/m/$m.gguf" Q4_K_M 5 > /dev/null 2>&1 && rm -f "/tmp/m/$m-f16.gguf" &
done
wait; log "models ready"
P=/tmp/prompts; mkdir -p $P
H=$PWD/benchmarks/prompts/heldout/specbench
{ head -2 $H/qa.jsonl; head -2 $H/chat.jsonl; head -1 $H/translation.jsonl; head -1 $H/math.jsonl; } > $P/short.jsonl
T=/tmp/m/T.gguf N=/tmp/m/N.gguf S=/tmp/m/S.gguf
bench() {  # TREE NAME ARGS...
  local tree=$1 name=$2; shift 2
  left 25 || { log "skipped $tree $name (time)"; return; }
  log "$tree: specgen bench $name"
  (cd "$tree" && timeout $(( LIMIT - $(elapsed) - 10 )) python3 -m specgen bench $P/short.jsonl "$@" -r 3 --warmup 1 -n 128 \
    --json "$O/$name.json" 2>&1 | quiet | grep "×" | tail -2 | tee -a "$O/log2.txt")
}
bench $PWD noise-new --target $T --draft $N -k auto
bench $PWD/.old noise-old --target $T --draft $N -k auto
bench $PWD self-new --target $T --draft $S -k auto
bench $PWD/.old self-old --target $T --draft $S -k auto
log "done"
