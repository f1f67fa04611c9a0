#!/usr/bin/env bash
# specgen on an NVIDIA H100, in one call of this workplace's `device` tool, from the repository root:
#   builds llama.cpp with CUDA from the source llama-cpp-python 0.3.36 vendors, makes random-weight
#   stand-ins of the 1.5B:0.5B pair (random_model.py; the real files cannot reach that machine),
#   measures the verify curve with llama-bench, runs `specgen bench` on two JSON-schema prompts and
#   the exactness tests on the GPU. Everything it prints also lands in $OUT. Before them it checks
#   whether specgen's model load survives there, with numpy or llama_cpp imported first
#   (load_order.py: the crash of 2026-11-26, README.md).
#
# It reads .gpu/ (ignored by git, carried with the call; made by prepare.sh):
#   .gpu/llama.cpp  the vendored llama.cpp, trimmed to what these targets need
#   .gpu/site       pure-Python packages in the versions this repository's venv has (llama_cpp
#                   without its CPU libraries, gguf, typer, rich, ...)
#   .gpu/skel       the real GGUFs' keys and tensor shapes, no weights (random_model.py skeleton)
#   .gpu/quant      a CPU build of llama-quantize and its libraries
#   .gpu/whl        wheels for Python 3.12 of what typer needs and that machine lacks (pydantic)
set -u
R=benchmarks/results/2026-11-26-h100
G=$PWD/.gpu
O=${OUT:-/tmp/out}
LIMIT=${LIMIT:-560}  # seconds this script may take; later steps are skipped past it
mkdir -p "$O" /tmp/m
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
log() { echo "[$(elapsed) s] $*" | tee -a "$O/log.txt"; }
left() { [ $(( LIMIT - $(elapsed) )) -gt "$1" ]; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$G"/whl/*.whl || exit 1
export PYTHONPATH=$G/site:/tmp/site:$PWD PYTHONUNBUFFERED=1

log "machine"
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
  nvcc --version | tail -1; nproc; lscpu | grep -m1 "Model name"; python3 --version; } 2>&1 | tee -a "$O/log.txt"

log "random models, in the background while llama.cpp builds"
(
  for m in target draft; do
    gunzip -c "$G/skel/$m.gguf.gz" > "/tmp/m/$m-skel.gguf"
    python3 $R/random_model.py fill "/tmp/m/$m-skel.gguf" "/tmp/m/$m-f16.gguf"
    if LD_LIBRARY_PATH=$G/quant "$G/quant/llama-quantize" "/tmp/m/$m-f16.gguf" "/tmp/m/$m.gguf" Q4_K_M 8 > "/tmp/m/$m-quant.log" 2>&1; then
      echo "$m: Q4_K_M"; rm -f "/tmp/m/$m-f16.gguf"
    else
      echo "$m: llama-quantize failed, F16"; tail -3 "/tmp/m/$m-quant.log"; mv "/tmp/m/$m-f16.gguf" "/tmp/m/$m.gguf"
    fi
  done
  ls -la /tmp/m
) > /tmp/models.log 2>&1 &
models=$!

log "build"
if [ ! -x /tmp/b/bin/llama-bench ]; then
  cmake -S "$G/llama.cpp" -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real -DGGML_CUDA_FA=OFF -DGGML_RPC=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF > /tmp/cmake.log 2>&1 || { tail -20 /tmp/cmake.log; exit 1; }
fi
if [ ! -x /tmp/b/bin/llama-bench ]; then  # a second call on the same warm machine resumes here
  timeout $(( LIMIT - $(elapsed) - 20 )) cmake --build /tmp/b -j"$(nproc)" --target llama llama-bench >> /tmp/build.log 2>&1
  status=$?; tail -40 /tmp/build.log > /tmp/build-tail.log
  [ $status -eq 0 ] || { log "build stopped ($status)"; tail -5 /tmp/build.log; exit 1; }
fi
log "built"; ls /tmp/b/bin
export LLAMA_CPP_LIB_PATH=/tmp/b/bin

wait $models; tee -a "$O/log.txt" < /tmp/models.log
log "models ready"
T=/tmp/m/target.gguf D=/tmp/m/draft.gguf

log "load order: numpy or llama_cpp first, raw and through specgen's Model (README.md, the lead)"
for variant in numpy-first llama-first model-llama-first model; do
  SPECGEN_CACHE_DIR=/tmp/sgcache timeout 60 python3 $R/load_order.py $variant $T > /tmp/order.out 2>&1
  echo "$variant: exit $? $(grep -v Device /tmp/order.out | tail -1)" | tee -a "$O/log.txt"
done
SG=(python3 -m specgen) PYTEST=(python3 -m pytest)
if ! grep -q "^model: exit 0" "$O/log.txt" && grep -q "^model-llama-first: exit 0" "$O/log.txt"; then
  log "specgen's load dies unless llama_cpp comes first: the runs below import it first"
  SG=(python3 -c "import llama_cpp, runpy; runpy.run_module('specgen', run_name='__main__', alter_sys=True)")
  PYTEST=(python3 -c "import llama_cpp, sys, pytest; sys.exit(pytest.main(sys.argv[1:]))")
fi

log "llama-bench: batch sizes 1-64 and 128-token decoding, all layers on the GPU"
/tmp/b/bin/llama-bench -m $T -m $D -ngl 99 -p 1,2,3,4,6,8,12,16,24,32,48,64 -n 128 -r 5 -o md 2>&1 | tee -a "$O/log.txt"

log "specgen doctor"
"${SG[@]}" doctor 2>&1 | tee -a "$O/log.txt"

H=benchmarks/prompts/heldout
if left 150; then
  log "specgen bench: the random pair on two JSON-schema prompts"
  "${SG[@]}" bench $H/json-library.jsonl $H/json-csv.jsonl --target $T --draft $D -k auto,3 \
    -r 3 --warmup 1 -n 256 --json "$O/bench-pair.json" 2>&1 | tee -a "$O/log.txt"
fi
if left 100; then
  log "specgen bench: copies only"
  "${SG[@]}" bench $H/json-library.jsonl $H/json-csv.jsonl --target $T --no-draft -k auto \
    -r 3 --warmup 1 -n 256 --json "$O/bench-copies.json" 2>&1 | tee -a "$O/log.txt"
fi
if left 40; then
  log "exactness tests with every layer on the GPU"
  timeout $(( LIMIT - $(elapsed) - 10 )) "${PYTEST[@]}" -q -p no:cacheprovider \
    tests/decoding/test_exactness.py tests/decoding/test_constraint_exactness.py tests/decoding/test_logprobs.py \
    tests/decoding/test_loop.py 2>&1 | tail -40 | tee -a "$O/log.txt"
fi
log "done"
