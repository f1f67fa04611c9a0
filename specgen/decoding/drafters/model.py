"""A draft model sharing the target's vocabulary: it drafts k tokens one pass at a time.

Its KV cache trails the target's accepted history; it catches up on what it has not seen when
it next drafts, and forgets the drafted positions the target did not keep.
"""

from __future__ import annotations

import numpy as np

from specgen.decoding.clock import now
from specgen.decoding.drafters.base import Draft, Drafter, Gate, Source
from specgen.decoding.protocols import DraftModel
from specgen.decoding.sampling import Dist, SamplingParams, distribution, sample
from specgen.decoding.tokens import common_prefix

_NEAR = 16.0  # logits further than this below the top add at most e^-16 each to the softmax's sum
_FEW = 8  # picking the near ones out pays only where at most 1/_FEW of the row is near


def confidence(logits: np.ndarray) -> float:
    """The draft's top probability at temperature 1: 1 / sum(exp(logits - max)), summed over the
    logits within `_NEAR` of the top. A real model's row has a few hundred of them among 150,000,
    so this is several times quicker than the whole sum, which the gate would pay for every
    drafted token; the rest add at most len(logits) * e^-16 (1.7% of the top token's weight on
    a 152,064-token vocabulary), so the result is at most that much too high. A flat row (a
    random-weight model's) is summed whole."""
    top = logits.max()
    near = logits > top - _NEAR
    if np.count_nonzero(near) * _FEW > len(logits):
        return float(1.0 / np.exp(logits - top).sum())
    return float(1.0 / np.exp(logits[near] - top).sum())


class ModelDrafter(Drafter):
    """A draft model sharing the target's vocabulary; its KV cache trails the target's history."""

    name = "speculative"

    def __init__(self, model: DraftModel):
        self.model = model

    def prepare(self, prefix: list[int], prefill: bool = True) -> None:
        """Make the draft's cache hold `prefix`, or (without `prefill`) only what it shares with it."""
        if prefill:
            self.model.sync(prefix)
        else:
            self.model.sync(prefix[: self.lag_free(prefix)])

    def lag_free(self, prefix: list[int]) -> int:
        """How many leading tokens of `prefix` the draft's cache already holds."""
        return common_prefix(self.model.tokens, prefix)

    def lag(self, history: list[int]) -> int:
        """Accepted tokens the draft model has not seen yet."""
        return max(len(history) - len(self.model.tokens), 0)

    def propose(
        self,
        history: list[int],
        last: int,
        k: int,
        params: SamplingParams,
        draws: np.ndarray | None,
        keep: Gate | None = None,
    ) -> Draft:
        """Feed the accepted tokens the draft has not seen, then draft up to k tokens.

        `draws[i]` samples position i; `keep(position, top probability)` may end the draft
        before a token is drawn.
        """
        model = self.model
        feed = [*history[len(model.tokens) :], last]
        lag = len(feed) - 1
        passes = 0.0  # seconds in the model's own passes
        if len(feed) > model.n_batch:
            started = now()
            model.prefill(feed[:-1])
            passes, feed = now() - started, feed[-1:]
        tokens: list[int] = []
        q_rows: list[Dist] = []
        confidences: list[float] = []
        for position in range(k):
            started = now()
            logits = model.forward(feed, all_logits=False)[0]
            passes += now() - started
            q = None if params.greedy else distribution(logits, params)
            if keep is not None:
                sure = confidence(logits) if q is None else q.top
                if not keep(position, sure):
                    top = int(np.argmax(logits)) if q is None else -1
                    return Draft(tokens, q_rows, confidences, lag, (sure, top), Source.MODEL, model_s=passes)
                confidences.append(sure)
            token = int(np.argmax(logits)) if q is None or draws is None else sample(q, draws[position])
            tokens.append(token)
            if q is not None:
                q_rows.append(q)
            if model.is_eog(token):
                break
            feed = [token]
        return Draft(tokens, q_rows, confidences, lag, None, Source.MODEL, model_s=passes)

    def rollback(self, history: list[int]) -> None:
        """Forget drafted positions the target did not keep."""
        self.model.truncate(min(len(self.model.tokens), len(history)))
