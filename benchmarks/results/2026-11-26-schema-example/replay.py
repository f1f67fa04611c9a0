"""Auto's replay of recorded JSON-schema outputs without and with the schema's example document
(`grammar.schema_example`), on four verify curves: one line per curve and output, then the
geometric means; run from the repository root:

    python benchmarks/results/2026-11-26-schema-example/replay.py QWEN-0.5B.gguf \
        benchmarks/results/2026-11-26-schema-example/json-outputs.json
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, "tests")
from copyreplay import CURVES, geometric_mean, qwen_vocabulary, replay  # noqa: E402

# the isolated passes `specgen bench` measured in this folder's live run (bench-live.txt)
CURVES = {**CURVES, "epyc-2611c": {1: .065, 2: .108, 4: .126, 8: .322, 16: .527, 32: 1.232, 64: 2.505}}

vocabulary = qwen_vocabulary(Path(sys.argv[1]))
outputs = json.loads(Path(sys.argv[2]).read_text())["outputs"]
for curve in ("epyc-2611c", "epyc-2611", "xeon-vm-2611", "xeon-vm", "gpu-sim"):
    pairs = []
    for name, record in outputs.items():
        without, with_example = (replay(name, record["kind"], record["prompt"], record["output"], CURVES[curve],
                                        vocabulary, quoted=True, example=example).speedup
                                 for example in ("", record["example"]))
        pairs.append((without, with_example))
        print(f"{curve:12s} {name:16s} without {without:.3f}  with the example {with_example:.3f}", flush=True)
    print(f"{curve:12s} {'geometric mean':16s} without {geometric_mean([a for a, _ in pairs]):.3f}  "
          f"with the example {geometric_mean([b for _, b in pairs]):.3f}  ({len(pairs)} outputs)", flush=True)
