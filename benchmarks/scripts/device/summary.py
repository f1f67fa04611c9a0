"""The table mission7b.sh prints at the end of its call, from what the call wrote into its OUT folder.

    python summary.py OUT

Per configuration: decode tokens/s, the speedup over specgen's target alone, the share of drafted
tokens kept, tokens a round; per round, milliseconds in Python, in the draft model and in the
target's passes, summed over the measured runs of `specgen bench --json` (its `python_s`,
`draft_s`, `verify_s` and `rounds`), and the Python's share of one isolated one-token target pass
(its calibration; since 09d03cb the Python of a round in which the draft model drafted is
counted too, as it is in the draft's milliseconds; before, only there); and whether
the text was the target alone's: for specgen's rows, its exactness
audit (runs against its own target alone's first run); for the llama-server row, the bench's
`endpoints` count; for llama-speculative-simple, its printed text against `texts.json` (specgen's
target alone, record_outputs.py). Then llama-bench's pass costs and issue 48's targets, met or not.
Standard library only; a part whose file is missing is left out with a line saying so.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

SIMPLE = re.compile(
    r"^draft-max (\S+) \| (\S+) \| decoded +(\d+) tokens in +([\d.]+) seconds, speed: +[\d.]+ "
    r"\| n_draft += (\d+) \| accept += ([\d.]+)%"
)
COLUMNS = "run, config, tok/s, ÷ target, kept, tokens/round, Python ms, draft ms, target ms, Python ÷ pass, text"


def per_round(bench: dict, config: str) -> tuple[float, float, float] | None:
    """Milliseconds a round in Python, drafting and the target's passes, over the config's runs."""
    runs = [r for r in bench["runs"] if r["config"] == config]
    rounds = sum(r["rounds"] for r in runs)
    if not rounds:
        return None
    return tuple(1000 * sum(r[field] for r in runs) / rounds for field in ("python_s", "draft_s", "verify_s"))


def text_verdict(bench: dict, config: str) -> str:
    """Whether the config's runs wrote the target alone's tokens (the audit; the endpoint's count)."""
    for endpoint in bench.get("endpoints") or []:
        if endpoint["config"] == config:
            return f"{endpoint['same_text']}/{endpoint['runs']} runs the target's"
    checks = [c for c in (bench.get("audit") or {}).get("checks", []) if c["config"] == config]
    if not checks:
        return "not audited"
    diverged = sum(c["diverged"] for c in checks)
    runs = sum(c["runs"] for c in checks)
    if not diverged:
        return f"identical ({runs} runs)"
    ties = sum(1 for c in checks if c["diverged"] and c["first"] and c["first"]["near_tie"])
    return f"differs in {diverged}/{runs} runs ({ties} of {sum(1 for c in checks if c['diverged'])} at near-ties)"


def bench_rows(name: str, bench: dict) -> tuple[list[str], dict[str, float]]:
    """The table's rows of one bench, and each config's median tokens/s."""
    overall = {r["config"]: r for r in bench["results"] if r["group"] == "overall"}
    step = ((bench.get("step_costs") or {}).get("verify") or {}).get("1")
    lines, rates = [], {}
    for config in (c["name"] for c in bench["configs"]):
        result = overall[config]
        rate = result["tokens_per_second"]["median"]
        rates[config] = rate
        costs = per_round(bench, config) if result["drafter"] != "endpoint" else None  # timed from outside
        ms = [f"{v:.2f}" for v in costs] if costs else ["-"] * 3
        share = f"{costs[0] / (1000 * step):.1%}" if costs and step else "-"
        speedup = f"{result['speedup']:.2f}×" if result["speedup"] is not None else "-"
        kept = f"{result['acceptance_rate']:.0%}" if result["drafted"] else "-"
        cells = [name, config, f"{rate:.1f}", speedup, kept, f"{result['tokens_per_round']:.2f}", *ms, share]
        lines.append("| " + " | ".join([*cells, text_verdict(bench, config)]) + " |")
    return lines, rates


def generated(out: str, prompt: str) -> str:
    """llama-speculative-simple's stdout less the prompt it echoes first and the blank lines around."""
    text = out[2:] if out.startswith("\n\n") else out
    start = text.find(prompt)
    if start >= 0:
        text = text[start + len(prompt) :]
    return text[:-2] if text.endswith("\n\n") else text


def simple_rows(folder: Path, baseline: float | None) -> tuple[list[str], dict[str, float]]:
    """One row per draft length of llama-speculative-simple, its prompts' tokens over their seconds,
    its texts against the target alone's (the shorter a prefix of the longer: it may run a few
    tokens past -n)."""
    texts_file = folder / "texts.json"
    recorded = json.loads(texts_file.read_text())["outputs"] if texts_file.exists() else {}
    texts = {name: output["text"] for name, output in recorded.items()}
    found: dict[str, list[tuple[str, int, float, float]]] = {}
    for line in (folder / "spec-simple.txt").read_text().splitlines():
        if match := SIMPLE.match(line):
            length, prompt, tokens, seconds, n_draft, accept = match.groups()
            label = f"{length} ({n_draft})" if length == "default" else length
            found.setdefault(label, []).append((prompt, int(tokens), float(seconds), float(accept)))
    lines, rates = [], {}
    for label, runs in found.items():
        rate = sum(r[1] for r in runs) / sum(r[2] for r in runs)
        rates[label] = rate
        same = 0
        for prompt, *_ in runs:
            out = folder / "spec-simple" / f"{prompt}-{label.split()[0]}.out"
            asked = folder / "spec-simple" / f"{prompt}.txt"
            if prompt in texts and out.exists() and asked.exists():
                theirs = generated(out.read_text(errors="replace"), asked.read_text())
                cut = min(len(texts[prompt]), len(theirs))
                same += texts[prompt][:cut] == theirs[:cut]
        speedup = f"{rate / baseline:.2f}×" if baseline else "-"
        accept = sum(r[3] for r in runs) / len(runs)
        cells = ["llama.cpp", f"spec-simple -md S, draft {label}", f"{rate:.1f}", speedup, f"{accept:.0f}%"]
        lines.append("| " + " | ".join([*cells, "-", "-", "-", "-", "-", f"{same}/{len(runs)} the target's"]) + " |")
    return lines, rates


def curve(path: Path) -> list[str]:
    """llama-bench's milliseconds a pass by batch size, and its decoding rate, per model."""
    records = json.loads(path.read_text())
    models: dict[str, dict[int, str]] = {}
    for r in records:  # a pass of n tokens: n_prompt = n; decoding: n_gen, keyed 0
        value = f"{r['avg_ns'] / 1e6:.2f}" if r["n_prompt"] else f"{r['avg_ts']:.1f} ({1000 / r['avg_ts']:.2f} ms)"
        models.setdefault(Path(r["model_filename"]).stem, {})[r["n_prompt"]] = value
    sizes = sorted({n for m in models.values() for n in m if n})
    lines = ["| model | " + " | ".join(f"{n} ms" for n in sizes) + " | decoding tok/s (ms a token) |"]
    lines += ["|" + " --- |" * (len(sizes) + 2)]
    lines += [f"| {name} | " + " | ".join(m.get(n, "-") for n in [*sizes, 0]) + " |" for name, m in models.items()]
    return lines


def main() -> None:
    folder = Path(sys.argv[1])
    print("specgen bench (per round: ms summed over the measured runs ÷ their rounds) and llama.cpp, greedy")
    print("(Python ms: a round's time outside the models' passes, auto's weighing of drafts included, which")
    print("draft ms holds too; a bench before 09d03cb counted it in draft ms only)\n")
    print("| " + " | ".join(COLUMNS.split(", ")) + " |")
    print("|" + " --- |" * len(COLUMNS.split(", ")))
    benches: dict[str, dict[str, float]] = {}
    for name in ("S", "N"):
        path = folder / f"bench-{name}.json"
        if not path.exists():
            print(f"| {name} | (no bench-{name}.json: not run) |")
            continue
        lines, benches[name] = bench_rows(name, json.loads(path.read_text()))
        print("\n".join(lines))
    simple: dict[str, float] = {}
    if (folder / "spec-simple.txt").exists():
        lines, simple = simple_rows(folder, benches.get("S", {}).get("target"))
        print("\n".join(lines))
    else:
        print("| llama.cpp | (no spec-simple.txt: llama-speculative-simple not run) |")
    if (folder / "llama-bench.json").exists():
        print("\nllama-bench: ms a pass of n tokens (the verify curve), and decoding alone\n")
        print("\n".join(curve(folder / "llama-bench.json")))
    else:
        print("\n(no llama-bench.json: llama-bench not run)")
    print("\nissue 48's targets")
    targets(benches, simple)


def targets(benches: dict[str, dict[str, float]], simple: dict[str, float]) -> None:
    with_s, with_n = benches.get("S", {}), benches.get("N", {})
    ours = {k: v for k, v in with_s.items() if k.startswith("draft-")}
    if ours and simple:
        best = max(ours, key=ours.__getitem__)
        theirs = max(simple, key=simple.__getitem__)
        ratio = ours[best] / simple[theirs]
        print(f"- specgen's best with S ({best}) ÷ llama-speculative-simple's best ({theirs}): {ratio:.2f}×", end="")
        print(" (target 0.95×)")
    fixed = {k: v for k, v in ours.items() if k != "draft-auto"}
    if "draft-auto" in ours and fixed:
        best = max(fixed, key=fixed.__getitem__)
        print(f"- auto with S ÷ best fixed K ({best}): {ours['draft-auto'] / fixed[best]:.2f}× (target 1.00×)")
    if "draft-auto" in with_n and with_n.get("target"):
        print(f"- auto with N ÷ the target alone: {with_n['draft-auto'] / with_n['target']:.2f}× (target 0.99×)")


if __name__ == "__main__":
    main()
