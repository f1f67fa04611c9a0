"""A Gamma frailty on each copy's hazard: reach(j) = (b / (b + H_j)) ** a, H_j the summed
-log keep rates, a and b starting at FP (env, 4) and learnt from breaks and their expected hazard
(FIRST=1: the first token kept at its own rate; NOLEARN=1: the prior only)."""

import math
import os

import specgen.decoding.copy_rates as C

FP = float(os.environ.get("FP", "4"))
FIRST = os.environ.get("FIRST")
NOLEARN = os.environ.get("NOLEARN")
_init = C.CopyRates.__init__


def __init__(self, log_odds=0.0):
    _init(self, log_odds)
    self.breaks = self.exposure = FP


def _kind_rates(self, evidence, j, token):
    short, index = C._match_bin(evidence.anchored, evidence.match + j)
    curves = {True: C.GROUNDED[short][index], False: C.LOOSE[short][index]}
    prior = self.grounded * curves[True] + (1.0 - self.grounded) * curves[False]
    kept, judged = self.bins.get((short, index), (0.0, 0.0))
    learnt = (kept + C._BIN_PRIOR * prior) / (judged + C._BIN_PRIOR) / prior
    kept, judged = self._token(token)
    own = (kept + C._TOKEN_PRIOR) / (judged + C._TOKEN_PRIOR)
    return {kind: min(rate * learnt, 1.0) * own for kind, rate in curves.items()}


def _runs(self, evidence, offer):
    grounded = self.grounded
    out, hazard, first = [], {True: 0.0, False: 0.0}, 1.0
    shape, scale = self.breaks, self.exposure
    r0 = None
    for j, token in enumerate(offer):
        rates = self._kind_rates(evidence, j, token)
        if FIRST and j == 0:
            r0 = rates
            continue
        for kind, rate in rates.items():
            hazard[kind] += -math.log(rate) if rate > 0.0 else math.inf
        held = {kind: (scale / (scale + h)) ** shape for kind, h in hazard.items()}
        if FIRST:
            out.append(grounded * r0[True] * held[True] + (1.0 - grounded) * r0[False] * held[False])
        else:
            out.append(grounded * held[True] + (1.0 - grounded) * held[False])
    if FIRST and r0 is not None and not out:
        out.append(grounded * r0[True] + (1.0 - grounded) * r0[False])
    elif FIRST and r0 is not None:
        out.insert(0, grounded * r0[True] + (1.0 - grounded) * r0[False])
    if out and evidence.match < C.AGREEMENT_BELOW and out[0] > 0.0:
        first = C._with_odds(out[0], C.AGREEMENT_ODDS[evidence.agreement]) / out[0]
    return first, out


_learn = C.CopyRates.learn


def learn(self, judgement):
    ev = judgement.evidence
    if ev is not None and not NOLEARN:
        g = self.grounded
        lo = judgement.start + (1 if FIRST and judgement.start == 0 else 0)
        for i in range(lo, min(judgement.judged, len(judgement.tokens), judgement.kept + 1)):
            r = self._kind_rates(ev, i, judgement.tokens[i])
            rate = g * r[True] + (1 - g) * r[False]
            self.exposure += C._EVIDENCE * (-math.log(max(rate, 1e-9)))
            self.breaks += C._EVIDENCE * (i >= judgement.kept)
    _learn(self, judgement)


_forget = C.CopyRates.forget


def forget(self):
    _forget(self)
    self.breaks = FP + (self.breaks - FP) * C._COPY_FORGET
    self.exposure = FP + (self.exposure - FP) * C._COPY_FORGET


C.CopyRates.__init__ = __init__
C.CopyRates._kind_rates = _kind_rates
C.CopyRates._runs = _runs
C.CopyRates.learn = learn
C.CopyRates.forget = forget
