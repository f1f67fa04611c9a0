"""Load a GGUF in a fresh process after importing numpy or llama_cpp first, raw or through
specgen's Model: the check of this folder's lead (README.md, "What failed"). One variant a run:

    python load_order.py numpy-first|llama-first|model-llama-first|model MODEL.gguf
"""

import importlib
import sys

variant, path = sys.argv[1], sys.argv[2]
first = {"numpy-first": ["numpy", "llama_cpp"], "llama-first": ["llama_cpp", "numpy"],
         "model-llama-first": ["llama_cpp"], "model": []}[variant]
for name in first:
    importlib.import_module(name)
if variant in ("numpy-first", "llama-first"):
    llama_cpp = sys.modules["llama_cpp"]
    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_default_params()
    params.n_gpu_layers = 999
    print(variant, "loaded" if llama_cpp.llama_model_load_from_file(path.encode(), params) else "failed", flush=True)
else:
    from specgen.llama.model import LoadOptions, Model

    with Model(path, LoadOptions(n_ctx=512)) as model:
        print(variant, "loaded", model.n_vocab, flush=True)
