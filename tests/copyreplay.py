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

With `--predict KIND` each output is replayed beside a prediction of it (`run --predict`), for the
outputs that have one: "self" (the output itself, a perfect prediction), "file" (the prompt's first
fenced block, the file an edit reprints; needs `--vocab`), "deleted", "inserted", "renamed" (the
output with spans left out, foreign spans put in, or a token renamed: `edited`) or "wrong" (another
output); the table gives the speedup without and with it.

With `--oracle` each output is also priced in hindsight: at every position, the offer auto's
sources would make there, and a drafter that knows how much of each offer the output keeps and
drafts the best length for the curve (a shortest path over positions). How far auto is from
what its offers allow; and `ceiling`, the curve's own limit where every copy is kept whole.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specgen.decoding.auto import AutoDrafter
from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.base import Vocabulary
from specgen.decoding.drafters.prediction import Prediction
from specgen.decoding.events import Round
from specgen.decoding.loop import GenerationConfig, generate
from specgen.decoding.policy import LOOKUP_MAX, Policy
from specgen.decoding.tokens import common_prefix

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
    # the 2-vCPU AMD EPYC of 2026-11-26 (no AMX, no AVX-512), as `specgen bench` measured it at 07:16
    "epyc-2611": {1: .074, 2: .118, 4: .216, 8: .426, 16: .559, 32: .941, 64: 1.758},
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


def compact(prompt: list[int], output: list[int], prediction: list[int] | None = None):
    """The same sequences over a small vocabulary (ids in order of first use), so rows stay small;
    with a prediction, it too is renumbered (third)."""
    ids: dict[int, int] = {}
    renumber = [ids.setdefault(t, len(ids)) for t in [*prompt, *output, *(prediction or [])]]
    parts = renumber[: len(prompt)], renumber[len(prompt) : len(prompt) + len(output)]
    return parts if prediction is None else (*parts, renumber[len(prompt) + len(output):])


def replay(name: str, kind: str, prompt: list[int], output: list[int], curve: dict[int, float],
           vocabulary: Vocabulary | None = None, prediction: list[int] | None = None, quoted: bool = False,
           example: str = "") -> Replay:
    """`vocabulary`: the recorded tokens' own, for offers by the output's record pattern (the
    ids stay as recorded); without one, patterns are not in play. `prediction`: tokens given
    as the prediction (`--predict`). `quoted`: the output is JSON, so auto copies also from the
    prompt as JSON escapes it (needs `vocabulary`); `example`: the document of its schema's shape
    that auto is given (`grammar.schema_example`)."""
    if vocabulary is None and prediction is None:
        prompt, output = compact(prompt, output)
    elif vocabulary is None:
        prompt, output, prediction = compact(prompt, output, prediction)
    costs = StepCosts(curve, {})
    target = RecordedTarget(prompt, output, costs)
    predicted = Prediction(prediction) if prediction is not None else None
    drafter = AutoDrafter(None, Policy(costs, 8, timed=False), vocabulary=vocabulary, prediction=predicted, quoted=quoted,
                          example=example)
    config = GenerationConfig(max_tokens=len(output), draft_tokens=8)
    rounds = [e for e in generate(target, drafter, prompt, config) if isinstance(e, Round)]
    emitted = [t for r in rounds for t in r.tokens]
    plain = len(output) * costs.verify_cost(1)
    return Replay(name, kind, len(output), len(rounds), plain / target.seconds, emitted[: len(output)])


