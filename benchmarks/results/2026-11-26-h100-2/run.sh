#!/usr/bin/env bash
# The second H100 session, in one call of the `device` tool from the repository root, carrying
# .gpu/ (prepare.sh): llama.cpp comes prebuilt (build-cuda.sh), so the call's time goes to
#   1. the crash of 2026-11-26 (../2026-11-26-h100/README.md): a GGUF loaded in fresh processes,
#      raw or through specgen's Model, with numpy or llama_cpp imported first, with OpenBLAS on one
#      thread, under a handler that prints the native stack (segv.c) and under gdb where it has one;
#   2. then, loading the way that survives: llama-bench's decode speed, `specgen bench` on JSON-schema
#      and plain prompts (the Python share of a round on a GPU), `specgen run`, and the exactness
#      tests with every layer on the GPU.
# Random-weight stand-ins of the 1.5B:0.5B pair (../2026-11-26-h100/random_model.py): the real files
# cannot reach that machine. Everything printed lands in $OUT/log.txt.
set -u
R=benchmarks/results/2026-11-26-h100-2
R1=benchmarks/results/2026-11-26-h100
G=$PWD/.gpu
O=${OUT:-/tmp/out}
LIMIT=${LIMIT:-540}
mkdir -p "$O" /tmp/m /tmp/b
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
log() { echo "[$(elapsed) s] $*" | tee -a "$O/log.txt"; }
left() { [ $(( LIMIT - $(elapsed) )) -gt "$1" ]; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$G"/whl/*.whl || exit 1
export PYTHONPATH=$G/site:/tmp/site:$PWD PYTHONUNBUFFERED=1 LLAMA_CPP_LIB_PATH=/tmp/b/bin SPECGEN_CACHE_DIR=/tmp/sgcache

log "machine"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; python3 --version
  python3 -c 'import numpy, sys; print("numpy", numpy.__version__, numpy.__file__)'
  python3 -c 'import numpy; c = numpy.show_config(mode="dicts"); print("BLAS", c["Build Dependencies"]["blas"])' 2>&1 | tail -1
  command -v gdb || echo "no gdb"; ldd /tmp/b/bin/libggml-cuda.so | grep -i "not found\|cuda\|cublas"; } 2>&1 | tee -a "$O/log.txt"

QUANT=(/tmp/b/bin/llama-quantize)
if [ -f "$G/cuda.tar.xz" ]; then  # prebuilt here (build-cuda.sh)
  tar -xJf "$G/cuda.tar.xz" -C /tmp/b || exit 1
else  # the first session's way: from the trimmed source, 200-240 s on 16 cores, models meanwhile
  QUANT=(env LD_LIBRARY_PATH=$G/quant "$G/quant/llama-quantize")
  cmake -S "$G/llama.cpp" -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real -DGGML_CUDA_FA=OFF -DGGML_RPC=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF > /tmp/cmake.log 2>&1 || { tail -20 /tmp/cmake.log; exit 1; }
  (cmake --build /tmp/b -j"$(nproc)" --target llama llama-bench > /tmp/build.log 2>&1; echo $? > /tmp/build.rc) &
fi

log "random models in the background: the draft, then the target"
(
  for m in draft target; do
    gunzip -c "$G/skel/$m.gguf.gz" > "/tmp/m/$m-skel.gguf"
    python3 $R1/random_model.py fill "/tmp/m/$m-skel.gguf" "/tmp/m/$m-f16.gguf"
    "${QUANT[@]}" "/tmp/m/$m-f16.gguf" "/tmp/m/$m.tmp" Q4_K_M 8 > "/tmp/m/$m-quant.log" 2>&1 \
      && mv "/tmp/m/$m.tmp" "/tmp/m/$m.gguf" && echo "[$(elapsed) s] $m ready" || { echo "$m failed"; tail -3 "/tmp/m/$m-quant.log"; }
    rm -f "/tmp/m/$m-f16.gguf"
  done
) > /tmp/models.log 2>&1 &
models=$!
gcc -shared -fPIC -o /tmp/segv.so $R/segv.c || echo "no segv.so" | tee -a "$O/log.txt"
while [ ! -f "$G/cuda.tar.xz" ] && [ ! -e /tmp/build.rc ]; do sleep 2; done
if [ -e /tmp/build.rc ]; then
  log "built, exit $(cat /tmp/build.rc)"; [ "$(cat /tmp/build.rc)" = 0 ] || { tail -5 /tmp/build.log; exit 1; }
fi
while [ ! -e /tmp/m/draft.gguf ] && kill -0 $models 2>/dev/null; do sleep 1; done
cat /tmp/models.log | tee -a "$O/log.txt"
D=/tmp/m/draft.gguf T=/tmp/m/target.gguf

