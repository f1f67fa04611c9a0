#!/usr/bin/env bash
# Make .gpu/, what run.sh reads on the device machine, from the repository root (.gpu/ must be in
# .git/info/exclude, and the call must carry it). Unlike ../2026-11-26-h100/prepare.sh it needs no
# llama.cpp build here: the source comes from llama-cpp-python's sdist on PyPI, and llama-quantize is
# built there with the rest. Needs the repository's .venv and the real GGUFs in $SPECGEN_MODELS.
set -euo pipefail
R1=benchmarks/results/2026-11-26-h100
M=${SPECGEN_MODELS:-$HOME/.cache/specgen-models}
version=$(.venv/bin/python -c 'import llama_cpp; print(llama_cpp.__version__)')
SP=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
src=$(mktemp -d); trap 'rm -rf "$src"' EXIT
.venv/bin/python -m pip download -q --no-deps --no-binary=:all: "llama-cpp-python==$version" -d "$src"
tar xzf "$src"/llama_cpp_python-"$version".tar.gz -C "$src"
S=$src/llama_cpp_python-$version/vendor/llama.cpp
rm -rf .gpu && mkdir -p .gpu/llama.cpp/ggml/src .gpu/llama.cpp/tools .gpu/site .gpu/skel

# llama.cpp's source, without the backends and tools a CUDA build of libllama, llama-bench,
# llama-quantize and llama-speculative-simple skips
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
mkdir -p .gpu/llama.cpp/examples && cp -r "$S"/examples/speculative-simple .gpu/llama.cpp/examples/
echo "add_subdirectory(speculative-simple)" > .gpu/llama.cpp/examples/CMakeLists.txt
mkdir -p .gpu/llama.cpp/pocs && echo "# trimmed" > .gpu/llama.cpp/pocs/CMakeLists.txt  # examples need it
printf '%s\n' "# trimmed for specgen's H100 check: only the tools it runs" "find_package(Threads REQUIRED)" \
  "llama_add_compile_flags()" "add_subdirectory(llama-bench)" "add_subdirectory(quantize)" > .gpu/llama.cpp/tools/CMakeLists.txt

# pure-Python packages as this venv has them (llama_cpp without its CPU libraries), and wheels for
# Python 3.12 of what that machine lacks
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
.venv/bin/python $R1/random_model.py skeleton "$M"/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf .gpu/skel/target.gguf
.venv/bin/python $R1/random_model.py skeleton "$M"/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf .gpu/skel/draft.gguf
gzip -9 .gpu/skel/*.gguf
du -sh .gpu
