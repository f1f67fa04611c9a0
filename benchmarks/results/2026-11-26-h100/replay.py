"""Auto's replay of the 13 recorded JSON-schema outputs (2026-11-26-schema-example) on the H100's
verify curve that llama-bench measured here (llama-bench-run1.md, the 1.5B stand-in, all layers on
the GPU), with 0, 0.5, 1 and 2 ms added to every pass for the Python work of a round, which this
folder could not measure (specgen's model load crashed on that machine: README.md). Run from the
repository root:

    python benchmarks/results/2026-11-26-h100/replay.py QWEN-0.5B.gguf
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, "tests")
from copyreplay import CURVES, geometric_mean, qwen_vocabulary, replay  # noqa: E402

# seconds of a pass by batch size: 1 / (llama-bench's pp<n> tokens per second) x n, run 1
TPS = {1: 400.40, 2: 742.06, 3: 1050.78, 4: 1172.35, 6: 1735.90, 8: 2160.28, 12: 2622.43, 16: 3161.52,
       24: 4176.31, 32: 5319.20, 48: 7208.72, 64: 8610.35}
H100 = {n: n / tps for n, tps in TPS.items()}
OUTPUTS = Path("benchmarks/results/2026-11-26-schema-example/json-outputs.json")

vocabulary = qwen_vocabulary(Path(sys.argv[1]))
outputs = json.loads(OUTPUTS.read_text())["outputs"]
print("curve (ms):", " ".join(f"{n}: {1000 * s:.2f}" for n, s in H100.items()))
for label, curve in [("gpu-sim", CURVES["gpu-sim"])] + [
        (f"h100+{ms:g}ms", {n: s + ms / 1000 for n, s in H100.items()}) for ms in (0, 0.5, 1, 2)]:
    speedups = []
    for name, record in outputs.items():
        speedups.append(replay(name, record["kind"], record["prompt"], record["output"], curve, vocabulary,
                               quoted=True, example=record["example"]).speedup)
        print(f"{label:12s} {name:16s} {speedups[-1]:.3f}", flush=True)
    print(f"{label:12s} {'geometric mean':16s} {geometric_mean(speedups):.3f}  "
          f"(min {min(speedups):.3f}, max {max(speedups):.3f}, {len(speedups)} outputs)", flush=True)
