"""Replay recorded reformats through the real loop and auto policy (tests/copyreplay.py) with the
record pattern's rules switched on and off: the full pattern, the core alone, the full pattern
without each rule, the core with each rule, and copies alone (no pattern).

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
from dataclasses import replace
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests"))

from copyreplay import CURVES, qwen_vocabulary, replay  # noqa: E402

from specgen.decoding.drafters import adaptive  # noqa: E402
from specgen.decoding.drafters.base import Vocabulary  # noqa: E402
from specgen.decoding.drafters.pattern import RecordPattern  # noqa: E402
from specgen.decoding.drafters import pattern_rules as rules  # noqa: E402

RULES, CORE = rules.RULES, rules.CORE
OFF = {  # each rule switched off in the full pattern
    "field place": replace(RULES, place=None),
    "leading spaces": replace(RULES, context_key=None),
    "shape": replace(RULES, shape=None),
    "keywords": replace(RULES, shape=rules.ValueShape(keywords=frozenset())),
    "sentence end": replace(RULES, shape=rules.ValueShape(sentence_end=False)),
    "padding": replace(RULES, padding=None),
    "gap fallback": replace(RULES, gap_fallback=False),
}
ON = {  # each rule alone on the core (the fallback acts only where shapes tell values apart)
    "field place": replace(CORE, place=rules.field_place),
    "leading spaces": replace(CORE, context_key=rules.without_leading_spaces),
    "shape": replace(CORE, shape=rules.ValueShape()),
    "padding": replace(CORE, padding=rules.column_padding),
    "shape, gap fallback": replace(CORE, shape=rules.ValueShape(), gap_fallback=True),
}
VARIANTS = {"full": RULES, "core": CORE, **{f"full - {name}": value for name, value in OFF.items()},
            **{f"core + {name}": value for name, value in ON.items()}}
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


def speedup(prompt: list[int], output: list[int], curve: str, vocabulary: Vocabulary | None, variant) -> float:
    """Auto's speedup over plain decoding in the replay, with the pattern's rules `variant`."""
    adaptive.RecordPattern = partial(RecordPattern, rules=variant)
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
                speeds = {"copies only": speedup(prompt, output, curve, None, RULES)}
                speeds |= {label: speedup(prompt, output, curve, vocabulary, variant)
                           for label, variant in VARIANTS.items()}
                row["speedup"][curve] = {label: round(value, 4) for label, value in speeds.items()}
                print(f"{curve:8s} {name:44s} " + " ".join(f"{label}={value:.2f}" for label, value in speeds.items()),
                      flush=True)
    args.out.write_text(json.dumps({"variants": ["copies only", *VARIANTS], "replays": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
