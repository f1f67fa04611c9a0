"""Plain and auto (nothing drafted) on a one-sentence answer, in alternating order: the per-pass cost of each."""
import sys, statistics
from specgen.llama.model import LoadOptions, Model
from specgen.bench.runner import run_once, Plan, Config
from specgen.decoding.sampling import SamplingParams
from specgen.llama.grammar import schema_grammar
from specgen.bench.runner import Asked
import json
import os
T, D = os.environ["T"], os.environ["D"]
with Model(T, LoadOptions(n_ctx=4096, n_threads=2)) as t, Model(D, LoadOptions(n_ctx=4096, n_threads=2)) as d:
    prompt = t.tokenize("<|im_start|>user\nWhich city is the capital of Canada? Answer in one sentence.<|im_end|>\n<|im_start|>assistant\n", add_special=False, parse_special=True)
    plain, auto = Config("target", "none", 0), Config("draft-auto", "model", 4, adaptive=True)
    plan = Plan((plain, auto), 64, 1, 0, SamplingParams())
    times = {"target": [], "draft-auto": []}
    for i in range(8):
        order = (plain, auto) if i % 2 == 0 else (auto, plain)
        for c in order:
            s = run_once(t, d, prompt, c, plan)[0]
            times[c.name].append(s.verify_s / s.rounds)
    for k, v in times.items(): print(k, f"median {statistics.median(v)*1000:.1f} ms/pass", [round(x*1000,1) for x in v], s.rounds)
