"""The speculative decoding loop, as a generator of small frozen events.

Each round the draft model proposes up to K tokens, the target checks them all in one batched
forward pass, and the sampling rules in `sampling` decide how many are kept. The loop yields a
`Round` per round and a `Summary` at the end; chat, run and bench only consume these events.
With no draft model (or K = 0) the same loop is plain target decoding, so baselines measure
the same engine.
"""

from __future__ import annotations

import codecs
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from .adaptive import AdaptivePlanner
from .drafters import Draft, ModelDrafter, PromptLookupDrafter
from .sampling import SamplingParams, distribution, verify_greedy, verify_sampled


@dataclass(frozen=True)
class GenerationConfig:
    """`draft_tokens` is K, or with `adaptive` the most K a round may choose."""

    max_tokens: int = 256
    draft_tokens: int = 4
    sampling: SamplingParams = SamplingParams()
    adaptive: bool = False


@dataclass(frozen=True)
class Round:
    """One verification round: drafted ids, how many the target kept, and the text they make."""

    drafted: tuple[int, ...]
    accepted: int
    token: int | None  # produced by the target itself (correction or bonus); None if it ended generation
    accepted_text: str
    target_text: str
    rejected_text: str

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
    drafted_by_position: tuple[int, ...] = field(default=())
    accepted_by_position: tuple[int, ...] = field(default=())

    def to_dict(self) -> dict:
        return asdict(self)


class _Utf8Stream:
    """Turns token bytes into text without ever splitting a multi-byte character."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes) -> str:
        return self._decoder.decode(data)


@dataclass
class _Tally:
    rounds: int = 0
    tokens: int = 0
    drafted: int = 0
    accepted: int = 0
    prefill_s: float = 0.0
    draft_s: float = 0.0
    verify_s: float = 0.0
    lookup_rounds: int = 0
    drafted_at: list[int] = field(default_factory=list)
    accepted_at: list[int] = field(default_factory=list)

    def count(self, drafted: int, accepted: int, emitted: int) -> None:
        self.rounds += 1
        self.tokens += emitted
        self.drafted += drafted
        self.accepted += accepted
        grow = drafted - len(self.drafted_at)
        if grow > 0:
            self.drafted_at += [0] * grow
            self.accepted_at += [0] * grow
        for i in range(drafted):
            self.drafted_at[i] += 1
            self.accepted_at[i] += i < accepted


def generate(target, drafter, prompt: list[int], config: GenerationConfig):
    """Yield a Round per verification round, then one Summary (also after Ctrl-C).

    `drafter` is a drafters.ModelDrafter, a PromptLookupDrafter, or None for the target alone.
    With `config.adaptive`, each round's K (0 to config.draft_tokens) is chosen by an
    AdaptivePlanner, and a prompt-lookup proposal competes with the draft model.
    """
    if not prompt:
        raise ValueError("generate needs at least one prompt token")
    k = config.draft_tokens if drafter is not None else 0
    name = drafter.name if k > 0 else "target-only"
    tally = _Tally()
    start = time.perf_counter()
    stop_reason = "length"
    prefilled = 0
    try:
        prefilled = target.sync(prompt[:-1])
        if k > 0:
            drafter.prepare(prompt[:-1])
        tally.prefill_s = time.perf_counter() - start
        for event in _rounds(target, drafter if k > 0 else None, prompt[-1], config, k, tally):
            if isinstance(event, str):
                stop_reason = event
                break
            yield event
    except KeyboardInterrupt:
        stop_reason = "interrupted"
    if k > 0 and config.adaptive:
        name += " (auto)"
    yield _summarize(tally, name, k, len(prompt), prefilled, time.perf_counter() - start, stop_reason)


def _rounds(target, drafter, last: int, config: GenerationConfig, k: int, tally: _Tally):
    """The loop proper; yields Rounds, and a stop reason (a str) when it ends."""
    params = config.sampling
    rng = np.random.default_rng(params.seed)
    text = _Utf8Stream()
    clock = time.perf_counter
    planner = AdaptivePlanner(k) if drafter is not None and config.adaptive else None
    lookup = PromptLookupDrafter(target.n_vocab) if planner and isinstance(drafter, ModelDrafter) else None
    while True:
        room = min(k, config.max_tokens - tally.tokens - 1, target.n_ctx - len(target.tokens) - 1)
        if room < 0:
            yield "length" if tally.tokens >= config.max_tokens else "context"
            return
        t0 = clock()
        source = drafter if room else None
        gate = None
        if planner is not None and room:
            plan = planner.plan(len(lookup.lookup([*target.tokens, last], room)) if lookup else 0)
            room = min(room, plan.k)
            source = lookup if plan.lookup else (drafter if room else None)
            gate = planner.keep
        draft = source.propose(target.tokens, last, room, params, rng, gate) if source else _NO_DRAFT
        t1 = clock()
        n_past = len(target.tokens)
        rows = target.forward([last, *draft.tokens], all_logits=True)
        if params.greedy:
            verdict = verify_greedy(np.argmax(rows, axis=1), draft.tokens)
        else:
            verdict = verify_sampled([distribution(row, params) for row in rows], draft.q_rows, draft.tokens, rng)
        t2 = clock()
        target.truncate(n_past + 1 + verdict.accepted)
        if drafter is not None:
            drafter.rollback(target.tokens)
        t3 = clock()
        if planner is not None:
            _learn(planner, source is lookup, draft, verdict.accepted, t1 - t0, t2 - t1)
        tally.draft_s += t1 - t0
        tally.verify_s += t3 - t1
        tally.lookup_rounds += source is lookup and lookup is not None
        event, ended = _round_event(target, draft.tokens, verdict.accepted, verdict.token, text)
        tally.count(len(draft.tokens), verdict.accepted, event.emitted)
        yield event
        if ended:
            yield "eog"
            return
        last = verdict.token


_NO_DRAFT = Draft([], [], [], 0)


def _learn(planner: AdaptivePlanner, from_lookup: bool, draft: Draft, accepted: int,
           draft_s: float, verify_s: float) -> None:
    """Feed the planner this round's measured costs and outcomes."""
    planner.record_costs(len(draft.tokens) + 1, verify_s, draft.steps, draft_s)
    if from_lookup:
        planner.record_lookup_round(len(draft.tokens), accepted)
    else:
        planner.record_model_round(draft.confidences, accepted)


