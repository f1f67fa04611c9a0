#!/usr/bin/env bash
# Build llama.cpp with CUDA for the H100 *here*, on this workplace's 2-core machine, so that the
# device call spends none of its 15 minutes compiling (the first H100 session spent 200-240 s of
# each call on it). Needs CUDA 13.0's nvcc, which these machines have (the device has the same
# 13.0), plus what they lack: cuBLAS, from PyPI's nvidia-cublas wheel, and a link-time stand-in
# for the driver library (libcuda.so.1 defining the dozen cu* functions ggml-cuda calls; on the
# device the real driver is loaded instead). About 40 minutes on 2 cores. Builds from the trimmed
# source that ../2026-11-26-h100/prepare.sh puts in .gpu/llama.cpp; writes /work/cudabuild.
set -euo pipefail
S=/work/cudasrc
rm -rf "$S" && cp -r .gpu/llama.cpp "$S"
T=/usr/local/cuda-13.0/targets/x86_64-linux
if [ ! -e "$T/lib/libcublas.so" ]; then
  rm -rf /tmp/cublas && .venv/bin/python -m pip download -q --no-deps --only-binary=:all: -d /tmp/cublas "nvidia-cublas==13.0.*"
  (cd /tmp/cublas && python3 -m zipfile -e ./*.whl x)
  cp -a /tmp/cublas/x/nvidia/cu13/lib/libcublas*.so.13 "$T/lib/" && cp -a /tmp/cublas/x/nvidia/cu13/include/* "$T/include/"
  ln -sf libcublas.so.13 "$T/lib/libcublas.so" && ln -sf libcublasLt.so.13 "$T/lib/libcublasLt.so"
fi
if [ ! -e "$T/lib/stubs/libcuda.so" ]; then
  mkdir -p "$T/lib/stubs"
  names=$(grep -rhoE "\bcu[A-Z][A-Za-z0-9_]+\(" "$S/ggml/src/ggml-cuda/" | tr -d '(' | sort -u | grep -v cuBLAS)
  for n in $names; do echo "int $n(void){return 0;} int ${n}_v2(void){return 0;}"; done > /tmp/cuda-stub.c
  gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$T/lib/stubs/libcuda.so" /tmp/cuda-stub.c
fi
cmake -S "$S" -B /work/cudabuild -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
  -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real -DGGML_CUDA_FA=OFF -DGGML_RPC=ON \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF > /dev/null
cmake --build /work/cudabuild -j"$(nproc)" --target llama llama-bench llama-quantize
