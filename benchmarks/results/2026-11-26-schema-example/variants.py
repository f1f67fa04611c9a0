"""The example document's variants replayed on the same outputs and curves as replay.py; run from
the repository root: python benchmarks/results/2026-11-26-schema-example/variants.py QWEN-0.5B.gguf
"""
import json, sys
sys.path.insert(0, "tests")
from pathlib import Path
from copyreplay import CURVES, geometric_mean, qwen_vocabulary, replay
from specgen.llama import grammar as S
CURVES = {**CURVES, "epyc-2611c": {1: .065, 2: .108, 4: .126, 8: .322, 16: .527, 32: 1.232, 64: 2.505}}
vocabulary = qwen_vocabulary(Path(sys.argv[1]))
outputs = json.loads(Path("benchmarks/results/2026-11-26-schema-example/json-outputs.json").read_text())["outputs"]
schemas = {}
for path in Path("benchmarks/prompts/dev/structured").glob("*.jsonl"):
    for line in path.read_text().splitlines():
        p = json.loads(line)
        if "json_schema" in p: schemas[p["name"]] = p["json_schema"]
def one_element(schema):
    ex = S._example(schema, schema, 0, [500])
    def trim(v):
        if isinstance(v, dict): return {k: trim(x) for k, x in v.items()}
        if isinstance(v, list): return [trim(x) for x in v[:1]]
        return v
    ex = trim(ex)
    return S._written(ex, "") + "\n" + S._written(ex, " ")
def compact_only(schema):
    return S.schema_example(schema).split("\n")[0]
for label, make in (("two elements, both spacings", S.schema_example), ("one element, both", one_element), ("two elements, compact only", compact_only)):
    cells = []
    for curve in ("epyc-2611c", "epyc-2611", "xeon-vm-2611", "xeon-vm", "gpu-sim"):
        sp = [replay(n, r["kind"], r["prompt"], r["output"], CURVES[curve], vocabulary, quoted=True, example=make(schemas[n])).speedup for n, r in outputs.items()]
        cells.append(f"{curve} {geometric_mean(sp):.3f}")
    print(f"{label:30s}", " | ".join(cells), flush=True)
