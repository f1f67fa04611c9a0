"""Auto's replay of the recorded JSON-schema and tool-call outputs on four verify curves, one line
per curve and output; run from the repository root at each commit compared:

    python benchmarks/results/2026-11-26-json-structure/replay.py QWEN-0.5B.gguf \
        benchmarks/results/2026-11-26-hindsight/json-tools-outputs.json
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, "tests")
from copyreplay import CURVES, qwen_vocabulary, replay  # noqa: E402

# the isolated passes `specgen bench` measured at the start of this folder's first run (bench-1.txt)
CURVES = {**CURVES, "epyc-2611b": {1: .066, 2: .111, 4: .178, 8: .583, 16: .729, 32: 1.221, 64: 1.567}}

vocabulary = qwen_vocabulary(Path(sys.argv[1]))
outputs = json.loads(Path(sys.argv[2]).read_text())["outputs"]
for curve in ("epyc-2611b", "epyc-2611", "xeon-vm", "gpu-sim"):
    for name, record in outputs.items():
        result = replay(name, record["kind"], record["prompt"], record["output"], CURVES[curve], vocabulary,
                        quoted=record.get("quoted", False))
        print(f"{curve:11s} {name:18s} {result.speedup:.3f}", flush=True)
