"""The speculative decoding loop, as a generator of small frozen events.

Each round a drafter proposes up to K tokens, the target checks them all in one batched forward
pass, and the sampling rules in `sampling` decide how many are kept. The loop yields a `Round`
per round and a `Summary` at the end (see `events`). With no drafter (or K = 0) the same loop is
plain target decoding, so baselines measure the same engine. The loop does no I/O and imports
no model library: `target` and the drafters are handed in.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace

import numpy as np

from specgen.decoding.clock import RoundClock
from specgen.decoding.constraint import Constraint, verify_constrained
from specgen.decoding.drafters.base import NO_DRAFT, Draft, Drafter, Source
from specgen.decoding.events import Events, Round, Summary, Tally
from specgen.decoding.protocols import Target
from specgen.decoding.sampling import (
    SamplingParams,
    Verdict,
    distribution,
    draft_uniforms,
    token_logprobs,
    uniforms,
    verify_greedy,
    verify_sampled,
)
from specgen.decoding.tokens import Utf8Stream


@dataclass(frozen=True)
class GenerationConfig:
    """`draft_tokens` is K, handed to the drafter's `reach` (the auto drafter takes it as the
    most its draft model may draft; a copy may go further)."""

    max_tokens: int = 256
    draft_tokens: int = 4
    sampling: SamplingParams = field(default_factory=SamplingParams)
    logprobs: int | None = None  # each emitted token's log-probability and this many top ones (None: none)


def generate(
    target: Target,
    drafter: Drafter | None,
    prompt: list[int],
    config: GenerationConfig,
    constraint: Constraint | None = None,
) -> Events:
    """Yield a Round per verification round, then one Summary (also after Ctrl-C).

    `drafter` is any drafter (a draft model, a copy drafter, the auto policy over them), or None
    for the target alone; it may draft up to `drafter.reach(config.draft_tokens)` tokens a round.
    `constraint` (a grammar) masks every verify row at its own place (decoding.constraint).
    """
    if not prompt:
        raise ValueError("generate needs at least one prompt token")
    k = config.draft_tokens if drafter is not None else 0
    room = drafter.reach(k) if drafter is not None and k > 0 else 0
    tally = Tally()
    start = time.perf_counter()
    prefilled, prefill_s = 0, 0.0
    try:
        if drafter is not None and k > 0:
            drafter.prepare(prompt[:-1])
        first, prefilled = target.start(prompt)
        prefill_s = time.perf_counter() - start
        stop_reason = yield from _rounds(
            target, drafter if k > 0 else None, first, prompt[-1], config, room, tally, constraint
        )
    except KeyboardInterrupt:
        stop_reason = "interrupted"
    wall = time.perf_counter() - start
    name = drafter.name if drafter is not None and k > 0 else "target-only"
    yield _summarize(tally, name, k, len(prompt), prefilled, prefill_s, wall, stop_reason)


def _rounds(
    target: Target,
    drafter: Drafter | None,
    first: np.ndarray | None,
    last: int,
    config: GenerationConfig,
    k: int,
    tally: Tally,
    constraint: Constraint | None,
) -> Generator[Round, None, str]:
    """The loop proper: yields Rounds; returns why it stopped ("eog", "length" or "context").
    `first`: the logits row of `last`, which the prefill put in the cache with the rest of the
    prompt: the first round checks its draft with that row and a pass over the draft alone, and
    where it drafts nothing draws its token from the row with no pass (`auto` drafts nothing
    there: a draft yields what the next round's would with the same pass once the first token is
    known, and where that token is refused the pass is wasted; a fixed K drafts as it always does)."""
    params = config.sampling
    seed = params.seed if params.seed is not None else secrets.randbits(63)
    text = Utf8Stream()
    learnt_s = 0.0  # the drafter's learning from the round before, which this round's choice rests on
    while True:
        clock = RoundClock()
        n_past = len(target.tokens) - (1 if first is not None else 0)  # the cache before `last`
        room = min(k, config.max_tokens - tally.tokens - 1, target.n_ctx - n_past - 1)
        if room < 0:
            return "length" if tally.tokens >= config.max_tokens else "context"
        proposing = drafter is not None and room > 0
        draws = draft_uniforms(seed, tally.rounds, room) if proposing and not params.greedy else None
        draft = NO_DRAFT
        if drafter is not None and proposing:
            draft = drafter.propose(
                target.tokens if first is None else target.tokens[:n_past], last, room, params, draws
            )
        clock.drafted()
        rows, passed = round_rows(target, first, last, draft.tokens), first is None or bool(draft.tokens)
        first = None
        clock.forwarded()
        constrained_at = time.perf_counter()
        verdict = _verify(rows, draft, params, lambda i: uniforms(seed, tally.tokens + i), constraint)
        constraint_s = time.perf_counter() - constrained_at if constraint is not None else 0.0
        logprobs = (
            ()
            if config.logprobs is None
            else token_logprobs(rows, [*draft.tokens[: verdict.accepted], verdict.token], config.logprobs)
        )
        target.truncate(n_past + 1 + verdict.accepted)
        if drafter is not None:
            drafter.rollback(target.tokens)
        clock.verified()
        if drafter is not None and proposing and passed:
            looked_s = learnt_s + (0.0 if draft.source == Source.MODEL else clock.proposing_s)
            drafter.observe(draft, [*draft.tokens[: verdict.accepted], verdict.token], clock.round_s, looked_s)
            clock.observed()
            learnt_s = clock.observing_s
        event, ended = _round_event(target, draft, verdict, text)
        if constraint is not None and not ended:
            constrained_at = time.perf_counter()
            constraint.accept(event.tokens)
            constraint_s += time.perf_counter() - constrained_at
        event = replace(
            clock.stamp(event, proposing, draft.model_s),
            constraint_s=constraint_s,
            logprobs=logprobs[: event.emitted],
        )
        tally.add(event)
        yield event
        if ended:
            return "eog"
        last = verdict.token


def round_rows(target: Target, first: np.ndarray | None, last: int, draft: list[int]) -> np.ndarray:
    """The target's logits rows of `last` and the draft: a pass over both, or where the prefill
    gave the row of `last` (`first`), that row and a pass over the draft alone (none without one)."""
    if first is None:
        return target.forward([last, *draft], all_logits=True)
    return np.concatenate([first, target.forward(draft, all_logits=True)]) if draft else first


def _verify(
    rows: np.ndarray,
    draft: Draft,
    params: SamplingParams,
    checks: Callable[[int], np.ndarray],
    constraint: Constraint | None,
) -> Verdict:
    """The target's verdict on the draft: greedy comparison, or speculative sampling with
    `checks(i)`, the uniforms of the draft's i-th position; with a constraint, on rows masked
    each at its place."""
    if constraint is not None:
        return verify_constrained(rows, draft.tokens, draft.q, params, checks, constraint.round(draft.tokens))
    if params.greedy:
        return verify_greedy(np.argmax(rows, axis=1), draft.tokens)
    return verify_sampled(lambda i: distribution(rows[i], params), draft.q, draft.tokens, checks)


def _round_event(target: Target, draft: Draft, verdict: Verdict, text: Utf8Stream) -> tuple[Round, bool]:
    """The Round for the kept tokens, cut at the first end-of-generation token (its times are
    stamped after); whether that token ended the generation."""
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
    return Round(
        tuple(drafted),
        n_draft,
        own,
        accepted_text,
        target_text,
        rejected.decode("utf-8", errors="replace"),
        draft.source,
        rewrites=draft.rewrites,
    ), ended


def _summarize(
    tally: Tally, mode: str, k: int, prompt_tokens: int, prefilled: int, prefill_s: float, wall: float, stop_reason: str
) -> Summary:
    """The generation's Summary: its tally's counts, and the totals only the end knows."""
    decode_s = max(wall - prefill_s, 1e-9)
    return Summary(
        **vars(tally),
        mode=mode,
        draft_tokens=k,
        prompt_tokens=prompt_tokens,
        prefilled_tokens=prefilled,
        tokens_per_second=tally.tokens / decode_s,
        prefill_s=prefill_s,
        decode_s=decode_s,
        other_s=max(decode_s - tally.draft_s - tally.verify_s, 0.0),
        stop_reason=stop_reason,
    )
