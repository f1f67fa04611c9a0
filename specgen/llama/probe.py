"""The AMX probe's child process: `python -m specgen.llama.probe MODEL`.

`kernels` runs this in a child so that a kernel that dies with a signal kills the child, not
specgen: the parent forces extra buffer types on, and the child loads the model and decodes a
few tokens; with `--no-amx` it first takes the AMX kernels out, as the engine then will.
"""

from __future__ import annotations

import sys

from specgen.llama.library import drop_amx_buffer_type, llama

llama()  # before numpy (which model.py imports): a CUDA build of llama.cpp dies at load otherwise

from specgen.llama.model import LoadOptions, Model  # noqa: E402


def _probe_main(model_path: str) -> None:
    """The child: load with extra buffer types (forced on by the parent) and decode a few tokens."""
    with Model(model_path, LoadOptions(n_ctx=64, n_batch=16)) as model:
        text = "def probe(x):\n    return x + 1\n" * 4
        tokens = model.tokenize(text, add_special=True, parse_special=False)
        model.forward(tokens[:8], all_logits=True)
        for token in tokens[8:12]:
            model.forward([token], all_logits=False)


if __name__ == "__main__":
    if "--no-amx" in sys.argv[2:]:
        drop_amx_buffer_type()
    _probe_main(sys.argv[1])
