"""What `auto` spends in Python on each round that drafts with the draft model, by part.

On a GPU a 7B target's pass takes a few milliseconds, and what `auto` adds around the draft
model's own passes counts: on an H200 its one-token rounds took longer than `-k 1`'s
(benchmarks/results/2026-11-29-h200-7b), where issue 48 asks for under 5% of a pass. This
script measures that Python on this machine, with the real loop, real llama.cpp models and the
real vocabulary. The policy prices rounds on a GPU's step costs (the H200's 7B curve, and the
draft and switch costs measured there), so that it drafts with the model as it did there. It
times the parts by wrapping them; the draft model's passes are timed and left out:

    python benchmarks/scripts/auto_python.py TARGET.gguf DRAFT.gguf [--prompt TEXT] [-n 128]

It prints the rounds, how many drafted with the model, and microseconds a round for each part
(finding copy offers, choosing, the gate's confidence, learning from the round) and for all of
`auto`'s Python together (proposing and learning, less the draft model's passes), with that
total's share of the H200's one-token pass. Where the models run on the CPU these run several
times higher than the same calls alone (with one llama.cpp thread too), most likely as a pass streams the
weights through the caches the Python's data were in. On a GPU machine
(benchmarks/scripts/device/mission7b.sh runs it there) the passes leave the CPU's caches be.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from specgen.decoding.auto import AutoDrafter
from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters import model as model_drafter
from specgen.decoding.drafters.base import Source, Vocabulary
from specgen.decoding.events import Round
from specgen.decoding.loop import GenerationConfig, generate
from specgen.decoding.policy import Policy
from specgen.llama.model import LoadOptions, Model

# the step costs `specgen bench` measured on an H200 for the 7B-shaped target and its 4-layer
# draft (benchmarks/results/2026-11-29-h200-7b/call3/step-costs), seconds
H200_7B = StepCosts(
    {1: 0.00401, 2: 0.00411, 3: 0.00476, 4: 0.00556, 6: 0.00696, 8: 0.00829, 12: 0.00698, 16: 0.00726, 32: 0.0094},
    {1: 0.000886, 2: 0.000919, 4: 0.00126, 8: 0.00179, 16: 0.00161},
    0.00107,
)
PARTS = ("offers", "choose", "confidence", "learn")


class Stopwatch:
    """Seconds spent in each wrapped callable, and its calls, by name."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def wrap(self, name: str, function: Callable) -> Callable:
        def timed(*args: object, **kwargs: object) -> object:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
                self.calls[name] = self.calls.get(name, 0) + 1

        return timed


def measure(target: Model, draft: Model, prompt: str, max_tokens: int) -> tuple[int, int, Stopwatch]:
    """Rounds, rounds the draft model drafted, and the parts' seconds and calls over one greedy reply."""
    watch = Stopwatch()
    policy = Policy(H200_7B, 8)
    drafter = AutoDrafter(
        model_drafter.ModelDrafter(draft), policy, vocabulary=Vocabulary(target.piece, target.continuation)
    )
    drafter._offers = watch.wrap("offers", drafter._offers)  # type: ignore[method-assign]
    policy.choose = watch.wrap("choose", policy.choose)  # type: ignore[method-assign]
    policy.observe = watch.wrap("learn", policy.observe)  # type: ignore[method-assign]
    draft.forward = watch.wrap("draft passes", draft.forward)  # type: ignore[method-assign]
    drafter.propose = watch.wrap("propose", drafter.propose)  # type: ignore[method-assign]
    drafter.observe = watch.wrap("observe", drafter.observe)  # type: ignore[method-assign]
    exact = model_drafter.confidence
    model_drafter.confidence = watch.wrap("confidence", exact)
    try:
        events = generate(target, drafter, target.encode_chat([("user", prompt)]), GenerationConfig(max_tokens, 8))
        rounds = [event for event in events if isinstance(event, Round)]
    finally:
        model_drafter.confidence = exact
    modelled = sum(event.source == Source.MODEL and len(event.drafted) > 0 for event in rounds)
    return len(rounds), modelled, watch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target")
    parser.add_argument("draft")
    parser.add_argument("--prompt", default="Write a Python function that merges two sorted lists, with a docstring.")
    parser.add_argument("-n", type=int, default=128, help="tokens to generate (default 128)")
    args = parser.parse_args()
    if args.n < 1:
        parser.error(f"-n {args.n}: generate at least one token")
    for path in (args.target, args.draft):
        if not Path(path).is_file():
            parser.error(f"no such file: {path}")
    with ExitStack() as stack:
        target = stack.enter_context(Model(args.target, LoadOptions()))
        draft = stack.enter_context(Model(args.draft, LoadOptions()))
        rounds, modelled, watch = measure(target, draft, args.prompt, args.n)
    seconds = watch.seconds
    python = seconds.get("propose", 0.0) + seconds.get("observe", 0.0) - seconds.get("draft passes", 0.0)
    print(f"rounds {rounds}, drafted by the model {modelled}")
    for part in PARTS:
        calls = watch.calls.get(part, 0)
        each = f", {1e6 * seconds[part] / calls:.1f} us a call" if calls else ""
        print(f"{part}: {1e6 * seconds.get(part, 0.0) / rounds:.1f} us a round ({calls} calls{each})")
    share = python / rounds / H200_7B.verify_cost(1)
    print(f"auto's Python: {1e6 * python / rounds:.1f} us a round, {share:.1%} of the H200's one-token pass")


if __name__ == "__main__":
    main()
