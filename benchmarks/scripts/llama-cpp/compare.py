"""specgen's auto against the best of llama.cpp's draft-free methods, per prompt and per kind.

    python benchmarks/scripts/llama-cpp/compare.py DRAFT_FREE.txt [MORE.txt ...] BENCH.json

DRAFT_FREE.txt: the lines `draft_free.sh` printed (a later file's line for the same prompt and
method replaces an earlier one: a re-run). BENCH.json: `specgen bench --json` on the same
prompts. Both count decode time after the prompt. A prompt's kind is its name up to the last
dash (`summarization-248`).
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import defaultdict

LINE = re.compile(r"^(\S+) (\S+) \| decoded +(\d+) tokens in +([\d.]+) seconds, speed: +([\d.]+)")


def llama_rates(paths: list[str]) -> dict[str, dict[str, float]]:
    """prompt -> method -> decode tok/s."""
    rates: dict[str, dict[str, float]] = defaultdict(dict)
    for path in paths:
        for line in open(path, encoding="utf-8"):
            found = LINE.match(line)
            if found:
                rates[found[1]][found[2]] = float(found[5])
    return rates


def specgen_rates(path: str) -> dict[str, dict[str, float]]:
    """prompt -> config -> decode tok/s (the median over repeats)."""
    runs: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in json.load(open(path, encoding="utf-8"))["runs"]:
        runs[run["prompt"]][run["config"]].append(run["tokens_per_second"])
    return {prompt: {config: sorted(v)[len(v) // 2] for config, v in configs.items()} for prompt, configs in runs.items()}


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def main() -> None:
    llama, ours = llama_rates(sys.argv[1:-1]), specgen_rates(sys.argv[-1])
    by_kind: dict[str, list[float]] = defaultdict(list)
    print("| prompt | llama.cpp's best method | its tok/s | specgen plain | specgen auto | auto ÷ llama.cpp's best |")
    print("| --- | --- | --- | --- | --- | --- |")
    for prompt in sorted(set(llama) & set(ours)):
        method, best = max(llama[prompt].items(), key=lambda item: item[1])
        auto, plain = ours[prompt].get("draft-auto"), ours[prompt].get("target")
        if auto is None:
            continue
        by_kind[prompt.rsplit("-", 1)[0]].append(auto / best)
        print(f"| {prompt} | {method} | {best:.1f} | {plain:.1f} | {auto:.1f} | {auto / best:.2f}× |")
    print()
    print("| kind | auto ÷ llama.cpp's best, geometric mean | lowest |")
    print("| --- | --- | --- |")
    for kind, ratios in sorted(by_kind.items()):
        print(f"| {kind} | {geometric_mean(ratios):.3f}× | {min(ratios):.2f}× |")
    every = [r for ratios in by_kind.values() for r in ratios]
    print(f"| all {len(every)} | {geometric_mean(every):.3f}× | {min(every):.2f}× |")


if __name__ == "__main__":
    main()
