"""Replay recorded greedy outputs of the real 1.5B target through the real loop and auto policy,
with a stand-in target whose greedy choice at every position is the recorded token, and price
every pass with a measured verify-cost curve. What auto's copies earn on real text, per cost
curve, without the model: seconds of work instead of minutes, and the same numbers every time.

Greedy decoding follows the recorded output exactly whatever is drafted (a copied token is kept
only where it is the recorded token), so the replay emits the recorded text and only the rounds
differ: speedup = (tokens - 1) one-token passes / the rounds' verify passes (the prefill gives
the first token either way).

`python tests/copyreplay.py [OUTPUTS.json ...]` prints the table for every curve (by default for
tests/data/greedy-outputs.json; benchmarks/results/2026-11-25-learnt-rewrites/replay-kinds.json holds
the outputs of benchmarks/prompts/dev/kinds/).

With `--predict KIND` each output is replayed beside a prediction of it (`run --predict`), for the
outputs that have one: "self" (the output itself, a perfect prediction), "file" (the prompt's first
fenced block, the file an edit reprints; needs `--vocab`), "deleted", "inserted", "renamed" (the
output with spans left out, foreign spans put in, or a token renamed: `edited`) or "wrong" (another
output); the table gives the speedup without and with it. Without one, given `--vocab`, auto
follows the text the prompt attached (its fenced blocks: `engine.attached`), as `run`, `chat`,
`serve` and `bench` do (`replaypredictions`).

With `--oracle` each output is also priced in hindsight (`hindsight`): a drafter that knows how
much of each offer the output keeps and drafts the best length for the curve (a shortest path
over positions and pass sizes, switch cost included). Its offers at each position are those
auto's sources make there when every position starts a round (the loop run with a policy that
weighs every round and drafts nothing, so the sources learn their rewrites and follow the record
pattern as they do under auto), together with every offer the replayed policy itself was made.
So no policy drafting from these sources can beat it on the same text: a bound, and how far auto
is from what its offers allow; `ceiling` is the curve's own limit where every copy is kept whole.
With `--predict KIND` as well, the outputs that have such a prediction are replayed and priced
in hindsight with it (the prediction's offers among hindsight's).

`--curve NAME[,NAME...]` replays on those curves only: a name in `CURVES`, a step-costs FILE.json
(benchmarks/scripts/depth_curve.py writes one), or `cached`, the verify
curves `specgen bench` (any front end that calibrates) measured on this machine, read from the
step-cost cache (`cached_curves`), so anyone can replay on their own machine's curve.
The curves and their loading live in tests/costcurves.py; this module re-exports their names.
`--look-ms MS` (with `--oracle`) charges each round that weighs drafts MS of Python, which auto's
policy, timed, then spends under its look budget as it does live; hindsight pays it per drafting pass.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from costcurves import CURVES, FLAT, SWITCHES, cached_curves, ceiling, costs_of, named_costs, select_curves  # noqa: F401 - re-exported for importers
from replaypredictions import PREDICTION_KINDS, attached_of, file_prediction, prediction_of  # noqa: F401 - re-exported

from specgen.decoding import clock
from specgen.decoding.auto import AutoDrafter
from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.base import Source, Vocabulary
from specgen.decoding.drafters.prediction import Prediction
from specgen.decoding.events import Round
from specgen.decoding.loop import GenerationConfig, generate
from specgen.decoding.policy import LOOKUP_MAX, RISK, Choice, Policy
from specgen.decoding.tokens import common_prefix

OUTPUTS = Path(__file__).parent / "data" / "greedy-outputs.json"


class RecordedTarget:
    """The loop's view of a target whose greedy choice after the prompt and i output tokens is
    the recorded token i; each pass after the prefill (which gives the first output token's row)
    adds its cost from the curve to `seconds`; `looked`: the Python time charged to the rounds
    that weighed drafts (`replay`'s `look`)."""

    def __init__(self, prompt: list[int], output: list[int], costs: StepCosts):
        self.truth = [*prompt, *output, 0]
        self.vocabulary = max(self.truth) + 1
        self.tokens: list[int] = []
        self.n_ctx = len(self.truth) + 64
        self.costs, self.seconds, self.looked = costs, 0.0, 0.0
        self.last = 0  # the size of the last pass (0: the prefill)

    def start(self, prompt: list[int]) -> tuple[np.ndarray, int]:
        """The prompt in the cache (the prefill: no pass priced), and its last token's row."""
        self.tokens, self.last = list(prompt), 0
        row = np.zeros((1, self.vocabulary), dtype=np.float32)
        row[0, self.truth[len(prompt)]] = 1.0
        return row, len(prompt)

    def truncate(self, n_keep: int) -> None:
        del self.tokens[n_keep:]

    def forward(self, tokens: list[int], all_logits: bool) -> np.ndarray:
        start = len(self.tokens)
        self.tokens.extend(tokens)
        self.seconds += pass_seconds(self.costs, len(tokens), self.last)
        self.last = len(tokens)
        first = 0 if all_logits else len(tokens) - 1
        rows = np.zeros((len(tokens) - first, self.vocabulary), dtype=np.float32)
        for i in range(first, len(tokens)):  # right while the drafted tokens before row i were right
            rows[i - first, self.truth[min(start + i + 1, len(self.truth) - 1)]] = 1.0
        return rows

    def is_eog(self, token: int) -> bool:
        return False

    def piece(self, token: int) -> bytes:
        return b""


Offers = dict[int, list[tuple[int, int]]]  # output position -> (tokens offered, tokens the output keeps)


@dataclass(frozen=True)
class Replay:
    name: str
    kind: str
    tokens: int
    rounds: int
    speedup: float
    emitted: list[int]
    offers: Offers = field(default_factory=dict)  # the copy offers the policy was made, priced or not


def compact(prompt: list[int], output: list[int], prediction: list[int] | None = None):
    """The same sequences over a small vocabulary (ids in order of first use), so rows stay small;
    with a prediction, it too is renumbered (third)."""
    ids: dict[int, int] = {}
    renumber = [ids.setdefault(t, len(ids)) for t in [*prompt, *output, *(prediction or [])]]
    parts = renumber[: len(prompt)], renumber[len(prompt) : len(prompt) + len(output)]
    return parts if prediction is None else (*parts, renumber[len(prompt) + len(output) :])


def pass_seconds(costs: StepCosts, size: int, last: int) -> float:
    """A pass of `size` tokens after one of `last`: its steady cost, and the switch cost where they differ."""
    return costs.verify_cost(size) + (costs.switch if size != last else 0.0)


def plain_seconds(costs: StepCosts, tokens: int) -> float:
    """Plain decoding of `tokens` tokens after the prefill, which gives the first: one switch,
    then a pass of one token for each of the others."""
    return (tokens - 1) * costs.verify_cost(1) + costs.switch if tokens > 1 else 0.0


def default_policy(costs: StepCosts) -> Policy:
    """auto's policy as a seeded run makes it: deciding from the given costs, never from timings."""
    return Policy(costs, 8, timed=False)


class Weighing(Policy):
    """Weighs every round and drafts nothing: auto's sources then offer at every position, in the
    state they reach under a policy (their index, learnt rewrites, the record pattern's run)."""

    def worth_looking(self) -> bool:
        return True

    def choose(self, room: int, lookup: int, lag: int, evidence=None, offer: tuple[int, ...] = ()) -> Choice:
        return Choice(Source.PLAIN)


def _run(
    prompt: list[int],
    output: list[int],
    costs: StepCosts,
    policy: Policy,
    vocabulary: Vocabulary | None,
    prediction: list[int] | None,
    quoted: bool,
    example: str,
    look: float = 0.0,
) -> tuple[RecordedTarget, list[Round], Offers]:
    """The loop over the recorded output with auto under `policy`; the copy offers its policy was
    made, by output position, each with how many of its tokens the output keeps. With `look`,
    each round that weighs drafts costs that many seconds more, on the clock the loop times
    rounds by (the passes priced by the curve, the looks by `look`): a timed policy then pays for
    its looks as it does live, and its look budget decides which rounds weigh."""
    target = RecordedTarget(prompt, output, costs)
    offers: Offers = {}
    choose, worth_looking = policy.choose, policy.worth_looking

    def recording(room, lookup, lag, evidence=None, offer=()):
        at = len(target.tokens) + 1 - len(prompt)  # output tokens known: history and the last token
        if offer:
            offers.setdefault(at, []).append((min(len(offer), LOOKUP_MAX), common_prefix(list(offer), output[at:])))
        return choose(room, lookup, lag, evidence, offer)

    def weighing() -> bool:
        weighs = worth_looking()
        target.looked += look if weighs else 0.0
        return weighs

    policy.choose = recording  # type: ignore[method-assign]
    policy.worth_looking = weighing  # type: ignore[method-assign]
    predicted = Prediction(prediction, vocabulary) if prediction is not None else attached_of(prompt, vocabulary)
    drafter = AutoDrafter(None, policy, vocabulary=vocabulary, prediction=predicted, quoted=quoted, example=example)
    config = GenerationConfig(max_tokens=len(output), draft_tokens=8)
    machine, clock.source = clock.source, lambda: target.seconds + target.looked
    try:
        rounds = [e for e in generate(target, drafter, prompt, config) if isinstance(e, Round)]
    finally:
        clock.source = machine
    return target, rounds, offers


def replay(
    name: str,
    kind: str,
    prompt: list[int],
    output: list[int],
    curve: dict[int, float] | StepCosts,
    vocabulary: Vocabulary | None = None,
    prediction: list[int] | None = None,
    quoted: bool = False,
    example: str = "",
    policy: Callable[[StepCosts], Policy] = default_policy,
    look: float = 0.0,
) -> Replay:
    """`vocabulary`: the recorded tokens' own, for offers by the output's record pattern (the
    ids stay as recorded); without one, patterns are not in play. `prediction`: tokens given
    as the prediction (`--predict`). `quoted`: the output is JSON, so auto copies also from the
    prompt as JSON escapes it (needs `vocabulary`); `example`: the document of its schema's shape
    that auto is given (`grammar.schema_example`). `policy`: makes the policy from the costs.
    `look`: the seconds of Python a round that weighs drafts costs beyond a plain round's (`_run`;
    it counts only against the look budget of a policy made `timed`), and in the speedup."""
    if vocabulary is None and prediction is None:
        prompt, output = compact(prompt, output)
    elif vocabulary is None:
        prompt, output, prediction = compact(prompt, output, prediction)
    costs = costs_of(curve)
    target, rounds, offers = _run(prompt, output, costs, policy(costs), vocabulary, prediction, quoted, example, look)
    emitted = [t for r in rounds for t in r.tokens]
    return Replay(
        name,
        kind,
        len(output),
        len(rounds),
        plain_seconds(costs, len(output)) / (target.seconds + target.looked) if target.seconds else 1.0,
        emitted[: len(output)],
        offers,
    )


def hindsight(
    prompt: list[int],
    output: list[int],
    curve: dict[int, float] | StepCosts,
    vocabulary: Vocabulary | None = None,
    quoted: bool = False,
    example: str = "",
    seen: Offers | None = None,
    prediction: list[int] | None = None,
    look: float = 0.0,
) -> float:
    """The speedup of a drafter that knows how many tokens of each offer the output keeps and
    drafts the lengths that make the whole output cheapest. Its offers: those auto's sources make
    at every position under `Weighing` (given `prediction`, as `replay`'s, the prediction's
    among them), `seen` (a replayed policy's `Replay.offers`), and the filler a held pass drafts
    where nothing is offered (the token before). `look`: the seconds of Python each drafting
    round costs (a draft is found by weighing; `replay`'s), none for a plain one."""
    if vocabulary is None and prediction is None:
        prompt, output = compact(prompt, output)
    elif vocabulary is None:
        prompt, output, prediction = compact(prompt, output, prediction)
    costs = costs_of(curve)
    offers = _run(prompt, output, costs, Weighing(costs, 8, timed=False), vocabulary, prediction, quoted, example)[2]
    for at, made in (seen or {}).items():
        offers.setdefault(at, []).extend(made)
    before = [prompt[-1], *output[:-1]]  # what a held pass drafts as its filler (`decoding.hold`)
    for at, token in enumerate(output):
        offers.setdefault(at, []).append((1, int(token == before[at])))
    return plain_seconds(costs, len(output)) / cheapest(costs, len(output), offers, look)


def cheapest(costs: StepCosts, n: int, offers: Offers, look: float = 0.0) -> float:
    """The fewest seconds in which passes can emit n tokens, where a pass at position i may draft
    k tokens of an offer made there (of at least k tokens) and yields those the output keeps plus
    the target's own: a shortest path over (position, size of the last pass), switch costs
    included, and `look` for each pass that drafts. The prefill gives the first token (position
    0 has no pass: nothing is drafted there) and is the pass before the first (size 0)."""
    sizes = LOOKUP_MAX + 2  # pass sizes 0..LOOKUP_MAX + 1
    later = np.zeros((n + 1, sizes))  # seconds from position i to the end, after a pass of each size
    for i in range(n - 1, -1, -1):
        made = offers.get(i, [])
        longest = max((offered for offered, _ in made), default=0)
        step = np.full(sizes, np.inf)  # seconds from here by the size of this pass
        for k in range(longest + 1):  # each offer apart: one that breaks sooner may lead to a better one
            ends = {min(i + min(k, kept) + 1, n) for offered, kept in made if offered >= k} or {i + 1}
            step[k + 1] = costs.verify_cost(k + 1) + (look if k else 0.0) + min(later[end, k + 1] for end in ends)
        later[i] = np.minimum(step.min() + costs.switch, step)
    return float(later[min(n, 1), 0])


def replay_all(
    curve: dict[int, float] | StepCosts, outputs: Path = OUTPUTS, vocabulary: Vocabulary | None = None
) -> list[Replay]:
    recorded = json.loads(outputs.read_text())["outputs"]
    return [
        replay(
            name,
            r["kind"],
            r["prompt"],
            r["output"],
            curve,
            vocabulary,
            quoted=r.get("quoted", False),
            example=r.get("example", ""),
        )
        for name, r in recorded.items()
    ]


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
    sets each beside its price in hindsight (with `--predict`, each output that has such a
    prediction, replayed and priced with it); `--curve NAME[,NAME...]` (`CURVES`' names, `cached`, FILE.json);
    `--risk SHARE` (with `--oracle`): the loss budget's share of plain time (`inf`: no budget);
    `--look-ms MS` (with `--oracle`): the Python time of a round that weighs drafts, which auto's
    policy, timed, then spends under its look budget as live (`replay`'s `look`).
    A missing file or a bad value exits with a one-line error (argparse's)."""
    parser = argparse.ArgumentParser(
        prog="copyreplay.py", description="Replay recorded greedy outputs through auto on verify-cost curves."
    )
    parser.add_argument("outputs", type=Path, nargs="*", help=f"recorded outputs (default: {OUTPUTS})")
    parser.add_argument("--oracle", action="store_true", help="set each output beside its price in hindsight")
    parser.add_argument("--vocab", type=Path, help="a GGUF file of the outputs' family: record patterns in play")
    parser.add_argument(
        "--predict", choices=PREDICTION_KINDS, help="replay with and without such a prediction (with --oracle: with it)"
    )
    parser.add_argument(
        "--curve", default=",".join(CURVES), help="NAME[,NAME...]: curves, cached, or a step-costs FILE.json"
    )
    parser.add_argument("--risk", type=float, default=RISK, help="the loss budget's share of plain time (inf: none)")
    parser.add_argument(
        "--look-ms", type=float, default=0.0, help="with --oracle: the Python ms a weighing round costs"
    )
    args = parser.parse_args()
    if args.look_ms < 0.0 or (args.look_ms and not args.oracle):
        parser.error("--look-ms takes milliseconds of at least 0, with --oracle")
    for path in [*args.outputs, *([args.vocab] if args.vocab else [])]:
        if not path.is_file():
            parser.error(f"no such file: {path}")
    if args.predict == "file" and args.vocab is None:
        parser.error("--predict file reads the prompt's fenced block: pass --vocab FILE.gguf")
    vocabulary = qwen_vocabulary(args.vocab) if args.vocab else None
    predict, risk = args.predict, args.risk
    curves = select_curves(args.curve.split(","))

    def bounded(costs: StepCosts) -> Policy:
        return Policy(costs, 8, timed=args.look_ms > 0.0, risk=risk)

    for outputs in args.outputs or [OUTPUTS]:
        for curve, costs in curves.items():
            if args.oracle:
                print_hindsight(curve, costs, outputs, vocabulary, bounded, predict, args.look_ms / 1000.0)
            elif predict is None:
                print_replays(curve, replay_all(costs, outputs, vocabulary))
            else:
                print_predicted(curve, costs, outputs, predict, vocabulary)


def gain_share(auto: float, best: float) -> float:
    """How much of hindsight's gain over plain decoding auto takes: (auto - 1) / (best - 1)."""
    return (auto - 1.0) / (best - 1.0) if best > 1.0 else 1.0


def print_hindsight(
    curve: str,
    costs: StepCosts,
    outputs: Path,
    vocabulary: Vocabulary | None,
    policy: Callable[[StepCosts], Policy] = default_policy,
    predict: str | None = None,
    look: float = 0.0,
) -> None:
    """Each output replayed by auto (`policy` makes its policy), beside the drafter that knows in
    hindsight what its offers keep; with `predict` (a `--predict` kind), only the outputs that
    have such a prediction, each replayed and priced in hindsight with it; `look`: as `replay`'s."""
    recorded = json.loads(outputs.read_text())["outputs"]
    kinds: dict[str, list[tuple[float, float]]] = {}
    for name, r in recorded.items():
        quoted, example = r.get("quoted", False), r.get("example", "")
        prediction = prediction_of(predict, r, list(recorded.values()), vocabulary) if predict else None
        if predict and not prediction:
            continue
        prompt, output = r["prompt"], r["output"]
        auto = replay(name, r["kind"], prompt, output, costs, vocabulary, prediction, quoted, example, policy, look)
        best = hindsight(prompt, output, costs, vocabulary, quoted, example, auto.offers, prediction, look)
        kinds.setdefault(r["kind"], []).append((auto.speedup, best))
        print(
            f"{curve:12s} {name:22s} auto {auto.speedup:5.2f}x  hindsight {best:5.2f}x  "
            f"share {gain_share(auto.speedup, best):5.2f}  ({len(r['output'])} tokens)"
        )
    for kind, pairs in sorted(kinds.items()):
        auto, best = geometric_mean([a for a, _ in pairs]), geometric_mean([b for _, b in pairs])
        print(
            f"{curve:12s} {kind:22s} auto {auto:5.2f}x  hindsight {best:5.2f}x  share {gain_share(auto, best):5.2f}  "
            f"(geometric means, {len(pairs)} outputs)"
        )
    print(f"{curve:12s} ceiling {ceiling(costs):.2f}x (every copy kept whole, at the curve's best batch size)")


def print_predicted(curve: str, table: StepCosts, outputs: Path, kind: str, vocabulary: Vocabulary | None) -> None:
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
        print(
            f"{curve:12s} {name:22s} {plain.speedup:5.2f}x without, {predicted.speedup:5.2f}x with {kind} "
            f"({len(prediction)} tokens; {plain.rounds} and {predicted.rounds} rounds for {plain.tokens} tokens)"
        )
    if without:
        print(
            f"{curve:12s} geometric mean {geometric_mean(without):.3f}x without, "
            f"{geometric_mean(with_prediction):.3f}x with {kind} ({len(without)} outputs)"
        )


def print_replays(curve: str, results: list[Replay]) -> None:
    for r in results:
        print(f"{curve:12s} {r.name:16s} {r.speedup:5.2f}x  {r.tokens:4d} tokens in {r.rounds:4d} rounds")
    kinds = sorted({r.kind for r in results})
    medians = {k: round(statistics.median(r.speedup for r in results if r.kind == k), 2) for k in kinds}
    print(f"{curve:12s} by kind {medians}; geometric mean {geometric_mean([r.speedup for r in results]):.3f}")


if __name__ == "__main__":
    main()
