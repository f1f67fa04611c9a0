#!/usr/bin/env bash
# The first call: build llama.cpp with CUDA (as h100-3/run2.sh), make the T stand-in, time pass
# sizes in sequences (graphs.py) with CUDA graphs on and off, and send the built libraries back
# (xz, 15 MiB parts) so a second call can skip the build. From the repository root, carrying .gpu.
set -u
R=benchmarks/results/2026-11-27-h100-4
LOG=log.txt LIMIT=${LIMIT:-420}
B=/tmp/b
source benchmarks/scripts/device/common.sh
export PYTHONPATH=$PYTHONPATH:$PWD
log "machine"; { nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv; nproc; } 2>&1 | tee -a "$O/log.txt"
fill_standins "target T --quiet-from 8 --scale 0.1" > /tmp/fill.log 2>&1 &
fill=$!
log "build"
build_llama "$B" llama llama-quantize || exit 1
log "built"
export LLAMA_CPP_LIB_PATH=$B/bin LD_LIBRARY_PATH=$B/bin
wait $fill; cat /tmp/fill.log >> "$O/log.txt"
"$B/bin/llama-quantize" /tmp/m/T-f16.gguf /tmp/m/T.gguf Q4_K_M 5 > /dev/null 2>&1 || { log "quantize failed"; exit 1; }
log "T ready: $(stat -c %s /tmp/m/T.gguf) bytes"
# llama.cpp's library first: loading a model after numpy crashed on this build (h100-2); the first
# call ran graphs.py directly and crashed so, and calls 2-4 ran it this way
graphs() { python3 -c "from specgen.llama.library import llama; llama(); import runpy, sys; sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name='__main__')" $R/graphs.py /tmp/m/T.gguf "$@" 2>&1 | quiet | tee -a "$O/log.txt"; }
graphs graphs $O/graphs-on.json
GGML_CUDA_DISABLE_GRAPHS=1 graphs no-graphs $O/graphs-off.json
log "timed"
( cd "$B/bin" && strip --strip-unneeded *.so* llama-quantize 2>/dev/null; ls -la ) >> "$O/log.txt"
( cd "$B/bin" && tar cf - $(ls | grep -E '\.so|llama-quantize') ) | xz -T"$(nproc)" -6 > /tmp/libs.tar.xz
log "libs.tar.xz: $(stat -c %s /tmp/libs.tar.xz) bytes"
[ "$(stat -c %s /tmp/libs.tar.xz)" -lt 58000000 ] && split -b 15M -d /tmp/libs.tar.xz "$O/libs.part"
log "done"
