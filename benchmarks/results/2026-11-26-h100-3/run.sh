#!/usr/bin/env bash
# specgen against llama.cpp on an NVIDIA H100, in one call of the `device` tool, from the repository
# root (carry .gpu, made by prepare.sh). Builds llama.cpp with CUDA from the source llama-cpp-python
# vendors, makes random-weight stand-ins (../2026-11-26-h100/random_model.py; the real files cannot
# reach that machine):
#   T     the 1.5B target's shapes, 28 layers, Q4_K_M; layers 8 and on write into the residual
#         stream at a tenth of the scale (random_model.py --quiet-from 8 --scale 0.1)
#   S     T cut to its first 8 layers (the same weights): a draft that agrees with T 78% of the
#         time, teacher-forced (measured on the CPU first, README.md)
#   N     the 0.5B draft's shapes, its own random weights: a draft whose guesses are noise
# and measures: llama-bench's pass costs; specgen bench (target alone, auto, fixed k) with S and
# with N on short answers; the same on two JSON-schema prompts, with copies only too; and
# llama-speculative-simple with the same files and prompts. Everything lands in $OUT.
set -u
R=benchmarks/results/2026-11-26-h100-3
LOG=log.txt LIMIT=${LIMIT:-500}  # seconds this script may take; later steps are skipped past it
B=${BUILD:-/tmp/b}           # BUILD=an existing llama.cpp build folder skips the build (a dry run)
N_TOKENS=${N_TOKENS:-128} REPEATS=${REPEATS:-3}  # smaller in a dry run on a CPU
source benchmarks/scripts/device/common.sh
export PYTHONPATH=$PYTHONPATH:$PWD

log "machine"
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
  nproc; lscpu | grep -m1 "Model name"; python3 --version; } 2>&1 | tee -a "$O/log.txt"

log "random F16 models, in the background while llama.cpp builds"
fill_standins "target T --quiet-from 8 --scale 0.1" "target S --layers 8" "draft N" > /tmp/fill.log 2>&1 &
fill=$!

if [ ! -x "$B/bin/llama-speculative-simple" ]; then
  log "build"
  EXAMPLES=ON build_llama "$B" llama llama-bench llama-quantize llama-speculative-simple || exit 1
fi
log "built"
export LLAMA_CPP_LIB_PATH=$B/bin LD_LIBRARY_PATH=$B/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

wait $fill; cat /tmp/fill.log | tee -a "$O/log.txt"
for m in T S N; do
  "$B/bin/llama-quantize" "/tmp/m/$m-f16.gguf" "/tmp/m/$m.gguf" Q4_K_M 5 > "/tmp/m/$m-quant.log" 2>&1 \
    && rm -f "/tmp/m/$m-f16.gguf" &
done
wait; ls -la /tmp/m/*.gguf | tee -a "$O/log.txt"
T=/tmp/m/T.gguf S=/tmp/m/S.gguf N=/tmp/m/N.gguf
log "models ready"

log "llama-bench: pass costs by batch size and plain decoding, all layers on the GPU"
"$B/bin/llama-bench" -m $T -m $S -m $N -ngl 99 -p 1,2,3,4,6,8,16 -n $N_TOKENS -r $REPEATS -o md 2>&1 | quiet | tee -a "$O/log.txt"

P=/tmp/prompts; mkdir -p $P
H=benchmarks/prompts/heldout/specbench
{ head -2 $H/qa.jsonl; head -2 $H/chat.jsonl; head -1 $H/translation.jsonl; head -1 $H/math.jsonl; } > $P/short.jsonl
J=benchmarks/prompts/heldout
cat $J/json-library.jsonl $J/json-orders.jsonl > $P/json.jsonl
bench() {  # NAME ARGS...: specgen bench into $O/NAME.json, its table into the log
  local name=$1; shift
  left 45 || { log "skipped $name (time)"; return; }
  log "specgen bench $name: $*"
  timeout $(( LIMIT - $(elapsed) - 30 )) python3 -m specgen bench "$@" -r $REPEATS --warmup 1 -n $N_TOKENS \
    --json "$O/$name.json" 2>&1 | quiet | tee -a "$O/log.txt"
}
bench short-self $P/short.jsonl --target $T --draft $S -k auto,4
if left 40; then
  log "llama-speculative-simple, the same prompts chat-templated, T with S (draft-simple)"
  python3 -c "from specgen.llama.library import llama; llama(); import runpy, sys; sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name='__main__')" benchmarks/scripts/llama-cpp/template_prompts.py $P $T $P/short.jsonl > /dev/null
  for max in 3 8; do  # its default --spec-draft-n-max, and a longer draft
    for f in $P/*.txt; do
      left 10 || break
      out=$(timeout 30 "$B/bin/llama-speculative-simple" -m $T -md $S -ngl 99 -ngld 99 --spec-type draft-simple \
            --spec-draft-n-max $max -f $f -n $N_TOKENS --temp 0 -c 4096 2>&1)
      echo "draft-max $max $(basename $f .txt) | $(grep -oE "decoded +[0-9]+ tokens in +[0-9.]+ seconds, speed: +[0-9.]+" <<<"$out" | head -1) | $(grep -oE "accept += [0-9.]+%" <<<"$out" | head -1)"
    done
  done | tee -a "$O/log.txt"
fi
bench short-noise $P/short.jsonl --target $T --draft $N -k auto
bench json-self $P/json.jsonl --target $T --draft $S -k auto
bench json-copies $P/json.jsonl --target $T --no-draft -k auto

log "done"
