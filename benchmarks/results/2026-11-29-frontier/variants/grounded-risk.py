"""The loss budget's share of plain time grows from LO with the copy record's odds that the text
reprints its source: LO + (HI - LO) * max(0, 2 * grounded - 1) (env LO, HI; 1% and 3%)."""

import math
import os

import specgen.decoding.policy as policy

LO, HI = float(os.environ.get("LO", "0.01")), float(os.environ.get("HI", "0.03"))
_choose = policy.Policy.choose


def choose(self, room, lookup, lag, evidence=None, offer=()):
    if not math.isinf(self.loss.risk):
        grounded = max(r.grounded for r in self.copies.values() if hasattr(r, "grounded"))
        self.loss.risk = LO + (HI - LO) * max(0.0, 2.0 * grounded - 1.0)
    return _choose(self, room, lookup, lag, evidence, offer)


policy.Policy.choose = choose