def _round_event(target, drafted: list[int], accepted: int, token: int, text: _Utf8Stream):
    """Build the Round for the kept tokens, cut at the first end-of-generation token."""
    kept = [*drafted[:accepted], token]
    for i, tok in enumerate(kept):
        if target.is_eog(tok):
            kept = kept[:i]
            break
    ended = len(kept) < accepted + 1
    n_draft = min(accepted, len(kept))
    accepted_text = text.feed(b"".join(target.piece(t) for t in kept[:n_draft]))
    own = None if ended else token
    target_text = text.feed(target.piece(token)) if own is not None else ""
    rejected = b"".join(target.piece(t) for t in drafted[accepted:])
    return Round(tuple(drafted), n_draft, own, accepted_text, target_text,
                 rejected.decode("utf-8", errors="replace")), ended


def _summarize(tally: _Tally, mode: str, k: int, prompt_tokens: int,
               prefilled: int, wall: float, stop_reason: str) -> Summary:
    decode_s = max(wall - tally.prefill_s, 1e-9)
    return Summary(
        mode=mode,
        draft_tokens=k,
        prompt_tokens=prompt_tokens,
        prefilled_tokens=prefilled,
        tokens=tally.tokens,
        rounds=tally.rounds,
        drafted=tally.drafted,
        accepted=tally.accepted,
        acceptance_rate=tally.accepted / tally.drafted if tally.drafted else 0.0,
        tokens_per_round=tally.tokens / tally.rounds if tally.rounds else 0.0,
        tokens_per_second=tally.tokens / decode_s,
        prefill_s=tally.prefill_s,
        decode_s=decode_s,
        draft_s=tally.draft_s,
        verify_s=tally.verify_s,
        other_s=max(decode_s - tally.draft_s - tally.verify_s, 0.0),
        stop_reason=stop_reason,
        lookup_rounds=tally.lookup_rounds,
        drafted_by_position=tuple(tally.drafted_at),
        accepted_by_position=tuple(tally.accepted_at),
    )
