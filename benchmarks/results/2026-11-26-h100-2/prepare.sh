#!/usr/bin/env bash
# Make .gpu/ for run.sh, from the repository root (.gpu/ must be in .git/info/exclude and the call
# must carry it): the first session's .gpu/ (../2026-11-26-h100/prepare.sh: pure-Python packages,
# wheels, the real GGUFs' skeletons), with llama.cpp prebuilt for the H100 (build-cuda.sh) in place
# of its source and CPU llama-quantize. 
set -euo pipefail
R=benchmarks/results/2026-11-26-h100-2
[ -d .gpu/llama.cpp ] || bash benchmarks/results/2026-11-26-h100/prepare.sh
[ -x /work/cudabuild/bin/llama-bench ] || bash $R/build-cuda.sh
rm -rf .gpu/llama.cpp .gpu/quant
tar -C /work/cudabuild -cJf .gpu/cuda.tar.xz bin
du -sh .gpu
