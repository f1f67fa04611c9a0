"""Where greedy speculation under a grammar left the constrained target's own text on the GPU
(tests/decoding/test_constraint_exactness.py, "model k3", json grammar): the two tokens' logits at
that position, as a one-token pass computes them and as a 4-token verify pass does, on the device
given (-1: the GPU, 0: the CPU). A near-tie is a difference within the two kernels' disagreement.

    python near_tie.py GPU_LAYERS
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from specgen.llama.library import llama

llama()  # before numpy: a CUDA build of llama.cpp dies at model load otherwise (this folder's README)

import numpy as np  # noqa: E402

sys.path.insert(0, "tests")
sys.path.insert(0, "tests/decoding")
from tinymodels import DRAFT, TARGET, write_model  # noqa: E402

from specgen.decoding.drafters.model import ModelDrafter  # noqa: E402
from specgen.decoding.loop import GenerationConfig, generate  # noqa: E402
from specgen.llama.grammar import Grammar, json_grammar  # noqa: E402
from specgen.llama.model import LoadOptions, Model  # noqa: E402


def constrained(target, drafter, prompt, k):
    with Grammar(target, json_grammar()) as grammar:
        events = list(generate(target, drafter, prompt, GenerationConfig(48, k), grammar))
    return [t for e in events[:-1] for t in e.tokens]


def rows(target: Model, tokens: list[int], batch: int) -> np.ndarray:
    """The logits after `tokens`, from a pass over its last `batch` tokens."""
    target.sync(tokens[:-batch])
    out = target.forward(tokens[-batch:], all_logits=True)[-1].copy()
    target.truncate(len(tokens) - batch)
    return out


def main(gpu_layers: int) -> None:
    folder = Path(tempfile.mkdtemp())
    options = LoadOptions(n_ctx=2048, n_threads=2, n_gpu_layers=None if gpu_layers < 0 else gpu_layers)
    with Model(write_model(folder / "t.gguf", TARGET), options) as target, \
         Model(write_model(folder / "d.gguf", DRAFT), options) as draft:
        prompt = target.tokenize("the print of self", add_special=True, parse_special=False)
        plain = constrained(target, None, prompt, 1)
        for k in (1, 3):
            spec = constrained(target, ModelDrafter(draft), prompt, k)
            where = next((i for i, (a, b) in enumerate(zip(plain, spec)) if a != b), None)
            if where is None:
                print(f"layers {gpu_layers}, model k{k}: the same {len(plain)} tokens")
                continue
            a, b = plain[where], spec[where]
            context = prompt + plain[:where]
            for batch in (1, 2, 4, 8):
                logits = rows(target, context, batch)
                print(f"layers {gpu_layers}, model k{k}: differs at {where} ({a} alone, {b} drafted); "
                      f"{batch}-token pass: logit[{a}] - logit[{b}] = {logits[a] - logits[b]:+.6f}, "
                      f"top logit {logits.max():.4f}")
        single = np.stack([rows(target, prompt + plain[:i], 1) for i in range(1, len(plain))])
        batched = np.stack([rows(target, prompt + plain[:i], 4) for i in range(1, len(plain))])
        print(f"layers {gpu_layers}: 1- vs 4-token passes over the plain reply, max |logit difference| "
              f"{np.abs(single - batched).max():.6f}")


if __name__ == "__main__":
    main(int(sys.argv[1]))