def hindsight(prompt: list[int], output: list[int], curve: dict[int, float], vocabulary: Vocabulary,
              quoted: bool = False, example: str = "") -> float:
    """The speedup of a drafter that knows, at every position, how many tokens of auto's offer
    there the output keeps, and drafts the length that makes the whole output cheapest."""
    costs = StepCosts(curve, {})
    drafter = AutoDrafter(None, Policy(costs, 8, timed=False), vocabulary=vocabulary, quoted=quoted, example=example)
    drafter.prepare(prompt)
    offered, kept = [], []
    for i in range(len(output)):
        history = [*prompt, *output[:i]]
        offer, _ = drafter._offers(history[:-1], history[-1])
        offered.append(min(len(offer.tokens), LOOKUP_MAX))
        kept.append(common_prefix(offer.tokens, output[i:]))
    n = len(output)
    cheapest = [0.0] * (n + 1)  # seconds from position i to the end
    for i in range(n - 1, -1, -1):
        cheapest[i] = min(costs.verify_cost(k + 1) + cheapest[min(i + min(k, kept[i]) + 1, n)]
                          for k in range(offered[i] + 1))
    return n * costs.verify_cost(1) / cheapest[0]


def ceiling(curve: dict[int, float]) -> float:
    """The speedup where every pass verifies a copy kept whole, at the curve's best batch size."""
    return StepCosts(curve, {}).copy_ceiling(LOOKUP_MAX)[1]


def replay_all(curve: dict[int, float], outputs: Path = OUTPUTS, vocabulary: Vocabulary | None = None) -> list[Replay]:
    recorded = json.loads(outputs.read_text())["outputs"]
    return [replay(name, r["kind"], r["prompt"], r["output"], curve, vocabulary, quoted=r.get("quoted", False),
                   example=r.get("example", "")) for name, r in recorded.items()]


EDITS = ("deleted", "inserted", "renamed")
SPAN = 12  # tokens of a span that `edited` leaves out or puts in, every fifth span


def edited(output: list[int], kind: str) -> list[int]:
    """A prediction of `output` that an edit would leave behind: "deleted" lacks every fifth span
    of SPAN tokens (the output inserts them), "inserted" holds SPAN foreign tokens after every
    fifth span (the output deletes them), "renamed" holds two foreign tokens wherever the output
    has its commonest token among those it writes 3 to 12 times (the output renames it)."""
    foreign = max(output, default=0) + 1
    spans = [output[i : i + SPAN] for i in range(0, len(output), SPAN)]
    if kind == "deleted":
        return [t for i, span in enumerate(spans) if i % 5 != 2 for t in span]
    if kind == "inserted":
        return [t for i, span in enumerate(spans) for t in (*span, *(range(foreign, foreign + SPAN) if i % 5 == 2 else ()))]
    counts = Counter(output)
    renamed = max((t for t, n in counts.items() if 3 <= n <= 12), key=lambda t: (counts[t], -t), default=None)
    return [x for t in output for x in ((foreign, foreign + 1) if t == renamed else (t,))]


def file_prediction(prompt: list[int], vocabulary: Vocabulary) -> list[int] | None:
    """The first fenced block of the prompt's text (the file an edit reprints), in tokens as a
    continuation; None when the prompt has none."""
    text = b"".join(vocabulary.piece(t) for t in prompt).decode("utf-8", errors="replace")
    block = re.search(r"```[^\n]*\n(.*?)```", text, re.S)
    return vocabulary.tokenize(block.group(1)) if block else None


def prediction_of(kind: str, record: dict, others: list[dict], vocabulary: Vocabulary | None) -> list[int] | None:
    """The prediction of a recorded output of the given kind (see the module docstring)."""
    if kind == "self":
        return record["output"]
    if kind == "file":
        return file_prediction(record["prompt"], vocabulary)
    if kind == "wrong":
        return next((o["output"] for o in others if o["output"] != record["output"]), None)
    return edited(record["output"], kind)


