"""The A/B's lines: each bench's overall auto ÷ plain with its interval, and Python ms a round."""
import json, sys
for name in sys.argv[1:]:
    d = json.load(open(name))
    rows = {r["config"]: r for r in d["results"] if r["group"] == "overall"}
    auto, plain = rows["lookup-auto"], rows["target"]
    iv = auto["speedup_interval"]
    print(f"{name}: auto {auto['tokens_per_second']['median']:.1f} tok/s, plain {plain['tokens_per_second']['median']:.1f}, "
          f"{auto['speedup']:.3f}x ({iv['low']:.2f}-{iv['high']:.2f}); rounds {auto['rounds']} of {auto['tokens']} tokens; "
          f"python ms/round auto {1000*auto['python_s']/auto['rounds']:.3f} plain {1000*plain['python_s']/plain['rounds']:.3f}")
