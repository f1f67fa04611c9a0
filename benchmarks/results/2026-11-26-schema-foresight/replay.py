"""Auto's replay of the 13 recorded JSON-schema outputs of 2026-11-26-schema-example with the
schema's example, at this commit (the reply foreseen as long as the example's compact spelling),
on the five curves of that folder's replay; its replay.txt, "with the example", holds the same at
a165e1d. Run from the repository root:

    python benchmarks/results/2026-11-26-schema-foresight/replay.py QWEN-0.5B.gguf
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, "tests")
from copyreplay import CURVES, geometric_mean, qwen_vocabulary, replay  # noqa: E402

# the isolated passes `specgen bench` measured in 2026-11-26-schema-example's live run
CURVES = {**CURVES, "epyc-2611c": {1: .065, 2: .108, 4: .126, 8: .322, 16: .527, 32: 1.232, 64: 2.505}}
OUTPUTS = Path("benchmarks/results/2026-11-26-schema-example/json-outputs.json")

vocabulary = qwen_vocabulary(Path(sys.argv[1]))
outputs = json.loads(OUTPUTS.read_text())["outputs"]
for curve in ("epyc-2611c", "epyc-2611", "xeon-vm-2611", "xeon-vm", "gpu-sim"):
    speedups = []
    for name, record in outputs.items():
        speedups.append(replay(name, record["kind"], record["prompt"], record["output"], CURVES[curve], vocabulary,
                               quoted=True, example=record["example"]).speedup)
        print(f"{curve:12s} {name:16s} {speedups[-1]:.3f}", flush=True)
    print(f"{curve:12s} {'geometric mean':16s} {geometric_mean(speedups):.3f}  ({len(speedups)} outputs)", flush=True)
