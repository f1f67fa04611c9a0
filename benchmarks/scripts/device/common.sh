# Sourced by the device scripts under benchmarks/results/*-h100-*/ (from the repository root, on
# the device machine): a clock and a log for a call with a time limit, and the Python packages
# that machine lacks, from .gpu/ (`benchmarks/results/2026-11-26-h100-3/prepare.sh` makes it).
# Set LOG (a file name under $OUT) and LIMIT (seconds) first.
G=$PWD/.gpu
O=${OUT:-/tmp/out}
mkdir -p "$O" /tmp/m
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
log() { echo "[$(elapsed) s] $*" | tee -a "$O/$LOG"; }
left() { [ $(( LIMIT - $(elapsed) )) -gt "$1" ]; }
quiet() { grep -v "^ggml_cuda_init\|^  Device\|^load_backend\|^llama_\|^load\|^print_info\|^graph_\|^sched_\|^\.\|^$"; }
# (a dry run on another machine, whose Python is not the device's 3.12, or with DRY set, skips the wheels)
if [ -z "${DRY:-}" ] && [ -d "$G/whl" ] && python3 -c "import sys; sys.exit(sys.version_info[:2] != (3, 12))"; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$G"/whl/*.whl || exit 1
fi
export PYTHONPATH=$G/site:/tmp/site PYTHONUNBUFFERED=1 SPECGEN_CACHE_DIR=/tmp/sgcache

# build_llama FOLDER TARGET...: llama.cpp from .gpu/llama.cpp with CUDA for Hopper (FlashAttention
# kernels off: half the build time) into FOLDER, within what LIMIT leaves less a minute;
# EXAMPLES=ON for llama-speculative-simple, SERVER=ON for llama-server (its web UI left out)
build_llama() {
  local folder=$1; shift
  cmake -S "$G/llama.cpp" -B "$folder" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real -DGGML_CUDA_FA=OFF -DGGML_RPC=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES="${EXAMPLES:-OFF}" -DLLAMA_BUILD_SERVER="${SERVER:-OFF}" -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF > /tmp/cmake.log 2>&1 \
    || { tail -20 /tmp/cmake.log | tee -a "$O/$LOG"; return 1; }
  timeout $(( LIMIT - $(elapsed) - 60 )) cmake --build "$folder" -j"$(nproc)" --target "$@" > /tmp/build.log 2>&1 \
    || { log "build stopped"; tail -5 /tmp/build.log | tee -a "$O/$LOG"; return 1; }
}

# fill_standins "SKELETON NAME ARG..." ...: random-weight F16 stand-ins /tmp/m/NAME-f16.gguf, one
# after another, from .gpu/skel/SKELETON.gguf.gz by random_model.py fill with ARGs ("NAME filled")
fill_standins() {
  local spec
  for spec in "$@"; do
    set -- $spec
    [ -e "/tmp/m/$1-skel.gguf" ] || gunzip -c "$G/skel/$1.gguf.gz" > "/tmp/m/$1-skel.gguf"
    python3 benchmarks/results/2026-11-26-h100/random_model.py fill "/tmp/m/$1-skel.gguf" "/tmp/m/$2-f16.gguf" "${@:3}" \
      && echo "$2 filled"
  done
}
