#!/usr/bin/env bash
# The third call: auto before and after the weighing bound (`.old/specgen`: the commit before it,
# carried beside the tree), on the stand-ins of run.sh, interleaved. Builds only libllama and
# llama-quantize. Output: $OUT/log2.txt and the benches' JSON.
set -u
R=benchmarks/results/2026-11-26-h100-3
G=$PWD/.gpu
O=${OUT:-/tmp/out}
LIMIT=${LIMIT:-320}
B=/tmp/b
mkdir -p "$O" /tmp/m
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
log() { echo "[$(elapsed) s] $*" | tee -a "$O/log2.txt"; }
left() { [ $(( LIMIT - $(elapsed) )) -gt "$1" ]; }
quiet() { grep -v "^ggml_cuda_init\|^  Device\|^load_backend"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$G"/whl/*.whl || exit 1
export PYTHONPATH=$G/site:/tmp/site PYTHONUNBUFFERED=1 SPECGEN_CACHE_DIR=/tmp/sgcache
( for spec in "target T --quiet-from 8 --scale 0.1" "draft N" "target S --layers 8"; do
    set -- $spec
    [ -e "/tmp/m/$1-skel.gguf" ] || gunzip -c "$G/skel/$1.gguf.gz" > "/tmp/m/$1-skel.gguf"
    python3 benchmarks/results/2026-11-26-h100/random_model.py fill "/tmp/m/$1-skel.gguf" "/tmp/m/$2-f16.gguf" "${@:3}" && echo "$2 filled"
  done ) > /tmp/fill.log 2>&1 &
fill=$!
log "build"
cmake -S "$G/llama.cpp" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
  -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real -DGGML_CUDA_FA=OFF -DGGML_RPC=ON \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF > /tmp/cmake.log 2>&1 || { tail -20 /tmp/cmake.log | tee -a "$O/log2.txt"; exit 1; }
timeout $(( LIMIT - $(elapsed) - 60 )) cmake --build "$B" -j"$(nproc)" --target llama llama-quantize > /tmp/build.log 2>&1 \
  || { log "build stopped"; tail -5 /tmp/build.log | tee -a "$O/log2.txt"; exit 1; }
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
