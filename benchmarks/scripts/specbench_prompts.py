"""Pick prompts from Spec-Bench (Xia et al. 2024, github.com/hemingkx/Spec-Bench) for `specgen bench`.

Spec-Bench's question.jsonl holds 80 prompts of each everyday kind a speculative decoder meets:
multi-turn chat (MT-bench), translation, summarization, question answering, math reasoning and
retrieval-augmented generation. This script draws a fixed, disjoint sample per kind: a `dev`
split for development and a `heldout` split that is only measured, never tuned on. The draw is
by a hash of each question's id and the split's salt, so it is the same on every machine and
does not depend on the file's order.

    python benchmarks/scripts/specbench_prompts.py question.jsonl OUT_DIR [--per-kind 5]

writes OUT_DIR/dev/<kind>.jsonl and OUT_DIR/heldout/<kind>.jsonl, one prompt per line in the
format `specgen bench` reads ({"name", "kind", "prompt"}). A multi-turn question's later turns
ride along under "next_turns": they need the model's own first reply (see record_outputs.py).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

KINDS = {  # Spec-Bench category -> our kind
    "translation": "translation",
    "summarization": "summarization",
    "qa": "qa",
    "math_reasoning": "math",
    "rag": "rag",
}
MT_BENCH = {"writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities"}


def _rank(question_id: int) -> str:
    return hashlib.sha256(f"specgen-spec-bench-{question_id}".encode()).hexdigest()


def _record(kind: str, row: dict) -> dict:
    """One bench prompt; a multi-turn question keeps its later turns under "next_turns"
    (bench reads only the first; `record_outputs.py` plays the rest against the model's replies)."""
    record = {"name": f"{kind}-{row['question_id']}", "kind": kind, "prompt": row["turns"][0]}
    if len(row["turns"]) > 1:
        record["next_turns"] = row["turns"][1:]
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("questions", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--per-kind", type=int, default=5)
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    by_kind: dict[str, list[dict]] = {}
    for row in rows:
        kind = "chat" if row["category"] in MT_BENCH else KINDS[row["category"]]
        by_kind.setdefault(kind, []).append(row)
    n = args.per_kind
    for kind, items in sorted(by_kind.items()):
        items.sort(key=lambda r: _rank(r["question_id"]))
        for split, chosen in (("dev", items[:n]), ("heldout", items[n : 2 * n])):
            folder = args.out / split
            folder.mkdir(parents=True, exist_ok=True)
            lines = [json.dumps(_record(kind, r), ensure_ascii=False) for r in chosen]
            (folder / f"{kind}.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
