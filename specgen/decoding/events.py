"""The events the loop yields, the running count every consumer keeps, and the one driver.

`generate` yields a `Round` per verification round and one `Summary` at the end; run, chat,
bench and serve all read them through `consume` and count them in a `Tally`, so every front end
reports the same numbers the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from specgen.decoding.drafters.base import COPIED_PATTERN, LOOKUP, MODEL
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
    source: str = ""  # who drafted: MODEL, LOOKUP, or "" for nobody
    draft_s: float = 0.0
    verify_s: float = 0.0
    # the round's wall time outside the models' passes (drafting logic, policy, verification,
    # bookkeeping); a round of the draft model counts all its drafting time as the model's
    python_s: float = 0.0
    rewrites: int = 0  # learnt rewrites the drafted copy carried
    copied_from: str = ""  # what a drafted copy was copied from (drafters.base: COPIED_TEXT, COPIED_PATTERN, ...)
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
    and rounds whose first drafted token the target refused (the whole round's verify was spent
    for one token)."""

    drafted: int = 0
    kept: int = 0
    rounds: int = 0
    missed: int = 0


def drafted_by(event: Round) -> str:
    """Which kind of drafter proposed a round's tokens: "model", "copy" (from the text written so
    far), "pattern" (the output's record pattern), "prediction" (the prediction the user gave),
    "quoted" (the prompt as a JSON string escapes it), "structure" (an earlier record of a JSON
    reply, found by its keys), or "" for a round that drafted nothing."""
    if not event.drafted:
        return ""
    if event.source == MODEL:
        return "model"
    return event.copied_from or "copy"


@dataclass
class Tally:
    """Running counts over rounds. The loop's Summary, the live status line, chat's /stats and
    bench all read one of these, fed the same Round events."""

    rounds: int = 0
    tokens: int = 0
    drafted: int = 0
    accepted: int = 0
    rejected_rounds: int = 0
    lookup_rounds: int = 0
    model_drafted: int = 0  # tokens the draft model proposed (each cost one draft step)
    rewrite_rounds: int = 0  # rounds whose copy carried a learnt rewrite
    pattern_rounds: int = 0  # rounds whose copy was the output's record pattern's prediction
    draft_s: float = 0.0
    verify_s: float = 0.0
    python_s: float = 0.0
    constraint_s: float = 0.0
    drafted_at: list[int] = field(default_factory=list)
    accepted_at: list[int] = field(default_factory=list)
    sources: dict[str, SourceCount] = field(default_factory=dict)  # by `drafted_by`

    def add(self, event: Round) -> None:
        drafted = len(event.drafted)
        self.rounds += 1
        self.tokens += event.emitted
        self.drafted += drafted
        self.accepted += event.accepted
        self.rejected_rounds += event.accepted < drafted
        self.lookup_rounds += event.source == LOOKUP
        self.model_drafted += drafted if event.source == MODEL else 0
        self.rewrite_rounds += event.rewrites > 0
        self.pattern_rounds += event.copied_from == COPIED_PATTERN
        self.draft_s += event.draft_s
        self.verify_s += event.verify_s
        self.python_s += event.python_s
        self.constraint_s += event.constraint_s
        grow = drafted - len(self.drafted_at)
        if grow > 0:
            self.drafted_at += [0] * grow
            self.accepted_at += [0] * grow
        for i in range(drafted):
            self.drafted_at[i] += 1
            self.accepted_at[i] += i < event.accepted
        if drafted:
            count = self.sources.setdefault(drafted_by(event), SourceCount())
            count.drafted += drafted
            count.kept += event.accepted
            count.rounds += 1
            count.missed += event.accepted == 0

    @property
    def missed_copy_rounds(self) -> int:
        """Copy rounds (of the text, the record pattern or the prediction) whose first token the target refused."""
        return sum(count.missed for name, count in self.sources.items() if name != "model")

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0

    @property
    def tokens_per_round(self) -> float:
        return self.tokens / self.rounds if self.rounds else 0.0


@dataclass(frozen=True)
class Summary:
    """Totals for one generation; times in seconds, `decode_s` excludes the prompt's prefill."""

    mode: str
    draft_tokens: int
    prompt_tokens: int
    prefilled_tokens: int
    tokens: int
    rounds: int
    drafted: int
    accepted: int
    acceptance_rate: float
    tokens_per_round: float
    tokens_per_second: float
    prefill_s: float
    decode_s: float
    draft_s: float
    verify_s: float
    other_s: float
    stop_reason: str
    lookup_rounds: int = 0
    rejected_rounds: int = 0
    drafted_by_position: tuple[int, ...] = field(default=())
    accepted_by_position: tuple[int, ...] = field(default=())
    python_s: float = 0.0  # of draft_s + verify_s + other_s: the rounds' time outside the models' passes
    model_drafted: int = 0  # of drafted: the tokens the draft model proposed (the rest were copied)
    rewrite_rounds: int = 0  # of lookup_rounds: those whose copy carried a learnt rewrite
    pattern_rounds: int = 0  # of lookup_rounds: those whose copy was the output's record pattern's prediction
    constraint_s: float = 0.0  # of python_s: the output's grammar (masking verify rows, following the output)
    # by kind of drafter ("model", "copy", "pattern", "prediction", "quoted", "structure"): drafted, kept, rounds,
    # missed (first token refused)
    by_source: dict[str, SourceCount] = field(default_factory=dict)
    missed_copy_rounds: int = 0  # copy rounds whose first token was refused: their verify bought one token

    def to_dict(self) -> dict:
        return asdict(self)


def consume(events, on_round: Callable[[Round], None],
            stop: Callable[[], bool] = lambda: False) -> tuple[str, Summary]:
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
    return "".join(parts), summary
