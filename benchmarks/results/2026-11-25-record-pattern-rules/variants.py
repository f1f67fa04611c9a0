"""Replay recorded reformats through the real loop and auto policy (tests/copyreplay.py) with the
record pattern's rules switched on and off: the pattern, the core alone (no field place), and
copies alone (no pattern). At commit ebbd530 this script also replayed the rules that were dropped
after this measurement (VARIANTS there: each rule off in the full pattern, each alone on the core).

    python variants.py --vocab QWEN.gguf --out replays.json [--curves xeon-vm,epyc] FILE.json ...

FILE.json: recorded greedy outputs (token ids, as tests/copyreplay.py reads them); only the
reformats among them (kind containing "reformat", "yaml-toml", or a name of docs/prompts/patterns
or docs/prompts/closing's md-dict) are replayed. A file named reformat-texts.json holds text,
replayed one character a token as tests/decoding/test_copy_replay.py does. Prints one line per
prompt and variant; writes every speedup to --out.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests"))

from copyreplay import CURVES, qwen_vocabulary, replay  # noqa: E402

from specgen.decoding import auto  # noqa: E402
from specgen.decoding.drafters.base import Vocabulary  # noqa: E402
from specgen.decoding.drafters.pattern import RecordPattern, field_place  # noqa: E402

VARIANTS = {"pattern": field_place, "core": None}  # the rule that places a value in its line
CHARACTERS = Vocabulary(lambda token: chr(token).encode(), lambda text: [ord(c) for c in text])
SEEN = ("city-table", "env-yaml", "log-table", "sql-csv", "team-json", "md-dict")


def is_reformat(name: str, kind: str) -> bool:
    return "reformat" in kind or kind == "final-yaml-toml" or kind in SEEN


def recorded(path: Path) -> list[tuple[str, list[int], list[int], bool]]:
    """(file stem/name, prompt, output, as characters) of every reformat recorded in `path`."""
    outputs = json.loads(path.read_text())["outputs"]
    if path.name == "reformat-texts.json":
        return [(f"{path.stem}/{name}", [ord(c) for c in r["prompt"]], [ord(c) for c in r["output"]], True)
                for name, r in outputs.items()]
    return [(f"{path.stem}/{name}", r["prompt"], r["output"], False) for name, r in outputs.items()
            if is_reformat(name, r["kind"])]


def speedup(prompt: list[int], output: list[int], curve: str, vocabulary: Vocabulary | None, place) -> float:
    """Auto's speedup over plain decoding in the replay, the record pattern placing values by `place`."""
    auto.RecordPattern = partial(RecordPattern, place=place)
    result = replay("", "reformat", prompt, output, CURVES[curve], vocabulary)
    assert result.emitted[: len(output)] == (output if vocabulary else result.emitted), "not the recorded text"
    return result.speedup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--curves", default="xeon-vm")
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()
    qwen = qwen_vocabulary(args.vocab)
    results: dict[str, dict] = {}
    for path in args.files:
        for name, prompt, output, characters in recorded(path):
            vocabulary = CHARACTERS if characters else qwen
            row = results.setdefault(name, {"file": str(path), "tokens": len(output), "speedup": {}})
            for curve in args.curves.split(","):
                speeds = {"copies only": speedup(prompt, output, curve, None, None)}
                speeds |= {label: speedup(prompt, output, curve, vocabulary, variant)
                           for label, variant in VARIANTS.items()}
                row["speedup"][curve] = {label: round(value, 4) for label, value in speeds.items()}
                print(f"{curve:8s} {name:44s} " + " ".join(f"{label}={value:.2f}" for label, value in speeds.items()),
                      flush=True)
    args.out.write_text(json.dumps({"variants": ["copies only", *VARIANTS], "replays": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
