"""1% of plain time, plus SHARE (env, 0.05) of what the copies the budget held back would have
saved (priced as auto would have drafted them without a budget, their kept length read from the
recorded output, credited once the tokens they would have covered are out)."""

import math
import os

import copyreplay

import specgen.decoding.budgets as budgets
import specgen.decoding.policy as policy
from specgen.decoding.tokens import common_prefix

SHARE = float(os.environ.get("SHARE", "0.05"))
targets = []


class Target(copyreplay.RecordedTarget):
    def __init__(self, *args):
        super().__init__(*args)
        targets.append(self)


copyreplay.RecordedTarget = Target
_bearable = budgets.LossBudget.bearable
budgets.LossBudget.bearable = lambda self: _bearable(self) + SHARE * max(getattr(self, "credit", 0.0), 0.0)
_init = policy.Policy.__init__


def init(self, costs, k_max=8, timed=True, risk=policy.RISK):
    _init(self, costs, k_max, timed, 0.01 if risk == policy.RISK else risk)
    self.loss.credit, self.pending = 0.0, []


policy.Policy.__init__ = init
_choose = policy.Policy.choose


def choose(self, room, lookup, lag, evidence=None, offer=()):
    target = targets[-1]
    at = len(target.tokens) + 1
    self.loss.credit += sum(amount for due, amount in self.pending if due <= at)
    self.pending = [(due, amount) for due, amount in self.pending if due > at]
    choice = _choose(self, room, lookup, lag, evidence, offer)
    if choice.held_back and choice.source != policy.Source.LOOKUP and offer and evidence and not self.pending:
        reach = self.copy_reach(evidence, offer[: min(lookup, room, policy.LOOKUP_MAX)])
        risk, self.loss.risk = self.loss.risk, math.inf
        free = self._priced_copy(reach)[0]
        self.loss.risk = risk
        if free is not None and free.source == policy.Source.LOOKUP:
            kept = common_prefix(list(offer[: free.k]), target.truth[at:])
            step = self.costs.verify_cost(1)
            cost = self.pass_cost(free.k + 1) + (self.costs.switch if kept < free.k else 0.0)
            self.pending.append((at + kept + 1, (kept + 1) * step + self.plain_pass() - step - cost))
    return choice


policy.Policy.choose = choose
