"""The target's pass times as a running reply meets them: sizes 1, 2, 3, 4, 5 and 8 timed 25
times each in turn, one token kept after each pass (the cache grows as a reply's does). Run from
the repository root (passes.txt: its output, 2026-11-26 19:2x UTC, before the live runs):

    python benchmarks/results/2026-11-26-copy-size-factor/passes.py TARGET.gguf
"""
import time, statistics, sys
from specgen.llama.library import llama; llama()
from specgen.llama.model import Model, LoadOptions
m = Model(sys.argv[1], LoadOptions(n_ctx=4096, n_threads=2))
toks = m.tokenize("Write a JSON list of ten books with title, author and year. " * 8, True, False)
m.prefill(toks)
base = len(m.tokens)
def one(n):
    t = time.perf_counter(); m.forward([toks[5]] * n, all_logits=True); return time.perf_counter() - t
res = {n: [] for n in (1, 2, 3, 4, 5, 8)}
for rep in range(25):
    for n in res:
        res[n].append(one(n)); m.truncate(len(m.tokens) - n + 1)
for n, v in res.items():
    v = sorted(v)
    print(f"{n}: p10 {v[2]*1000:6.1f} median {statistics.median(v)*1000:6.1f} p90 {v[-3]*1000:6.1f} mean {statistics.mean(v)*1000:6.1f}")
