"""The speculative decoding loop, as a generator of small frozen events.

Each round a drafter proposes up to K tokens, the target checks them all in one batched
forward pass, and the sampling rules in `sampling` decide how many are kept. The loop yields a
`Round` per round and a `Summary` at the end; chat, run, bench and serve only consume these
events, and keep their running counts in the same `Tally` the loop uses. With no drafter (or
K = 0) the same loop is plain target decoding, so baselines measure the same engine.
"""

from __future__ import annotations

import codecs
import secrets
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from .adaptive import LOOKUP, LOOKUP_MAX, Policy
from .costs import cached_costs
from .drafters import NO_DRAFT, AdaptiveDrafter, Draft, ModelDrafter
from .sampling import SamplingParams, Verdict, distribution, uniforms, verify_greedy, verify_sampled


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
    source: str = ""  # who drafted: adaptive.MODEL, adaptive.LOOKUP, or "" for nobody
    draft_s: float = 0.0
    verify_s: float = 0.0

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
class Tally:
    """Running counts over rounds. The loop's Summary, the live status line, chat's /stats and
    bench all read one of these, fed the same Round events."""

    rounds: int = 0
    tokens: int = 0
    drafted: int = 0
    accepted: int = 0
    rejected_rounds: int = 0
    lookup_rounds: int = 0
    draft_s: float = 0.0
    verify_s: float = 0.0
    drafted_at: list[int] = field(default_factory=list)
    accepted_at: list[int] = field(default_factory=list)

    def add(self, event: Round) -> None:
        drafted = len(event.drafted)
        self.rounds += 1
        self.tokens += event.emitted
        self.drafted += drafted
        self.accepted += event.accepted
        self.rejected_rounds += event.accepted < drafted
        self.lookup_rounds += event.source == LOOKUP
        self.draft_s += event.draft_s
        self.verify_s += event.verify_s
        grow = drafted - len(self.drafted_at)
        if grow > 0:
            self.drafted_at += [0] * grow
            self.accepted_at += [0] * grow
        for i in range(drafted):
            self.drafted_at[i] += 1
            self.accepted_at[i] += i < event.accepted

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

    def to_dict(self) -> dict:
        return asdict(self)


class _Utf8Stream:
    """Turns token bytes into text without ever splitting a multi-byte character."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes) -> str:
        return self._decoder.decode(data)


def generate(target, drafter, prompt: list[int], config: GenerationConfig):
    """Yield a Round per verification round, then one Summary (also after Ctrl-C).

    `drafter` is a drafters.ModelDrafter, a PromptLookupDrafter, or None for the target alone.
    With `config.adaptive` it is wrapped in an AdaptiveDrafter, which chooses every round
    between plain decoding, the draft model at up to config.draft_tokens, and prompt lookup.
    """
    if not prompt:
        raise ValueError("generate needs at least one prompt token")
    k = config.draft_tokens if drafter is not None else 0
    room = k
    if k > 0 and config.adaptive:
        drafter = adaptive(target, drafter, config)
        room = max(k, LOOKUP_MAX)  # the policy holds the draft model to k; a long copy may go further
    tally = Tally()
    start = time.perf_counter()
    prefilled, prefill_s = 0, 0.0
    try:
        prefilled = target.sync(prompt[:-1])
        if k > 0:
            drafter.prepare(prompt[:-1])
        prefill_s = time.perf_counter() - start
        stop_reason = yield from _rounds(target, drafter if k > 0 else None, prompt[-1], config, room, tally)
    except KeyboardInterrupt:
        stop_reason = "interrupted"
    wall = time.perf_counter() - start
    name = drafter.name if k > 0 else "target-only"
    yield _summarize(tally, name, k, len(prompt), prefilled, prefill_s, wall, stop_reason)


def adaptive(target, drafter, config: GenerationConfig) -> AdaptiveDrafter:
    """The auto policy over this drafter, starting from this machine's measured step costs.

    A seeded run decides from those cached costs alone, not from live timings, so that the
    same seed gives the same draft lengths and so the same text.
    """
    model = drafter if isinstance(drafter, ModelDrafter) else None
    costs = cached_costs(target, model.model if model else None)
    return AdaptiveDrafter(model, Policy(costs, config.draft_tokens, timed=config.sampling.seed is None))


def _rounds(target, drafter, last: int, config: GenerationConfig, k: int, tally: Tally):
    """The loop proper: yields Rounds; returns why it stopped ("eog", "length" or "context")."""
    params = config.sampling
    seed = params.seed if params.seed is not None else secrets.randbits(63)
    text = _Utf8Stream()
    clock = time.perf_counter
    while True:
        room = min(k, config.max_tokens - tally.tokens - 1, target.n_ctx - len(target.tokens) - 1)
        if room < 0:
            return "length" if tally.tokens >= config.max_tokens else "context"
        draws = None if params.greedy else [uniforms(seed, tally.tokens + i) for i in range(room + 1)]
        t0 = clock()
        proposing = drafter is not None and room > 0
        draft = drafter.propose(target.tokens, last, room, params, draws) if proposing else NO_DRAFT
        t1 = clock()
        n_past = len(target.tokens)
        rows = target.forward([last, *draft.tokens], all_logits=True)
        verdict = _verify(rows, draft, params, draws)
        target.truncate(n_past + 1 + verdict.accepted)
        if drafter is not None:
            drafter.rollback(target.tokens)
        t2 = clock()
        if proposing:
            drafter.observe(draft, [*draft.tokens[: verdict.accepted], verdict.token], t2 - t0)
        event, ended = _round_event(target, draft, verdict, text, (t1 - t0) * proposing, t2 - t1)
        tally.add(event)
        yield event
        if ended:
            return "eog"
        last = verdict.token


def _verify(rows: np.ndarray, draft: Draft, params: SamplingParams, draws) -> Verdict:
    """The target's verdict on the draft: greedy comparison, or speculative sampling."""
    if params.greedy:
        return verify_greedy(np.argmax(rows, axis=1), draft.tokens)
    return verify_sampled(lambda i: distribution(rows[i], params), draft.q, draft.tokens, draws)


def _round_event(target, draft: Draft, verdict: Verdict, text: _Utf8Stream, draft_s: float, verify_s: float):
    """Build the Round for the kept tokens, cut at the first end-of-generation token."""
    drafted, accepted, token = draft.tokens, verdict.accepted, verdict.token
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
                 rejected.decode("utf-8", errors="replace"), draft.source, draft_s, verify_s), ended


def _summarize(tally: Tally, mode: str, k: int, prompt_tokens: int, prefilled: int,
               prefill_s: float, wall: float, stop_reason: str) -> Summary:
    decode_s = max(wall - prefill_s, 1e-9)
    return Summary(
        mode=mode,
        draft_tokens=k,
        prompt_tokens=prompt_tokens,
        prefilled_tokens=prefilled,
        tokens=tally.tokens,
        rounds=tally.rounds,
        drafted=tally.drafted,
        accepted=tally.accepted,
        acceptance_rate=tally.acceptance_rate,
        tokens_per_round=tally.tokens_per_round,
        tokens_per_second=tally.tokens / decode_s,
        prefill_s=prefill_s,
        decode_s=decode_s,
        draft_s=tally.draft_s,
        verify_s=tally.verify_s,
        other_s=max(decode_s - tally.draft_s - tally.verify_s, 0.0),
        stop_reason=stop_reason,
        lookup_rounds=tally.lookup_rounds,
        rejected_rounds=tally.rejected_rounds,
        drafted_by_position=tuple(tally.drafted_at),
        accepted_by_position=tuple(tally.accepted_at),
    )
