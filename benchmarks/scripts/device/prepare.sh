#!/usr/bin/env bash
# Make .gpu/, what mission7b.sh reads on the device machine (no network there, at most 64 MiB sent),
# from the repository root; the call carries it (`carry: [".gpu"]`). Packs:
#   .gpu/llama.cpp  the llama.cpp source llama-cpp-python vendors, trimmed to a CUDA build of libllama,
#                   llama-bench, llama-quantize, llama-speculative-simple and llama-server (no web UI)
#   .gpu/site       the pure-Python packages as the venv has them; .gpu/whl: wheels for Python 3.12
#   .gpu/skel       the 1.5B target's keys (tokenizer, chat template), no weights: standins.py fills
#                   it at Qwen2.5-Coder-7B's shapes there
# Needs the venv (VENV, default .venv), the real 1.5B Q4_K_M in SPECGEN_MODELS (default
# ~/.cache/specgen-models), and the llama.cpp source: LLAMA_SRC, else ~/.cache/specgen-anchors/VERSION,
# else llama-cpp-python's sdist from PyPI.
set -euo pipefail
M=${SPECGEN_MODELS:-$HOME/.cache/specgen-models}
export VENV=${VENV:-.venv}
version=$("$VENV"/bin/python -c 'import llama_cpp; print(llama_cpp.__version__)')
S=${LLAMA_SRC:-$HOME/.cache/specgen-anchors/$version}
if [ ! -e "$S/tools/server/CMakeLists.txt" ]; then
  src=$(mktemp -d); trap 'rm -rf "$src"' EXIT
  "$VENV"/bin/python -m pip download -q --no-deps --no-binary=:all: "llama-cpp-python==$version" -d "$src"
  tar xzf "$src"/llama_cpp_python-"$version".tar.gz -C "$src"
  S=$src/llama_cpp_python-$version/vendor/llama.cpp
fi
source benchmarks/scripts/device/pack.sh
rm -rf .gpu && mkdir -p .gpu/skel
pack_llama_source "$S"
L=.gpu/llama.cpp
# llama-server: mtmd (and so miniaudio's header, which pack_llama_source drops), the UI's CMake
# (with no UI built or downloaded it embeds nothing) and its asset script
cp -r "$S"/vendor/miniaudio $L/vendor/ && cp "$S"/vendor/CMakeLists.txt $L/vendor/
cp -r "$S"/tools/server "$S"/tools/mtmd $L/tools/
rm -rf $L/tools/server/tests $L/tools/server/bench $L/tools/mtmd/test-* $L/tools/mtmd/tests
mkdir -p $L/tools/ui $L/scripts && cp "$S"/tools/ui/CMakeLists.txt "$S"/tools/ui/*.in $L/tools/ui/
cp "$S"/scripts/ui-assets.cmake $L/scripts/
printf '%s\n' "add_subdirectory(mtmd)" "add_subdirectory(ui)" "add_subdirectory(server)" >> $L/tools/CMakeLists.txt
# llama-speculative-simple: the one example, and the pocs folder examples' CMake expects
mkdir -p $L/examples $L/pocs && cp -r "$S"/examples/speculative-simple $L/examples/
echo "add_subdirectory(speculative-simple)" > $L/examples/CMakeLists.txt
echo "# trimmed" > $L/pocs/CMakeLists.txt
pack_python
"$VENV"/bin/python benchmarks/results/2026-11-26-h100/random_model.py skeleton \
  "$M"/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf .gpu/skel/target.gguf
gzip -9 .gpu/skel/target.gguf
size=$(du -sm .gpu | cut -f1)
echo ".gpu: $size MiB"
[ "$size" -le 60 ] || { echo "prepare: .gpu is $size MiB, over what a call carries (64 MiB with the tree)" >&2; exit 1; }
