#!/usr/bin/env bash
# Make .gpu/, what run.sh and diag.sh read on the device machine, from the repository root (`.gpu/`
# must be in .git/info/exclude, and the call must carry it). Needs: the repository's .venv, the real
# GGUFs in $SPECGEN_MODELS (default ~/.cache/specgen-models), llama.cpp's source and CPU build from
# ../shared/anchors/build-llama-tools (~/.cache/specgen-anchors/VERSION), and pip access to PyPI.
set -euo pipefail
M=${SPECGEN_MODELS:-$HOME/.cache/specgen-models}
version=$(.venv/bin/python -c 'import llama_cpp; print(llama_cpp.__version__)')
S=$HOME/.cache/specgen-anchors/$version
source benchmarks/scripts/device/pack.sh
rm -rf .gpu && mkdir -p .gpu/quant
pack_llama_source "$S"
pack_python
pack_skeletons "$M"

# a CPU llama-quantize and the libraries it loads
(cd "$S" && cmake --build build -j"$(nproc)" --target llama-quantize > /dev/null)
B=$S/build/bin
cp -L "$B"/llama-quantize "$B"/libllama-quantize-impl.so "$B"/libllama-common.so.0 "$B"/libllama.so.0 \
  "$B"/libggml-base.so.0 "$B"/libggml.so.0 "$B"/libggml-cpu.so.0 "$(ldconfig -p | awk '/libgomp.so.1 /{print $NF; exit}')" .gpu/quant/
du -sh .gpu
