"""Pass cost by batch size on this CPU, logits for every row (as a verify pass reads them) against
the last row only (as llama-bench's prompt test computes them), after a 200-token context; five
repeats, medians. `python logit_rows.py TARGET.gguf`"""
import statistics
import sys
import time

from specgen.llama.library import llama

llama()  # llama.cpp before numpy (h100-2)

from specgen.llama.model import Model, LoadOptions
m = Model(sys.argv[1], LoadOptions(n_threads=2))
ctx = list(range(1000, 1200))
m.prefill(ctx)
n0 = len(ctx)
res = {}
sizes = [1, 2, 3, 4, 5, 8, 12, 16, 32]
for rep in range(5):
    for n in sizes:
        for all_logits in (True, False):
            toks = list(range(2000, 2000 + n))
            t = time.perf_counter(); m.forward(toks, all_logits); dt = time.perf_counter() - t
            m.truncate(n0)
            res.setdefault((n, all_logits), []).append(dt)
one = statistics.median(res[(1, True)])
for n in sizes:
    a, l = statistics.median(res[(n, True)]), statistics.median(res[(n, False)])
    print(f"{n:3d} all {a*1000:6.1f} ms ({a/one:4.2f}x)  last {l*1000:6.1f} ms ({l/one:4.2f}x)  per-row logits {(a-l)/max(n-1,1)*1000:5.2f} ms")
