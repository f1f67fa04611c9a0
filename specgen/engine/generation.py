"""One generation, built and run: the drafter chosen for its request, its grammar open for as
long as it runs, the speculative loop, and the cost recheck after the reply.

A front end opens a `Generation` for a `Request` (`with Generation(...) as generation:`), hands
its events to whatever shows them (`events`, or `consume` with a callback per round), and after
the block reads `stale_costs`: whether the reply showed the cached step costs were measured on a
busy machine (they are then removed, and measured again at the next `cached_costs`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from types import TracebackType

from specgen.decoding.auto import AutoDrafter
from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.base import Drafter, Source, Vocabulary
from specgen.decoding.drafters.prediction import Prediction, PredictionReport, report
from specgen.decoding.events import Round, Summary, consume
from specgen.decoding.loop import generate
from specgen.engine.drafting import drafter_for, loaded_draft
from specgen.engine.request import Request
from specgen.llama.calibrate import forget_costs
from specgen.llama.grammar import Grammar
from specgen.llama.model import Model

# what a front end says after a reply that found the cached step costs too slow (`stale_costs`),
# formatted with what measures them again ("run", "reply")
STALE_COSTS_NOTE = (
    "note: this machine's cached step costs were measured while it was busy (passes now run faster);"
    " they were removed, and the next {} measures them again"
)


# what a front end says before a reply whose auto policy times the machine's passes first
# (`drafting.measures_costs`): nothing is cached for this machine, these models and threads yet
MEASURING_NOTE = "note: timing this machine's passes for auto, once (later runs read them from the cache)"


def _never() -> bool:
    return False


def recheck_costs(target: Model, drafter: Drafter | None) -> bool:
    """After a reply: where the auto policy found the target's one-token passes running well under
    their cached cost (`Policy.calibration_too_slow`), the cache was measured while the machine
    was busy; remove it, so that the next `cached_costs` measures again. Whether it was removed."""
    if not isinstance(drafter, AutoDrafter) or not drafter.policy.calibration_too_slow():
        return False
    return forget_costs(target, loaded_draft(drafter.model))


class Generation:
    """One request's generation on `target`, drafted by `base` (a draft model's drafter, prompt
    lookup, or None for the target alone), under the auto policy where the request says so.

    `costs`: step costs the caller measured already (serve, once, at start-up); a seeded request
    ignores them and decides from the cost cache alone, so that one seed gives one text."""

    def __init__(self, target: Model, base: Drafter | None, request: Request, costs: StepCosts | None = None):
        self.target, self.request = target, request
        drafts = base is not None
        words = Vocabulary(target.piece, target.continuation)
        self.prediction = (
            Prediction(list(request.prediction), words) if request.prediction is not None and drafts else None
        )
        # the text drafts follow: an earlier identical request's reply, else the prediction, else attached text
        followed = self.prediction
        if request.repeats is not None and request.auto and drafts:
            followed = Prediction(list(request.repeats), words, Source.REPEAT)
        elif followed is None and request.attached and request.auto and drafts:
            followed = Prediction(list(request.attached), words, Source.ATTACHED)
        seeded = request.config.sampling.seed is not None
        self.drafter = drafter_for(
            target,
            base,
            request.config,
            request.auto,
            request.shared,
            None if seeded else costs,
            followed,
            quoted=request.quoted,
            example=request.example,
        )
        self.grammar: Grammar | None = None
        self.stale_costs = False

    def __enter__(self) -> Generation:
        rules = self.request.grammar
        self.grammar = Grammar(self.target, rules.gbnf, rules.root) if rules is not None else None
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self.grammar is not None:
            self.grammar.close()
        if kind is None:
            self.stale_costs = recheck_costs(self.target, self.drafter)

    def events(self) -> Generator[Round | Summary, None, None]:
        """The loop's events: a Round per verification round, then the Summary."""
        return generate(self.target, self.drafter, list(self.request.prompt), self.request.config, self.grammar)

    def consume(self, on_round: Callable[[Round], None], stop: Callable[[], bool] = _never) -> tuple[str, Summary]:
        """Run the loop, calling `on_round` with each round; the whole text and the Summary
        (`decoding.events.consume`: Ctrl-C or `stop()` ends it early, "interrupted")."""
        return consume(self.events(), on_round, stop)

    def report(self, output: list[int], summary: Summary) -> PredictionReport | None:
        """What became of the request's prediction in the reply `output` (None without one)."""
        if self.prediction is None:
            return None
        return report(self.prediction, output, summary.by_source.get(Source.PREDICTION))
