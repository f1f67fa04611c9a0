#!/usr/bin/env bash
# The second call of this session (run.sh was the first): specgen as users run it, with the load
# order fixed in specgen itself (no wrapper). Two builds of llama.cpp with CUDA:
#   L  prebuilt on this workplace's CPU machine (build-cuda.sh; .gpu/cuda.tar.xz), for the runs;
#   D  built here from the same source, as the first call's was, started only if numpy-first does
#      not crash with L: then D is the build that crashes, and the fix is checked on it at the end.
# With L: the near-tie behind the one exactness test that failed in the first call, the stand-ins'
# JSON-schema and plain benches, the exactness tests that use real llama.cpp. Output: $OUT/log.txt.
set -u
R=benchmarks/results/2026-11-26-h100-2
R1=benchmarks/results/2026-11-26-h100
G=$PWD/.gpu
O=${OUT:-/tmp/out}
LIMIT=${LIMIT:-380}
rm -rf /tmp/m /tmp/sgcache /tmp/build.rc; mkdir -p "$O" /tmp/m /tmp/b
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
log() { echo "[$(elapsed) s] $*" | tee -a "$O/log.txt"; }
left() { [ $(( LIMIT - $(elapsed) )) -gt "$1" ]; }
quiet() { grep -v "^ggml_cuda_init\|^  Device"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$G"/whl/*.whl || exit 1
tar -xJf "$G/cuda.tar.xz" -C /tmp/b || exit 1
export PYTHONPATH=$G/site:/tmp/site:$PWD PYTHONUNBUFFERED=1 LLAMA_CPP_LIB_PATH=/tmp/b/bin SPECGEN_CACHE_DIR=/tmp/sgcache
export LD_LIBRARY_PATH=/tmp/b/bin  # L's libraries name each other by a build folder of that machine
(
  for m in draft target; do
    gunzip -c "$G/skel/$m.gguf.gz" > "/tmp/m/$m-skel.gguf"
    python3 $R1/random_model.py fill "/tmp/m/$m-skel.gguf" "/tmp/m/$m-f16.gguf"
    /tmp/b/bin/llama-quantize "/tmp/m/$m-f16.gguf" "/tmp/m/$m.tmp" Q4_K_M 8 > "/tmp/m/$m-quant.log" 2>&1 \
      && mv "/tmp/m/$m.tmp" "/tmp/m/$m.gguf" && echo "[$(elapsed) s] $m ready" || { echo "$m failed"; tail -3 "/tmp/m/$m-quant.log"; }
    rm -f "/tmp/m/$m-f16.gguf"
  done
) > /tmp/models.log 2>&1 &
models=$!
gcc -shared -fPIC -o /tmp/segv.so $R/segv.c
while [ ! -e /tmp/m/draft.gguf ] && kill -0 $models 2>/dev/null; do sleep 1; done
D=/tmp/m/draft.gguf T=/tmp/m/target.gguf
log "draft ready; L's libggml-cuda exports $(nm -D --defined-only /tmp/b/bin/libggml-cuda.so | grep -c ' _ZNSo') std::ostream symbols"

order() {  # LIB_DIR VARIANT: load_order.py in a fresh process on that build
  LD_LIBRARY_PATH=$1 LLAMA_CPP_LIB_PATH=$1 SPECGEN_EXTRA_BUFTS=0 LD_PRELOAD=/tmp/segv.so timeout 60 python3 $R1/load_order.py $2 $D > /tmp/order.txt 2>&1
  echo "$2 on $1: exit $? $(grep -m1 "^$2 " /tmp/order.txt) $(grep -A3 'native stack' /tmp/order.txt | tail -2 | tr '\n' ' ')" | tee -a "$O/log.txt"
}
log "1. numpy first, with L"
order /tmp/b/bin numpy-first
if grep -q "^numpy-first on /tmp/b/bin: exit 0" "$O/log.txt"; then
  log "L survives numpy first: building D here in the background (nice, 12 jobs)"
  cmake -S "$G/llama.cpp" -B /tmp/bd -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real -DGGML_CUDA_FA=OFF -DGGML_RPC=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF > /tmp/cmake.log 2>&1 \
    && (nice -n 19 cmake --build /tmp/bd -j12 --target llama > /tmp/build.log 2>&1; echo $? > /tmp/build.rc) &
fi

log "specgen run as users run it (the AMX probe included), with L"
SPECGEN_DEBUG=1 LD_PRELOAD=/tmp/segv.so timeout 60 python3 -m specgen run --target $D -k 0 -n 16 --raw "def f(x):" > /tmp/run1.out 2> /tmp/run1.err
echo "exit $?; $(wc -c < /tmp/run1.out) bytes out; $(grep -c 'native stack' /tmp/run1.err) native stacks" | tee -a "$O/log.txt"
grep -m2 "internal error\|native stack" /tmp/run1.err | tee -a "$O/log.txt"; grep reason /tmp/sgcache/kernels.json 2>/dev/null | tee -a "$O/log.txt"

log "2. the near-tie behind the first call's failed exactness test (GPU, then CPU)"
timeout 60 python3 $R/near_tie.py -1 2>/dev/null | tee -a "$O/log.txt"
timeout 60 python3 $R/near_tie.py 0 2>/dev/null | tee -a "$O/log.txt"

wait $models; tail -1 /tmp/models.log | tee -a "$O/log.txt"
H=benchmarks/prompts/heldout
log "3. specgen bench: two JSON-schema prompts, the pair"
python3 -m specgen bench $H/json-library.jsonl $H/json-csv.jsonl --target $T --draft $D -k auto,3 \
  -r 3 --warmup 1 -n 256 --json "$O/bench-pair.json" 2>&1 | quiet | tee -a "$O/log.txt"
log "specgen bench: the same, copies only"
python3 -m specgen bench $H/json-library.jsonl $H/json-csv.jsonl --target $T --no-draft -k auto \
  -r 3 --warmup 1 -n 256 --json "$O/bench-copies.json" 2>&1 | quiet | tee -a "$O/log.txt"
if left 150; then
  log "specgen bench: a plain rewrite prompt, the pair"
  python3 -m specgen bench $H/async-edit.txt --target $T --draft $D -k auto -r 3 --warmup 1 -n 256 \
    --json "$O/bench-edit.json" 2>&1 | quiet | tee -a "$O/log.txt"
fi
log "4. the exactness tests on real llama.cpp, every layer on the GPU, with L"
reserve=8; [ -d /tmp/bd ] && reserve=60  # D's checks at the end
budget=$(( LIMIT - $(elapsed) - reserve ))
timeout $budget python3 -m pytest -q -p no:cacheprovider tests/decoding/test_constraint_exactness.py \
  tests/decoding/test_logprobs.py tests/decoding/test_prediction_exactness.py tests/decoding/test_suffix_exactness.py 2>&1 \
  | grep -E "passed|failed|^FAILED|^E  .*(assert|Error)" | head -20 | tee -a "$O/log.txt"

if [ -d /tmp/bd ]; then
  while [ ! -e /tmp/build.rc ] && left 40; do sleep 2; done
  if [ "$(cat /tmp/build.rc 2>/dev/null)" = 0 ]; then
    log "5. D (built here): numpy first, llama_cpp first, and specgen run as users run it"
    order /tmp/bd/bin numpy-first
    order /tmp/bd/bin llama-first
    rm -rf /tmp/sgcache
    LD_LIBRARY_PATH=/tmp/bd/bin LLAMA_CPP_LIB_PATH=/tmp/bd/bin LD_PRELOAD=/tmp/segv.so timeout 60 python3 -m specgen run --target $D -k 0 -n 16 --raw "def f(x):" > /tmp/run2.out 2> /tmp/run2.err
    echo "D, specgen run: exit $?; $(wc -c < /tmp/run2.out) bytes out; $(grep -c 'native stack' /tmp/run2.err) native stacks" | tee -a "$O/log.txt"
    grep reason /tmp/sgcache/kernels.json 2>/dev/null | tee -a "$O/log.txt"
    LD_LIBRARY_PATH=/tmp/bd/bin LLAMA_CPP_LIB_PATH=/tmp/bd/bin timeout 30 python3 -m pytest -q -p no:cacheprovider tests/decoding/test_logprobs.py 2>&1 | tail -1 | tee -a "$O/log.txt"
  else
    log "D not built in time ($(cat /tmp/build.rc 2>/dev/null || echo running)); $(grep -c 'Building' /tmp/build.log) steps"
  fi
fi
log "done"