log "1. load order (the draft stand-in; each a fresh process)"
order() {  # NAME VARIANT [VAR=VALUE ...]: load_order.py VARIANT with those variables set
  local name=$1 variant=$2; shift 2
  env SPECGEN_EXTRA_BUFTS=0 SPECGEN_CACHE_DIR=/tmp/sgcache-order LD_PRELOAD=/tmp/segv.so "$@" timeout 60 python3 $R1/load_order.py $variant $D \
    > "$O/order-$name.txt" 2>&1
  local code=$?
  echo "$name: exit $code $(grep -m1 "^$variant " "$O/order-$name.txt")" | tee -a "$O/log.txt"
}
order numpy-first numpy-first
order llama-first llama-first
order model model
order model-llama-first model-llama-first
order numpy-first-openblas1 numpy-first OPENBLAS_NUM_THREADS=1
order model-openblas1 model OPENBLAS_NUM_THREADS=1
order model-amx-probe model SPECGEN_EXTRA_BUFTS=
for f in "$O"/order-*.txt; do
  grep -q "native stack" "$f" && { echo "== $(basename "$f")"; sed -n '/native stack/,$p' "$f" | head -30; } | tee -a "$O/log.txt"
done
if command -v gdb > /dev/null && grep -q "exit 139" "$O/log.txt"; then
  crashed=$(grep -m1 "exit 139" "$O/log.txt" | cut -d: -f1); variant=${crashed%-*}
  case $crashed in numpy-first|llama-first|model|model-llama-first) variant=$crashed ;; esac
  log "gdb on $crashed"
  SPECGEN_EXTRA_BUFTS=0 timeout 90 gdb -q -batch -ex run -ex bt -ex "info sharedlibrary" --args python3 $R1/load_order.py $variant $D \
    > "$O/gdb.txt" 2>&1; grep -A40 "SIGSEGV" "$O/gdb.txt" | head -45 | tee -a "$O/log.txt"
fi

SG=(python3 -m specgen) PYTEST=(python3 -m pytest) ENVS=(X=1)
if grep -q "^model: exit 0" "$O/log.txt"; then
  log "specgen's load survives as it is"
elif grep -q "^model-openblas1: exit 0" "$O/log.txt"; then
  log "specgen's load survives with OpenBLAS on one thread: the runs below set OPENBLAS_NUM_THREADS=1"
  export OPENBLAS_NUM_THREADS=1; ENVS=(OPENBLAS_NUM_THREADS=1)
elif grep -q "^model-llama-first: exit 0" "$O/log.txt"; then
  log "specgen's load survives with llama_cpp imported first: the runs below do that"
  SG=(python3 -c "import llama_cpp, runpy; runpy.run_module('specgen', run_name='__main__', alter_sys=True)")
  PYTEST=(python3 -c "import llama_cpp, sys, pytest; sys.exit(pytest.main(sys.argv[1:]))")
else
  log "no variant of specgen's load survives: stop"; exit 0
fi

wait $models; cat /tmp/models.log | tail -1 | tee -a "$O/log.txt"
D=$T order model-target model "${ENVS[@]}"
log "2. llama-bench: plain decoding of both stand-ins, for the runs below"
/tmp/b/bin/llama-bench -m $T -m $D -ngl 99 -p 0 -n 128 -r 3 -o md 2>&1 | grep "^|" | tee -a "$O/log.txt"

log "specgen run, the pair, with the draft's rounds shown"
"${SG[@]}" run --target $T --draft $D -n 64 --raw --json "def fibonacci(n):" > "$O/run.json" 2> "$O/run-err.txt"
echo "exit $?; $(wc -c < "$O/run.json") bytes out" | tee -a "$O/log.txt"; tail -3 "$O/run-err.txt" | tee -a "$O/log.txt"

H=benchmarks/prompts/heldout
if left 150; then
  log "specgen bench: two JSON-schema prompts, the pair"
  "${SG[@]}" bench $H/json-library.jsonl $H/json-csv.jsonl --target $T --draft $D -k auto,3 \
    -r 3 --warmup 1 -n 256 --json "$O/bench-pair.json" 2>&1 | tee -a "$O/log.txt"
fi
if left 110; then
  log "specgen bench: the same, copies only"
  "${SG[@]}" bench $H/json-library.jsonl $H/json-csv.jsonl --target $T --no-draft -k auto \
    -r 3 --warmup 1 -n 256 --json "$O/bench-copies.json" 2>&1 | tee -a "$O/log.txt"
fi
if left 70; then
  log "specgen bench: a plain rewrite prompt, the pair"
  "${SG[@]}" bench $H/async-edit.txt --target $T --draft $D -k auto -r 3 --warmup 1 -n 256 \
    --json "$O/bench-edit.json" 2>&1 | tee -a "$O/log.txt"
fi
if left 30; then
  log "3. exactness tests, every layer on the GPU"
  timeout $(( LIMIT - $(elapsed) - 10 )) "${PYTEST[@]}" -q -p no:cacheprovider -x \
    tests/decoding/test_exactness.py tests/decoding/test_constraint_exactness.py tests/decoding/test_logprobs.py \
    2>&1 | tail -25 | tee -a "$O/log.txt"
fi
log "done"
