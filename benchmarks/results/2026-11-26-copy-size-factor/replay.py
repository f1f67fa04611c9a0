"""Auto replayed over recorded greedy outputs (default: the 13 JSON-schema replies of
2026-11-26-schema-example) where the policy believes one cost curve and the passes cost another,
each round's time reported to the policy as the loop reports it. CAL: the curve bench had
calibrated on this host (the fastest isolated passes); LIVE: passes.txt's medians for 1-8
tokens, and for 12-64 tokens values assumed, not measured (scaled up as the 8-token pass was).
Run at this commit and at 0eca9e3 from the repository root (replay.txt holds both):

    python benchmarks/results/2026-11-26-copy-size-factor/replay.py [OUTPUTS.json]
"""
import json, sys
from pathlib import Path
sys.path.insert(0, "tests")
from copyreplay import qwen_vocabulary, RecordedTarget, geometric_mean
from specgen.decoding.auto import AutoDrafter
from specgen.decoding.costs import StepCosts
from specgen.decoding.policy import Policy
from specgen.decoding.loop import GenerationConfig, generate
CAL = {1: .0636, 2: .0934, 3: .1206, 4: .1254, 6: .2068, 8: .3403, 12: .3939, 16: .3899, 24: .6633, 32: .7113, 64: 1.333}
LIVE = {1: .0623, 2: .1029, 3: .1398, 4: .1853, 5: .222, 8: .4611, 12: .55, 16: .60, 24: .9, 32: 1.05, 64: 2.0}
outputs = json.loads(Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/2026-11-26-schema-example/json-outputs.json").read_text())["outputs"]
v = qwen_vocabulary(Path.home()/".cache/specgen-models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
for believed_name, believed, true, timed in (("cal->live timed", CAL, LIVE, True), ("live->live timed", LIVE, LIVE, True), ("cal->cal timed", CAL, CAL, True)):
    sp = []
    for name, r in outputs.items():
        tc = StepCosts(true, {}); bc = StepCosts(believed, {})
        target = RecordedTarget(r["prompt"], r["output"], tc)
        d = AutoDrafter(None, Policy(bc, 8, timed=timed), vocabulary=v, quoted=r.get("quoted", "example" in r), example=r.get("example", ""))
        orig = d.observe
        d.observe = lambda draft, emitted, seconds, orig=orig, tc=tc: orig(draft, emitted, tc.verify_cost(len(draft.tokens) + 1))
        list(generate(target, d, r["prompt"], GenerationConfig(max_tokens=len(r["output"]), draft_tokens=8)))
        sp.append(len(r["output"]) * tc.verify_cost(1) / target.seconds)
    print(believed_name, round(geometric_mean(sp), 3), [round(x, 2) for x in sp])
