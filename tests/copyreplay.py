"""Replay recorded greedy outputs of the real 1.5B target through the real loop and auto policy,
with a stand-in target whose greedy choice at every position is the recorded token, and price
every pass with a measured verify-cost curve. What auto's copies earn on real text, per cost
curve, without the model: seconds of work instead of minutes, and the same numbers every time.

Greedy decoding follows the recorded output exactly whatever is drafted (a copied token is kept
only where it is the recorded token), so the replay emits the recorded text and only the rounds
differ: speedup = (tokens x one-token pass) / (sum of the rounds' verify passes).

`python tests/copyreplay.py [OUTPUTS.json ...]` prints the table for every curve (by default for
tests/data/greedy-outputs.json; benchmarks/results/2026-11-25-learnt-rewrites/replay-kinds.json holds
the outputs of benchmarks/prompts/dev/kinds/).
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specgen.decoding.auto import AutoDrafter
from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.base import Vocabulary
from specgen.decoding.events import Round
from specgen.decoding.loop import GenerationConfig, generate
from specgen.decoding.policy import Policy

OUTPUTS = Path(__file__).parent / "data" / "greedy-outputs.json"

# seconds of a target pass by batch size, logits for every row, 1.5B Q4_K_M, 2 threads
CURVES = {
    # a 2-vCPU Xeon VM that reports AMX, repacked AVX kernels without AMX (measured 2026-11-25)
    "xeon-vm": {1: .065, 2: .101, 4: .107, 8: .194, 12: .215, 16: .227, 24: .33, 32: .389, 48: .55, 64: .738},
    # the same VM in a spell where one token costs 9% less and batches the same (measured later that day)
    "xeon-vm-fast": {1: .0605, 2: .0963, 3: .1195, 4: .1092, 6: .1634, 8: .1968, 12: .2411, 16: .2366,
                     24: .3669, 32: .406, 64: .7657},
    # the 2-vCPU Xeon VM of 2026-11-26, repacked AVX kernels without AMX: one token 68-78 ms, and a
    # steeper curve than the day before (the mean of two calibrations)
    "xeon-vm-2611": {1: .0733, 2: .107, 3: .146, 4: .203, 6: .293, 8: .505, 12: .614, 16: .509, 24: .758,
                     32: .878, 64: 1.59},
    # simulated, not measured: a GPU's nearly flat verify (12 ms for one token, 30 ms for 64)
    "gpu-sim": {1: .012, 2: .0122, 4: .0125, 8: .013, 16: .015, 32: .02, 64: .03},
    # a 2-vCPU AMD EPYC, repacked kernels (measured 2026-11-22; calibrate.DEFAULT)
    "epyc": {1: .030, 2: .051, 3: .069, 4: .084, 6: .123, 8: .200, 12: .243, 16: .228, 24: .348, 32: .414,
             48: .549, 64: .750},
}


class RecordedTarget:
    """The loop's view of a target whose greedy choice after the prompt and i output tokens is
    the recorded token i; each pass adds its cost from the curve to `seconds`."""

    def __init__(self, prompt: list[int], output: list[int], costs: StepCosts):
        self.truth = [*prompt, *output, 0]
        self.vocabulary = max(self.truth) + 1
        self.tokens: list[int] = []
        self.n_ctx = len(self.truth) + 64
        self.costs, self.seconds = costs, 0.0

    def sync(self, tokens: list[int]) -> int:
        self.tokens = list(tokens)
        return len(tokens)

    def truncate(self, n_keep: int) -> None:
        del self.tokens[n_keep:]

    def forward(self, tokens: list[int], all_logits: bool) -> np.ndarray:
        start = len(self.tokens)
        self.tokens.extend(tokens)
        self.seconds += self.costs.verify_cost(len(tokens))
        rows = np.zeros((len(tokens), self.vocabulary), dtype=np.float32)
        for i in range(len(tokens)):  # right while the drafted tokens before row i were right
            rows[i, self.truth[min(start + i + 1, len(self.truth) - 1)]] = 1.0
        return rows

    def is_eog(self, token: int) -> bool:
        return False

    def piece(self, token: int) -> bytes:
        return b""


@dataclass(frozen=True)
class Replay:
    name: str
    kind: str
    tokens: int
    rounds: int
    speedup: float
    emitted: list[int]


def compact(prompt: list[int], output: list[int]) -> tuple[list[int], list[int]]:
    """The same sequences over a small vocabulary (ids in order of first use), so rows stay small."""
    ids: dict[int, int] = {}
    renumber = [ids.setdefault(t, len(ids)) for t in [*prompt, *output]]
    return renumber[: len(prompt)], renumber[len(prompt):]


def replay(name: str, kind: str, prompt: list[int], output: list[int], curve: dict[int, float],
           vocabulary: Vocabulary | None = None) -> Replay:
    """`vocabulary`: the recorded tokens' own, for offers by the output's record pattern (the
    ids stay as recorded); without one, patterns are not in play."""
    if vocabulary is None:
        prompt, output = compact(prompt, output)
    costs = StepCosts(curve, {})
    target = RecordedTarget(prompt, output, costs)
    drafter = AutoDrafter(None, Policy(costs, 8, timed=False), vocabulary=vocabulary)
    config = GenerationConfig(max_tokens=len(output), draft_tokens=8)
    rounds = [e for e in generate(target, drafter, prompt, config) if isinstance(e, Round)]
    emitted = [t for r in rounds for t in r.tokens]
    plain = len(output) * costs.verify_cost(1)
    return Replay(name, kind, len(output), len(rounds), plain / target.seconds, emitted[: len(output)])


def replay_all(curve: dict[int, float], outputs: Path = OUTPUTS, vocabulary: Vocabulary | None = None) -> list[Replay]:
    recorded = json.loads(outputs.read_text())["outputs"]
    return [replay(name, r["kind"], r["prompt"], r["output"], curve, vocabulary) for name, r in recorded.items()]


def qwen_vocabulary(path: Path) -> Vocabulary:
    """The vocabulary of a GGUF file of the family the outputs were recorded with (the 0.5B
    draft loads in a second)."""
    from specgen.llama.model import Model

    model = Model(path)
    return Vocabulary(model.piece, model.continuation)


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main() -> None:
    """Arguments: recorded-output files; `--vocab FILE.gguf` puts record patterns in play."""
    args = sys.argv[1:]
    vocabulary = None
    if "--vocab" in args:
        at = args.index("--vocab")
        vocabulary = qwen_vocabulary(Path(args[at + 1]))
        del args[at : at + 2]
    for outputs in [Path(name) for name in args] or [OUTPUTS]:
        for curve, table in CURVES.items():
            print_replays(curve, replay_all(table, outputs, vocabulary))


def print_replays(curve: str, results: list[Replay]) -> None:
    for r in results:
        print(f"{curve:12s} {r.name:16s} {r.speedup:5.2f}x  {r.tokens:4d} tokens in {r.rounds:4d} rounds")
    kinds = sorted({r.kind for r in results})
    medians = {k: round(statistics.median(r.speedup for r in results if r.kind == k), 2) for k in kinds}
    print(f"{curve:12s} by kind {medians}; geometric mean {geometric_mean([r.speedup for r in results]):.3f}")


if __name__ == "__main__":
    main()
