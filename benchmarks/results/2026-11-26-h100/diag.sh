#!/usr/bin/env bash
# The second device call (run.sh's `specgen bench` and tests died at model load without a word):
# build libllama with CUDA only, make the random target, and run specgen with faulthandler and
# llama.cpp's log, with the CPU's extra buffer types as specgen chooses them and forced off.
set -u
R=benchmarks/results/2026-11-26-h100
G=$PWD/.gpu
O=${OUT:-/tmp/out}
mkdir -p "$O" /tmp/m
start=$(date +%s)
log() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$O/diag.txt"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$G"/whl/*.whl || exit 1
export PYTHONPATH=$G/site:/tmp/site:$PWD PYTHONUNBUFFERED=1 SPECGEN_CACHE_DIR=/tmp/sgcache
(
  gunzip -c "$G/skel/target.gguf.gz" > /tmp/m/target-skel.gguf
  nice python3 $R/random_model.py fill /tmp/m/target-skel.gguf /tmp/m/target-f16.gguf
  LD_LIBRARY_PATH=$G/quant nice "$G/quant/llama-quantize" /tmp/m/target-f16.gguf /tmp/m/target.gguf Q4_K_M 4 > /tmp/m/q.log 2>&1
) &
models=$!
log "build"
cmake -S "$G/llama.cpp" -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
  -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real -DGGML_CUDA_FA=OFF -DGGML_RPC=ON \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF > /tmp/cmake.log 2>&1 || { tail -20 /tmp/cmake.log; exit 1; }
cmake --build /tmp/b -j"$(nproc)" --target llama > /tmp/build.log 2>&1 || { tail -20 /tmp/build.log; exit 1; }
log "built"
export LLAMA_CPP_LIB_PATH=/tmp/b/bin
wait $models
log "model: $(ls -la /tmp/m/target.gguf)"
T=/tmp/m/target.gguf
for extra in "" 0; do
  log "run, SPECGEN_EXTRA_BUFTS=${extra:-unset}"
  SPECGEN_EXTRA_BUFTS=$extra SPECGEN_DEBUG=1 timeout 40 python3 -X faulthandler -m specgen run --target $T --no-draft \
    -n 16 --raw "def f(x):" > /tmp/run.out 2> /tmp/run.err
  log "exit $?; stdout $(wc -c < /tmp/run.out) bytes"
  grep -v "^llama_model_loader: - \|^print_info\|^load_tensors: .*= \|^llama_kv\|^llama_context: \|^init_tokenizer\|^load: " /tmp/run.err | tail -60 | tee -a "$O/diag.txt"
done
ls /tmp/sgcache; cat /tmp/sgcache/kernels.json 2>/dev/null | tee -a "$O/diag.txt"
H=benchmarks/prompts/heldout
log "bench, copies only, extra buffer types off"
SPECGEN_EXTRA_BUFTS=0 timeout 75 python3 -m specgen bench $H/json-library.jsonl --target $T --no-draft -k auto \
  -r 2 --warmup 1 -n 256 --json "$O/bench-copies.json" 2>&1 | tee -a "$O/diag.txt"
log "done"
