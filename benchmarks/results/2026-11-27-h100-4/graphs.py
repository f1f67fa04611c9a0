"""Does a target pass's cost depend on the size of the pass before it? (CUDA graphs, ggml-cuda.cu)

llama.cpp's CUDA backend replays a captured graph only after two consecutive calls of the same
shape; a call of another shape resets that warm-up. Speculation changes the pass size round to
round. This times specgen's own Model.forward (all rows' logits, as a verify pass reads them)
over sequences of pass sizes, advancing the context as decoding would (a random number of the
pass's tokens kept), and prints the median ms of each size within each sequence.

    python3 graphs.py MODEL.gguf [LABEL]   (GGML_CUDA_DISABLE_GRAPHS=1 turns graphs off)
"""
import json
import random
import statistics
import sys
import time

from specgen.llama.model import LoadOptions, Model

PASSES = 160


def sequences(rng: random.Random) -> dict[str, list[int]]:
    widths = [2, 3, 4, 5, 8, 16]
    named = {"plain": [1] * PASSES}
    named.update({f"fixed-{w}": [w] * PASSES for w in widths})
    named["alternate-1-4"] = [1, 4] * (PASSES // 2)
    named["alternate-4-5"] = [4, 5] * (PASSES // 2)
    named["runs-of-8-1-then-4"] = ([1] * 8 + [4] * 8) * (PASSES // 16)
    named["mixed-1-to-8"] = [rng.choice([1, 1, 1, 2, 3, 4, 5, 8]) for _ in range(PASSES)]
    return named


def time_sequence(model: Model, widths: list[int], rng: random.Random, base: int) -> dict[int, list[float]]:
    model.truncate(base)
    times: dict[int, list[float]] = {}
    for width in widths:
        tokens = [rng.randrange(1000, 30000) for _ in range(width)]
        start = time.perf_counter()
        rows = model.forward(tokens, True)
        rows.argmax(axis=1)  # read every row, as verification does
        times.setdefault(width, []).append(time.perf_counter() - start)
        model.truncate(len(model.tokens) - width + rng.randint(1, width))
    return times


def main() -> None:
    path, label = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "default")
    rng = random.Random(7)
    model = Model(path, LoadOptions(n_ctx=4096, n_gpu_layers=99))
    model.prefill([rng.randrange(1000, 30000) for _ in range(300)])
    base = len(model.tokens)
    results = {}
    for name, widths in sequences(rng).items():
        time_sequence(model, widths[:16], rng, base)  # warm-up
        times = time_sequence(model, widths, rng, base)
        results[name] = {w: round(statistics.median(t) * 1000, 3) for w, t in sorted(times.items())}
        print(f"{label:9s} {name:20s} " + "  ".join(f"{w}: {ms:.2f} ms" for w, ms in results[name].items()), flush=True)
    json.dump(results, open(sys.argv[3], "w"), indent=1) if len(sys.argv) > 3 else None


if __name__ == "__main__":
    main()
