"""The second call's benches side by side (`python3 combine.py FOLDER_OF_JSON`): for each bench,
auto against the target alone over all its prompts, and for each config and prompt its tokens,
rounds, drafted and kept tokens, ms a round and the grammar's share of the decode time."""
import json
import sys
from pathlib import Path

for path in sorted(Path(sys.argv[1]).glob("*-[12].json")):
    data = json.loads(path.read_text())
    overall = {r["config"]: r for r in data["results"] if r["group"] == "overall"}
    auto = next(r for c, r in overall.items() if c != "target")
    low, high = auto["speedup_interval"]["low"], auto["speedup_interval"]["high"]
    costs = data["step_costs"]
    sizes = ", ".join(f"{n}: {costs['verify'][n] * 1000:.2f}" for n in ("1", "2", "4", "8"))
    print(f"{path.stem}: auto ÷ target {auto['speedup']:.2f}× ({low:.2f}–{high:.2f}); "
          f"pass ms {sizes}, switch {costs.get('switch', 0) * 1000:.2f}")
    for r in data["results"]:
        if r["group"] == "prompt":
            print(f"    {r['key']:13s} {r['config']:12s} {r['tokens_per_second']['median']:6.1f} tok/s  "
                  f"{r['tokens']} tokens in {r['rounds']} rounds, {r['drafted']} drafted, {r['accepted']} kept, "
                  f"{1000 * r['decode_s'] / r['rounds']:.2f} ms a round, grammar {r['constraint_s'] / r['decode_s']:.0%}")
