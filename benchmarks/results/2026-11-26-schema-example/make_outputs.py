"""The recorded JSON-schema outputs this folder replays, in one file, each with the example
document auto is now given (`grammar.schema_example` of its prompt's schema); run from the
repository root:

    python benchmarks/results/2026-11-26-schema-example/make_outputs.py \
        benchmarks/results/2026-11-26-hindsight/json-tools-outputs.json more-outputs.json \
        > benchmarks/results/2026-11-26-schema-example/json-outputs.json
"""

import json
import sys
from pathlib import Path

from specgen.llama.grammar import schema_example

schemas = {}
for path in Path("benchmarks/prompts/dev/structured").glob("*.jsonl"):
    for line in path.read_text().splitlines():
        prompt = json.loads(line)
        if "json_schema" in prompt:
            schemas[prompt["name"]] = prompt["json_schema"]
outputs = {}
for recording in sys.argv[1:]:
    for name, record in json.loads(Path(recording).read_text())["outputs"].items():
        if name in schemas:
            outputs[name] = {**record, "example": schema_example(schemas[name])}
about = ("Greedy outputs of qwen2.5-coder-1.5b-instruct-q4_k_m.gguf under their schemas' grammars (2 threads, "
         "at most 512 tokens): json-staff, json-stock and json-log from the hindsight folder's recording, the ten "
         "of benchmarks/prompts/dev/structured/json-more.jsonl recorded for this folder; each with its example.")
print(json.dumps({"about": about, "outputs": outputs}, ensure_ascii=False))
