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

    python ceiling.py TARGET.gguf PROMPTS.jsonl [COSTS.json]

COSTS.json: another machine's step costs, as `specgen bench --json` writes them (`step_costs`:
seconds by batch size, `switch`), priced instead of this machine's (the replies are this
machine's: greedy text does not depend on the machine, near-ties apart).
"""
import json
import statistics
import sys
from pathlib import Path

from specgen.llama.library import llama

llama()  # llama.cpp before numpy (h100-2)

from specgen.decoding.costs import StepCosts  # noqa: E402
from specgen.decoding.loop import GenerationConfig, generate  # noqa: E402
from specgen.decoding.events import Round  # noqa: E402
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
            while n < LONGEST and i + n < len(reply) and start + n < len(written) and written[start + n] == reply[i + n]:
                n += 1
            best = max(best, n)
        out.append(best)
    return out


def cheapest(matches: list[int], cost) -> float:
    """Seconds of the oracle's best schedule: best[i] = min over d <= matches[i] of cost(d + 1) + best[i + d + 1]."""
    n = len(matches)
    best = [0.0] * (n + 1)
    for i in range(n - 1, -1, -1):
        best[i] = min(cost(d + 1) + best[min(i + d + 1, n)] for d in range(0, min(matches[i], n - i - 1) + 1))
    return best[0]


def steady_costs(target, times: int = 5) -> StepCosts:
    """This machine's costs: the median of `times` calibrations, size by size (one calibration
    on a shared 2-vCPU VM read a 16-token pass at 249 ms in one run and 328 ms in another)."""
    runs = [calibrate(target) for _ in range(times)]
    verify = {n: statistics.median(run.verify[n] for run in runs) for n in runs[0].verify}
    return StepCosts(verify, {}, statistics.median(run.switch for run in runs))


def main() -> None:
    target_path, prompts = sys.argv[1], Path(sys.argv[2])
    with Model(target_path, LoadOptions(n_threads=2)) as target:
        target.sync(target.encode_chat([("user", "hello")]))
        if len(sys.argv) > 3:
            other = json.loads(Path(sys.argv[3]).read_text())["step_costs"]
            costs = StepCosts({int(n): s for n, s in other["verify"].items()}, {}, other["switch"])
        else:
            costs = steady_costs(target)
        def cost(size: int) -> float:
            return costs.verify_cost(size) + (costs.switch if size > 1 else 0.0)
        for line in prompts.read_text().splitlines():
            record = json.loads(line)
            schema = record["json_schema"]
            tokens = encode_prompt(target, record["prompt"], False)
            with Grammar(target, schema_grammar(schema)) as grammar:
                reply = [t for event in generate(target, None, tokens, GenerationConfig(256, 0), grammar)
                         if isinstance(event, Round) for t in event.tokens]
            example = target.tokenize(schema_example(schema), add_special=False, parse_special=False)
            matches = longest_matches(tokens + example, reply)
            plain = len(reply) * costs.verify_cost(1)
            oracle = cheapest(matches, cost)
            copyable = sum(1 for m in matches if m > 0)
            print(f"{record['name']:18s} {len(reply):4d} tokens, {copyable / len(reply):4.0%} start a copy; "
                  f"oracle copier {plain / oracle:.2f}x plain decoding here "
                  f"(pass ms 1/4/16/64: {', '.join(f'{costs.verify_cost(n) * 1000:.1f}' for n in (1, 4, 16, 64))}, switch {costs.switch * 1000:.1f})",
                  flush=True)


if __name__ == "__main__":
    main()