def qwen_vocabulary(path: Path) -> Vocabulary:
    """The vocabulary of a GGUF file of the family the outputs were recorded with (the 0.5B
    draft loads in a second)."""
    from specgen.llama.model import Model

    model = Model(path)
    return Vocabulary(model.piece, model.continuation)


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main() -> None:
    """Arguments: recorded-output files; `--vocab FILE.gguf` puts record patterns in play;
    `--predict KIND` replays each output with and without a prediction of that kind; `--oracle`
    (with `--vocab`) sets each beside its price in hindsight."""
    args = sys.argv[1:]
    vocabulary, predict = None, None
    oracle = "--oracle" in args
    args = [a for a in args if a != "--oracle"]
    if "--vocab" in args:
        at = args.index("--vocab")
        vocabulary = qwen_vocabulary(Path(args[at + 1]))
        del args[at : at + 2]
    if "--predict" in args:
        at = args.index("--predict")
        predict = args[at + 1]
        del args[at : at + 2]
    if oracle and vocabulary is None:
        sys.exit("--oracle needs --vocab FILE.gguf")
    for outputs in [Path(name) for name in args] or [OUTPUTS]:
        for curve, table in CURVES.items():
            if oracle:
                print_hindsight(curve, table, outputs, vocabulary)
            elif predict is None:
                print_replays(curve, replay_all(table, outputs, vocabulary))
            else:
                print_predicted(curve, table, outputs, predict, vocabulary)


def print_hindsight(curve: str, table: dict[int, float], outputs: Path, vocabulary: Vocabulary) -> None:
    """Each output replayed by auto, beside the drafter that knows in hindsight what its offers keep."""
    recorded = json.loads(outputs.read_text())["outputs"]
    kinds: dict[str, list[tuple[float, float]]] = {}
    for name, r in recorded.items():
        quoted, example = r.get("quoted", False), r.get("example", "")
        auto = replay(name, r["kind"], r["prompt"], r["output"], table, vocabulary, quoted=quoted, example=example).speedup
        best = hindsight(r["prompt"], r["output"], table, vocabulary, quoted, example)
        kinds.setdefault(r["kind"], []).append((auto, best))
        print(f"{curve:12s} {name:22s} auto {auto:5.2f}x  hindsight {best:5.2f}x  ({len(r['output'])} tokens)")
    for kind, pairs in sorted(kinds.items()):
        print(f"{curve:12s} {kind:22s} auto {geometric_mean([a for a, _ in pairs]):5.2f}x  "
              f"hindsight {geometric_mean([b for _, b in pairs]):5.2f}x  (geometric means, {len(pairs)} outputs)")
    print(f"{curve:12s} ceiling {ceiling(table):.2f}x (every copy kept whole, at the curve's best batch size)")


def print_predicted(curve: str, table: dict[int, float], outputs: Path, kind: str, vocabulary: Vocabulary | None) -> None:
    """Each output that has a prediction of `kind`, replayed without and with it (the record
    pattern stays out: the prediction is what is measured)."""
    recorded = json.loads(outputs.read_text())["outputs"]
    without, with_prediction = [], []
    for name, r in recorded.items():
        prediction = prediction_of(kind, r, list(recorded.values()), vocabulary)
        if not prediction:
            continue
        plain = replay(name, r["kind"], r["prompt"], r["output"], table)
        predicted = replay(name, r["kind"], r["prompt"], r["output"], table, prediction=prediction)
        assert predicted.emitted == plain.emitted, name  # greedy: the recorded text either way
        without.append(plain.speedup)
        with_prediction.append(predicted.speedup)
        print(f"{curve:12s} {name:22s} {plain.speedup:5.2f}x without, {predicted.speedup:5.2f}x with {kind} "
              f"({len(prediction)} tokens; {plain.rounds} and {predicted.rounds} rounds for {plain.tokens} tokens)")
    if without:
        print(f"{curve:12s} geometric mean {geometric_mean(without):.3f}x without, "
              f"{geometric_mean(with_prediction):.3f}x with {kind} ({len(without)} outputs)")


def print_replays(curve: str, results: list[Replay]) -> None:
    for r in results:
        print(f"{curve:12s} {r.name:16s} {r.speedup:5.2f}x  {r.tokens:4d} tokens in {r.rounds:4d} rounds")
    kinds = sorted({r.kind for r in results})
    medians = {k: round(statistics.median(r.speedup for r in results if r.kind == k), 2) for k in kinds}
    print(f"{curve:12s} by kind {medians}; geometric mean {geometric_mean([r.speedup for r in results]):.3f}")


if __name__ == "__main__":
    main()
