#!/usr/bin/env bash
# Make .gpu/, what run.sh reads on the device machine, from the repository root (.gpu/ must be in
# .git/info/exclude, and the call must carry it). Unlike ../2026-11-26-h100/prepare.sh it needs no
# llama.cpp build here: the source comes from llama-cpp-python's sdist on PyPI, and llama-quantize is
# built there with the rest. Needs the repository's .venv and the real GGUFs in $SPECGEN_MODELS.
set -euo pipefail
M=${SPECGEN_MODELS:-$HOME/.cache/specgen-models}
version=$(.venv/bin/python -c 'import llama_cpp; print(llama_cpp.__version__)')
src=$(mktemp -d); trap 'rm -rf "$src"' EXIT
.venv/bin/python -m pip download -q --no-deps --no-binary=:all: "llama-cpp-python==$version" -d "$src"
tar xzf "$src"/llama_cpp_python-"$version".tar.gz -C "$src"
S=$src/llama_cpp_python-$version/vendor/llama.cpp
source benchmarks/scripts/device/pack.sh
rm -rf .gpu && mkdir -p .gpu
pack_llama_source "$S"
mkdir -p .gpu/llama.cpp/examples && cp -r "$S"/examples/speculative-simple .gpu/llama.cpp/examples/
echo "add_subdirectory(speculative-simple)" > .gpu/llama.cpp/examples/CMakeLists.txt
mkdir -p .gpu/llama.cpp/pocs && echo "# trimmed" > .gpu/llama.cpp/pocs/CMakeLists.txt  # examples need it
pack_python
pack_skeletons "$M"
du -sh .gpu
