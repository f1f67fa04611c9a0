"""The target's own confidence at every position of recorded greedy outputs: the evidence that
benchmarks/scripts/reach_calibration.py `--confidences` splits copy offers by.

A copy offer is drafted after the token the target just wrote; how sure the target was of that
token (its probability, the largest in the row where the reply is greedy) is known before the
round and costs one softmax of one row. Whether it tells offers that hold from offers that break
apart, at the same predicted chance, is the question reach_calibration.py answers with it. This
teacher-forces each recorded output through the target (one batched pass over the prompt's last
token and the output) and writes, for every output position i, the probability of the row that
predicts token i: its largest, and the recorded token's own (the two are equal wherever the
batched pass picks the recorded token, which greedy decoding did one token at a time).

    python benchmarks/scripts/target_confidences.py TARGET.gguf OUTPUTS.json ... --out CONFIDENCES.json

The file holds {outputs file as named here: {output name: [[largest, recorded], ...]}}.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from specgen.decoding.sampling import token_logprobs
from specgen.llama.model import LoadOptions, Model


def probabilities(rows: np.ndarray, tokens: list[int]) -> list[list[float]]:
    """For each row: its largest probability and that of the token at its place in `tokens`
    (the log-softmax the loop reports as logprobs, `sampling.token_logprobs`)."""
    return [
        [round(math.exp(found.top[0][1]), 4), round(math.exp(found.logprob), 4)]
        for found in token_logprobs(rows, tokens, 1)
    ]


def confidences(target: Model, record: dict) -> list[list[float]]:
    """The target's probabilities at every position of one recorded output."""
    prompt, output = record["prompt"], record["output"]
    target.truncate(0)
    target.prefill(prompt[:-1])
    return probabilities(target.forward([prompt[-1], *output[:-1]], all_logits=True), output)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", type=Path)
    parser.add_argument("outputs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    for path in [args.target, *args.outputs]:
        if not path.is_file():
            parser.error(f"no such file: {path}")
    found: dict[str, dict[str, list[list[float]]]] = {}
    with Model(args.target, LoadOptions(n_ctx=4096, n_threads=args.threads)) as target:
        for path in args.outputs:
            recorded = json.loads(path.read_text())["outputs"]
            found[str(path)] = {name: confidences(target, record) for name, record in recorded.items()}
            print(f"{path}: {len(recorded)} outputs", file=sys.stderr)
    args.out.write_text(json.dumps(found))


if __name__ == "__main__":
    main()
