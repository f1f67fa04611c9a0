"""The events the loop yields, the running count every consumer keeps, and the one driver.

`generate` yields a `Round` per verification round and one `Summary` at the end; run, chat,
bench and serve all read them through `consume` and count them in a `Tally`, so every front end
reports the same numbers the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import asdict, dataclass, field

from specgen.decoding.drafters.base import Source
from specgen.decoding.sampling import TokenLogprob


@dataclass(frozen=True)
class Round:
    """One verification round: drafted ids, how many the target kept, and the text they make."""

    drafted: tuple[int, ...]
    accepted: int
    token: int | None  # produced by the target itself (correction or bonus); None if it ended generation
    accepted_text: str
    target_text: str
    rejected_text: str
    source: Source = Source.PLAIN  # who drafted: nobody, the draft model, or a copy source
    draft_s: float = 0.0
    verify_s: float = 0.0
    # the round's wall time outside the models' passes (drafting logic, policy, verification,
    # bookkeeping); of a draft model's drafting, only its passes are the model's
    python_s: float = 0.0
    rewrites: int = 0  # learnt rewrites the drafted copy carried
    constraint_s: float = 0.0  # of python_s: the constrained verdict (the grammar's masks) and the grammar's update
    logprobs: tuple[TokenLogprob, ...] = ()  # of `tokens`, where the config asked for them

    @property
    def text(self) -> str:
        return self.accepted_text + self.target_text

    @property
    def tokens(self) -> list[int]:
        """The tokens this round added to the output: kept draft tokens, then the target's own."""
        return [*self.drafted[: self.accepted], *([] if self.token is None else [self.token])]

    @property
    def emitted(self) -> int:
        return self.accepted + (self.token is not None)


@dataclass
class SourceCount:
    """What one kind of drafter did over the rounds it drafted: tokens drafted and kept, rounds,
    rounds whose first drafted token the target refused (the whole round's verify was spent for
    one token), and rounds whose copy carried a learnt rewrite."""

    drafted: int = 0
    kept: int = 0
    rounds: int = 0
    missed: int = 0
    rewritten: int = 0


def drafted_by(event: Round) -> str:
    """Which kind of drafter proposed a round's tokens (a `Source`: "model", "copy", "pattern",
    ...), or "" for a round that drafted nothing."""
    return event.source if event.drafted else ""


@dataclass
class Tally:
    """Running counts over rounds. The loop's Summary, the live status line, chat's /stats and
    bench all read one of these, fed the same Round events. What each kind of drafter did is
    counted in `by_source` only; the counts of some kinds are read from it."""

    rounds: int = 0
    tokens: int = 0
    drafted: int = 0
    accepted: int = 0
    rejected_rounds: int = 0
    draft_s: float = 0.0
    verify_s: float = 0.0
    python_s: float = 0.0  # of draft_s + verify_s + other time: the rounds' time outside the models' passes
    constraint_s: float = 0.0  # of python_s: the output's grammar (masking verify rows, following the output)
    drafted_by_position: list[int] = field(default_factory=list)
    accepted_by_position: list[int] = field(default_factory=list)
    # by kind of drafter (`drafted_by`): drafted, kept, rounds, missed (first token refused), rewritten
    by_source: dict[Source, SourceCount] = field(default_factory=dict)

    def add(self, event: Round) -> None:
        drafted = len(event.drafted)
        self.rounds += 1
        self.tokens += event.emitted
        self.drafted += drafted
        self.accepted += event.accepted
        self.rejected_rounds += event.accepted < drafted
        self.draft_s += event.draft_s
        self.verify_s += event.verify_s
        self.python_s += event.python_s
        self.constraint_s += event.constraint_s
        grow = drafted - len(self.drafted_by_position)
        if grow > 0:
            self.drafted_by_position += [0] * grow
            self.accepted_by_position += [0] * grow
        for i in range(drafted):
            self.drafted_by_position[i] += 1
            self.accepted_by_position[i] += i < event.accepted
        if drafted:
            count = self.by_source.setdefault(event.source, SourceCount())
            count.drafted += drafted
            count.kept += event.accepted
            count.rounds += 1
            count.missed += event.accepted == 0
            count.rewritten += event.rewrites > 0

    def _copies(self) -> list[SourceCount]:
        return [count for source, count in self.by_source.items() if source.copied]

    @property
    def lookup_rounds(self) -> int:
        """Rounds that drafted a copy (of any source)."""
        return sum(count.rounds for count in self._copies())

    @property
    def missed_copy_rounds(self) -> int:
        """Copy rounds (of any source) whose first token the target refused."""
        return sum(count.missed for count in self._copies())

    @property
    def rewrite_rounds(self) -> int:
        """Copy rounds whose copy carried a learnt rewrite."""
        return sum(count.rewritten for count in self._copies())

    @property
    def pattern_rounds(self) -> int:
        """Rounds whose copy was the output's record pattern's prediction."""
        return self.by_source[Source.PATTERN].rounds if Source.PATTERN in self.by_source else 0

    @property
    def model_drafted(self) -> int:
        """Tokens the draft model proposed (each cost one draft step); the rest were copied."""
        return self.by_source[Source.MODEL].drafted if Source.MODEL in self.by_source else 0

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0

    @property
    def tokens_per_round(self) -> float:
        return self.tokens / self.rounds if self.rounds else 0.0


DERIVED = (
    "acceptance_rate",
    "tokens_per_round",
    "lookup_rounds",
    "model_drafted",
    "rewrite_rounds",
    "pattern_rounds",
    "missed_copy_rounds",
)  # counts a Summary's record holds beside its fields


@dataclass(kw_only=True)
class Summary(Tally):
    """One generation's counts (its `Tally`) and totals; times in seconds, `decode_s` excludes
    the prompt's prefill."""

    mode: str
    draft_tokens: int
    prompt_tokens: int
    prefilled_tokens: int
    tokens_per_second: float
    prefill_s: float
    decode_s: float
    other_s: float
    stop_reason: str

    def to_dict(self) -> dict[str, object]:
        """The record `--json` and bench print: the fields, and the counts read from `by_source`."""
        return {**asdict(self), **{name: getattr(self, name) for name in DERIVED}}


Events = Generator["Round | Summary", None, None]  # what `loop.generate` yields


def consume(
    events: Events, on_round: Callable[[Round], None], stop: Callable[[], bool] = lambda: False
) -> tuple[str, Summary]:
    """Call on_round for each Round as it arrives; return the whole text and the Summary.

    Ctrl-C, or `stop()` turning true after a round, ends the loop early: the interrupt is thrown
    back into it, and it answers with its final Summary ("interrupted").
    """
    parts: list[str] = []
    try:
        for event in events:
            if isinstance(event, Summary):
                return "".join(parts), event
            parts.append(event.text)
            on_round(event)
            if stop():
                break
        else:
            raise RuntimeError("the generation loop ended without a summary")
    except KeyboardInterrupt:
        pass
    summary = events.throw(KeyboardInterrupt())
    events.close()
    if not isinstance(summary, Summary):
        raise RuntimeError("the generation loop answered an interrupt without a summary")
    return "".join(parts), summary
