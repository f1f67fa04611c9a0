#!/usr/bin/env bash
# Make .gpu/, what run.sh and diag.sh read on the device machine, from the repository root (`.gpu/`
# must be in .git/info/exclude, and the call must carry it). Needs: the repository's .venv, the real
# GGUFs in $SPECGEN_MODELS (default ~/.cache/specgen-models), llama.cpp's source and CPU build from
# ../shared/anchors/build-llama-tools (~/.cache/specgen-anchors/VERSION), and pip access to PyPI.
set -euo pipefail
R=benchmarks/results/2026-11-26-h100
M=${SPECGEN_MODELS:-$HOME/.cache/specgen-models}
version=$(.venv/bin/python -c 'import llama_cpp; print(llama_cpp.__version__)')
S=$HOME/.cache/specgen-anchors/$version
SP=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
rm -rf .gpu && mkdir -p .gpu/llama.cpp/ggml/src .gpu/llama.cpp/tools .gpu/site .gpu/skel .gpu/quant

# llama.cpp's source, without the backends and tools a CUDA build of libllama and llama-bench skips
cp -r "$S"/CMakeLists.txt "$S"/cmake "$S"/src "$S"/include "$S"/common "$S"/vendor "$S"/licenses .gpu/llama.cpp/
cp -r "$S"/ggml/CMakeLists.txt "$S"/ggml/cmake "$S"/ggml/include .gpu/llama.cpp/ggml/
for f in "$S"/ggml/src/*; do
  case $(basename "$f") in
    ggml-sycl|ggml-vulkan|ggml-opencl|ggml-hexagon|ggml-et|ggml-metal|ggml-cann|ggml-musa|ggml-webgpu|ggml-zdnn|ggml-openvino|ggml-virtgpu|ggml-zendnn|ggml-blas) ;;
    *) cp -r "$f" .gpu/llama.cpp/ggml/src/ ;;
  esac
done
rm -rf .gpu/llama.cpp/vendor/miniaudio
sed -i '/add_subdirectory(miniaudio)/d' .gpu/llama.cpp/vendor/CMakeLists.txt
cp -r "$S"/tools/llama-bench "$S"/tools/quantize .gpu/llama.cpp/tools/
printf '%s\n' "# trimmed for specgen's H100 check: only the tools it runs" "find_package(Threads REQUIRED)" \
  "llama_add_compile_flags()" "add_subdirectory(llama-bench)" "add_subdirectory(quantize)" > .gpu/llama.cpp/tools/CMakeLists.txt

# pure-Python packages as this venv has them (llama_cpp without its CPU libraries), and wheels
# for Python 3.12 of what typer needs that the machine lacks
for p in llama_cpp gguf platformdirs typer click shellingham rich markdown_it mdurl starlette uvicorn \
         annotated_doc diskcache sniffio; do cp -r "$SP/$p" .gpu/site/; done
rm -rf .gpu/site/llama_cpp/lib .gpu/site/llama_cpp/server
find .gpu/site -name __pycache__ -type d -prune -exec rm -rf {} +
.venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .gpu/whl \
  "pydantic==$(.venv/bin/python -c 'import pydantic; print(pydantic.VERSION)')" \
  "pydantic-core==$(.venv/bin/python -c 'import pydantic_core; print(pydantic_core.__version__)')" \
  annotated-types typing-inspection typing-extensions

# the real files' keys and shapes, no weights
.venv/bin/python $R/random_model.py skeleton "$M"/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf .gpu/skel/target.gguf
.venv/bin/python $R/random_model.py skeleton "$M"/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf .gpu/skel/draft.gguf
gzip -9 .gpu/skel/*.gguf

# a CPU llama-quantize and the libraries it loads
(cd "$S" && cmake --build build -j"$(nproc)" --target llama-quantize > /dev/null)
B=$S/build/bin
cp -L "$B"/llama-quantize "$B"/libllama-quantize-impl.so "$B"/libllama-common.so.0 "$B"/libllama.so.0 \
  "$B"/libggml-base.so.0 "$B"/libggml.so.0 "$B"/libggml-cpu.so.0 "$(ldconfig -p | awk '/libgomp.so.1 /{print $NF; exit}')" .gpu/quant/
du -sh .gpu
