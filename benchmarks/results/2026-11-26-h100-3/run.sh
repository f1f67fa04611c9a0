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
G=$PWD/.gpu
O=${OUT:-/tmp/out}
LIMIT=${LIMIT:-500}          # seconds this script may take; later steps are skipped past it
B=${BUILD:-/tmp/b}           # BUILD=an existing llama.cpp build folder skips the build (a dry run)
N_TOKENS=${N_TOKENS:-128} REPEATS=${REPEATS:-3}  # smaller in a dry run on a CPU
mkdir -p "$O" /tmp/m
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
log() { echo "[$(elapsed) s] $*" | tee -a "$O/log.txt"; }
left() { [ $(( LIMIT - $(elapsed) )) -gt "$1" ]; }
quiet() { grep -v "^ggml_cuda_init\|^  Device\|^load_backend"; }
[ -d "$G/whl" ] && python3 -c "import sys; sys.exit(sys.version_info[:2] != (3, 12))" && { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$G"/whl/*.whl || exit 1; }
export PYTHONPATH=$G/site:/tmp/site:$PWD PYTHONUNBUFFERED=1 SPECGEN_CACHE_DIR=/tmp/sgcache

log "machine"
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
  nproc; lscpu | grep -m1 "Model name"; python3 --version; } 2>&1 | tee -a "$O/log.txt"

log "random F16 models, in the background while llama.cpp builds"
( for spec in "target T --quiet-from 8 --scale 0.1" "target S --layers 8" "draft N"; do
    set -- $spec
    [ -e "/tmp/m/$1-skel.gguf" ] || gunzip -c "$G/skel/$1.gguf.gz" > "/tmp/m/$1-skel.gguf"
    python3 benchmarks/results/2026-11-26-h100/random_model.py fill "/tmp/m/$1-skel.gguf" "/tmp/m/$2-f16.gguf" "${@:3}" && echo "$2 filled"
  done ) > /tmp/fill.log 2>&1 &
fill=$!

if [ ! -x "$B/bin/llama-speculative-simple" ]; then
  log "build"
  cmake -S "$G/llama.cpp" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real -DGGML_CUDA_FA=OFF -DGGML_RPC=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF > /tmp/cmake.log 2>&1 || { tail -20 /tmp/cmake.log | tee -a "$O/log.txt"; exit 1; }
  timeout $(( LIMIT - $(elapsed) - 120 )) cmake --build "$B" -j"$(nproc)" \
    --target llama llama-bench llama-quantize llama-speculative-simple > /tmp/build.log 2>&1
  status=$?; tail -30 /tmp/build.log > "$O/build-tail.txt"
  [ $status -eq 0 ] || { log "build stopped ($status)"; tail -5 /tmp/build.log | tee -a "$O/log.txt"; exit 1; }
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
