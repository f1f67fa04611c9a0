"""specgen's auto against the best of llama.cpp's draft-free methods, per prompt and per kind.

    python benchmarks/scripts/llama-cpp/compare.py [--per-kind] DRAFT_FREE.txt [MORE.txt ...] BENCH.json

DRAFT_FREE.txt: the lines `draft_free.sh` printed (a later file's line for the same prompt and
method replaces an earlier one: a re-run). BENCH.json: `specgen bench --json` on the same
prompts. Both count decode time after the prompt. Where a line says `stop eog` the reply ended
at the end-of-generation token, which llama.cpp counts as a decoded token and specgen does not
(it is not part of the reply): its rate is taken without it, as specgen counts (on a 12-token
answer llama.cpp's printed speed is 13/12 of that). Lines recorded without the field count as
printed. A prompt's kind is its name up to the last dash (`summarization-248`). A bench name's
colon reads as a dash, as `template_prompts.py` names the files llama.cpp reads (`new:1`, the
name a prompt without one gets, is `new-1` in both).

By default each prompt is set against its fastest method. That is a choice made after the
fact: the fastest of several noisy runs of equal speed is faster than any one of them. With
`--per-kind` each kind has one method, the one with the highest geometric mean over the kind's
prompts, and every line for a prompt and method counts (their geometric mean), so runs before
and after specgen's bracket it in time.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"^(\S+) (\S+) \| decoded +(\d+) tokens in +([\d.]+) seconds, speed: +([\d.]+)(.*\| stop eog)?")


def llama_rates(paths: list[str], every: bool = False) -> dict[str, dict[str, float]]:
    """prompt -> method -> decode tok/s: the last line's, or with `every` the geometric mean of all."""
    runs: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            found = LINE.match(line)
            if found:
                rate = decode_rate(int(found[3]), float(found[4]), float(found[5]), bool(found[6]))
                runs[found[1]][found[2]].append(rate)
    return {
        prompt: {method: geometric_mean(v) if every else v[-1] for method, v in methods.items()}
        for prompt, methods in runs.items()
    }


def decode_rate(decoded: int, seconds: float, printed: float, eog: bool) -> float:
    """tok/s of a llama.cpp line as specgen counts tokens: without the end-of-generation token
    where the reply ended at one (`eog`), else as printed."""
    return (decoded - 1) / seconds if eog and seconds > 0 else printed


def kind_of(prompt: str) -> str:
    return prompt.rsplit("-", 1)[0]


def best_per_kind(llama: dict[str, dict[str, float]]) -> dict[str, str]:
    """prompt -> its kind's method: the highest geometric mean among those run on all its prompts."""
    prompts: dict[str, list[str]] = defaultdict(list)
    for prompt in llama:
        prompts[kind_of(prompt)].append(prompt)
    chosen = {}
    for names in prompts.values():
        common = set.intersection(*(set(llama[name]) for name in names))
        method = max(sorted(common), key=lambda m: geometric_mean([llama[name][m] for name in names]))
        chosen.update(dict.fromkeys(names, method))
    return chosen


def specgen_rates(path: str) -> dict[str, dict[str, float]]:
    """prompt -> config -> decode tok/s (the median over repeats; of an even number, the mean of
    the middle two, as `specgen bench` reports it)."""
    runs: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in json.loads(Path(path).read_text(encoding="utf-8"))["runs"]:
        runs[run["prompt"]][run["config"]].append(run["tokens_per_second"])
    return {
        prompt.replace(":", "-"): {config: statistics.median(v) for config, v in configs.items()}
        for prompt, configs in runs.items()
    }


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def main() -> None:
    args = sys.argv[1:]
    per_kind = "--per-kind" in args
    args = [a for a in args if a != "--per-kind"]
    llama, ours = llama_rates(args[:-1], every=per_kind), specgen_rates(args[-1])
    if not set(llama) & set(ours):
        sys.exit(
            f"compare.py: no prompt is in both (llama.cpp's: {', '.join(sorted(llama)) or 'none'}; specgen's: "
            f"{', '.join(sorted(ours)) or 'none'}); run draft_free.sh on template_prompts.py's files of those prompts"
        )
    chosen = best_per_kind(llama) if per_kind else {p: max(m, key=m.get) for p, m in llama.items()}
    by_kind: dict[str, list[float]] = defaultdict(list)
    which = "its kind's best method" if per_kind else "llama.cpp's best method"
    print(f"| prompt | {which} | its tok/s | specgen plain | specgen auto | auto ÷ llama.cpp |")
    print("| --- | --- | --- | --- | --- | --- |")
    for prompt in sorted(set(llama) & set(ours)):
        method = chosen[prompt]
        best = llama[prompt][method]
        auto = next((rate for config, rate in ours[prompt].items() if config.endswith("-auto")), None)
        plain = ours[prompt].get("target")  # auto: draft-auto, or lookup-auto with --no-draft
        if auto is None:
            continue
        by_kind[kind_of(prompt)].append(auto / best)
        print(f"| {prompt} | {method} | {best:.1f} | {plain:.1f} | {auto:.1f} | {auto / best:.2f}× |")
    print()
    print(f"| kind | auto ÷ {which}, geometric mean | lowest |")
    print("| --- | --- | --- |")
    for kind, ratios in sorted(by_kind.items()):
        print(f"| {kind} | {geometric_mean(ratios):.3f}× | {min(ratios):.2f}× |")
    every = [r for ratios in by_kind.values() for r in ratios]
    print(f"| all {len(every)} | {geometric_mean(every):.3f}× | {min(every):.2f}× |")


if __name__ == "__main__":
    main()
