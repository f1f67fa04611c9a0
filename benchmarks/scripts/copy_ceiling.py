"""How fast could any copy drafter make a reply on this machine? An oracle bound.

For each JSON-schema prompt of a bench file: the target alone's greedy reply under the schema's
grammar (specgen's loop, -k 0), then the best schedule of rounds an oracle copier could run over
it. A round at output position i drafts d tokens, which must be the next d tokens of the reply
and must occur, in that order, somewhere in what was written before (the prompt, the reply so far,
and the schema's example document that auto copies the first record's keys from); the target
keeps them all and adds one. Its cost is the calibrated pass over d + 1 tokens (steady, plus the
switch cost where the size changes: charged on every drafted round, an upper bound on what the
oracle saves). Dynamic programming over positions finds the cheapest schedule; the ceiling is the
reply's plain time over it. No drafter that copies contiguous text written before can beat it:
it knows which copy holds and for how long.

    python benchmarks/scripts/copy_ceiling.py TARGET.gguf PROMPTS.jsonl [--costs BENCH.json]

--costs: another machine's step costs, as `specgen bench --json` writes them (`step_costs`:
seconds by batch size, `switch`), priced instead of this machine's (the replies are this
machine's: greedy text does not depend on the machine, near-ties apart). Results:
benchmarks/results/2026-11-27-copy-ceiling/ and the final checks 12-14.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from pathlib import Path

from specgen.llama.library import llama

llama()  # llama.cpp before numpy (benchmarks/results/2026-11-26-h100-2)

from specgen.decoding.costs import StepCosts  # noqa: E402
from specgen.decoding.events import Round  # noqa: E402
from specgen.decoding.loop import GenerationConfig, generate  # noqa: E402
from specgen.llama.calibrate import calibrate  # noqa: E402
from specgen.llama.grammar import Grammar, schema_example, schema_grammar  # noqa: E402
from specgen.llama.model import LoadOptions, Model  # noqa: E402
from specgen.llama.pair import encode_prompt  # noqa: E402

LONGEST = 63  # a copy verified in one pass of at most 64 tokens, as auto's


def longest_matches(context: list[int], reply: list[int]) -> list[int]:
    """For each position i of the reply, the most tokens from i on that occur contiguously in
    context + reply[:i] (quadratic; replies here are a few hundred tokens)."""
    out = []
    for i in range(len(reply)):
        written, best = context + reply[:i], 0
        for start in range(len(written)):
            n = 0
            limit = min(LONGEST, len(reply) - i, len(written) - start)
            while n < limit and written[start + n] == reply[i + n]:
                n += 1
            best = max(best, n)
        out.append(best)
    return out


def cheapest(matches: list[int], cost: Callable[[int], float]) -> float:
    """Seconds of the oracle's best schedule: best[i] = min over d <= matches[i] of cost(d + 1) + best[i + d + 1]."""
    n = len(matches)
    best = [0.0] * (n + 1)
    for i in range(n - 1, -1, -1):
        best[i] = min(cost(d + 1) + best[min(i + d + 1, n)] for d in range(min(matches[i], n - i - 1) + 1))
    return best[0]


def steady_costs(target: Model, times: int) -> StepCosts:
    """This machine's costs: the median of `times` calibrations, size by size (one calibration
    on a shared 2-vCPU VM read a 16-token pass at 249 ms in one run and 328 ms in another)."""
    runs = [calibrate(target) for _ in range(times)]
    verify = {n: statistics.median(run.verify[n] for run in runs) for n in runs[0].verify}
    return StepCosts(verify, {}, statistics.median(run.switch for run in runs))


def bench_costs(path: Path) -> StepCosts:
    """The step costs a `specgen bench --json` document measured."""
    other = json.loads(path.read_text())["step_costs"]
    return StepCosts({int(n): s for n, s in other["verify"].items()}, {}, other["switch"])


def ceiling_line(target: Model, record: dict, costs: StepCosts, max_tokens: int) -> str:
    """One prompt's reply, and the oracle copier's speedup over plain decoding on it."""
    schema = record["json_schema"]
    tokens = encode_prompt(target, record["prompt"], False)
    with Grammar(target, schema_grammar(schema)) as grammar:
        reply = [
            t
            for event in generate(target, None, tokens, GenerationConfig(max_tokens, 0), grammar)
            if isinstance(event, Round)
            for t in event.tokens
        ]
    example = target.tokenize(schema_example(schema), add_special=False, parse_special=False)
    matches = longest_matches(tokens + example, reply)

    def cost(size: int) -> float:
        return costs.verify_cost(size) + (costs.switch if size > 1 else 0.0)

    plain = len(reply) * costs.verify_cost(1)
    copyable = sum(1 for m in matches if m > 0)
    passes = ", ".join(f"{costs.verify_cost(n) * 1000:.1f}" for n in (1, 4, 16, 64))
    return (
        f"{record['name']:18s} {len(reply):4d} tokens, {copyable / len(reply):4.0%} start a copy; "
        f"oracle copier {plain / cheapest(matches, cost):.2f}x plain decoding here "
        f"(pass ms 1/4/16/64: {passes}, switch {costs.switch * 1000:.1f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", type=Path, help="the target model's GGUF file")
    parser.add_argument("prompts", type=Path, help="JSONL prompts, each with name, prompt and json_schema")
    parser.add_argument("--costs", type=Path, help="price with the step costs of this `specgen bench --json` file")
    parser.add_argument("--calibrations", type=int, default=5, help="calibrations whose median prices (default 5)")
    parser.add_argument("-n", "--max-tokens", type=int, default=256, help="most tokens of a reply (default 256)")
    parser.add_argument("-t", "--threads", type=int, default=2, help="CPU threads (default 2)")
    args = parser.parse_args()
    with Model(str(args.target), LoadOptions(n_threads=args.threads)) as target:
        target.sync(target.encode_chat([("user", "hello")]))
        costs = bench_costs(args.costs) if args.costs else steady_costs(target, args.calibrations)
        for line in args.prompts.read_text().splitlines():
            if line.strip():
                print(ceiling_line(target, json.loads(line), costs, args.max_tokens), flush=True)


if __name__ == "__main__":
    main()
