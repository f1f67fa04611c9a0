"""Every copy reach recalibrated on logit scale, logit' = A + B logit + H max(logit, 0) (env; the
fit of calibration.py's table: A 0.005, B 0.642, H 0.131); TOP=1: only chances above one half,
logit' = (B + H) logit."""

import math
import os

import specgen.decoding.copy_rates as copy_rates

A, B, H = (float(os.environ.get(k, d)) for k, d in (("A", "0.005"), ("B", "0.642"), ("H", "0.131")))
TOP = bool(os.environ.get("TOP"))


def temper(p):
    if p <= 0.0 or (TOP and p <= 0.5):
        return p
    p = min(p, 1.0 - 1e-9)
    logit = math.log(p / (1.0 - p))
    logit = (B + H) * logit if TOP else A + B * logit + H * max(logit, 0.0)
    return 1.0 / (1.0 + math.exp(-logit))


_reach = copy_rates.CopyRates.reach
copy_rates.CopyRates.reach = lambda self, evidence, offer: [temper(p) for p in _reach(self, evidence, offer)]
