# Sourced by the prepare.sh scripts under benchmarks/results/*-h100*/ (from the repository root,
# with .gpu/ made empty first): what the device machine needs and cannot download, packed into .gpu/.

# pack_llama_source S: llama.cpp's source tree at S, without the backends and tools a CUDA build
# of libllama, llama-bench and llama-quantize skips
pack_llama_source() {
  local S=$1 f
  mkdir -p .gpu/llama.cpp/ggml/src .gpu/llama.cpp/tools
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
}

# pack_python: the pure-Python packages as the repository's .venv (or VENV) has them (llama_cpp without its
# CPU libraries), and wheels for Python 3.12 of what that machine lacks
pack_python() {
  local SP p
  SP=$("${VENV:-.venv}"/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  mkdir -p .gpu/site
  for p in llama_cpp gguf platformdirs typer click shellingham rich markdown_it mdurl starlette uvicorn \
           annotated_doc diskcache sniffio; do cp -r "$SP/$p" .gpu/site/; done
  rm -rf .gpu/site/llama_cpp/lib .gpu/site/llama_cpp/server
  find .gpu/site -name __pycache__ -type d -prune -exec rm -rf {} +
  "${VENV:-.venv}"/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .gpu/whl \
    "pydantic==$("${VENV:-.venv}"/bin/python -c 'import pydantic; print(pydantic.VERSION)')" \
    "pydantic-core==$("${VENV:-.venv}"/bin/python -c 'import pydantic_core; print(pydantic_core.__version__)')" \
    annotated-types typing-inspection typing-extensions
}

# pack_skeletons M: the real files' keys and shapes, no weights (random_model.py fills them there)
pack_skeletons() {
  local M=$1
  mkdir -p .gpu/skel
  "${VENV:-.venv}"/bin/python benchmarks/results/2026-11-26-h100/random_model.py skeleton \
    "$M"/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf .gpu/skel/target.gguf
  "${VENV:-.venv}"/bin/python benchmarks/results/2026-11-26-h100/random_model.py skeleton \
    "$M"/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf .gpu/skel/draft.gguf
  gzip -9 .gpu/skel/*.gguf
}
