"""Record the target's greedy outputs for bench prompt files, for the offline replay.

tests/copyreplay.py replays recorded greedy outputs through the real loop and auto policy with a
stand-in target, so a change to drafting or pricing is measured on real text in seconds and the
same way every time. This script makes such a recording: each prompt is chat-templated as `specgen
run` does and decoded greedily by the target alone (the loop with no drafter).

    python benchmarks/scripts/record_outputs.py TARGET.gguf OUT.json PROMPTS.jsonl ... [-n 128]

A prompt with "next_turns" (a multi-turn chat) is played on: each later turn is asked after the
model's own greedy reply, recorded as NAME/2, NAME/3, ...; with `--turns-out FILE` those later
turns are also written as bench prompts (their "messages" hold the recorded replies). A prompt
with a "json_schema" is decoded under its grammar, and one with "tools" is rendered with the
model's tool prompt, as `specgen bench` does; both are marked `"quoted": true` (and a schema's
prompt carries the `"example"` document auto is given, `grammar.schema_example`), so the replay
copies from the prompt as JSON escapes it, as auto does for a reply written in JSON.
"""

from __future__ import annotations

import argparse
import json
from contextlib import ExitStack
from pathlib import Path

from specgen.bench.prompts import read_prompt_files
from specgen.bench.runner import encode_all, prompt_grammar
from specgen.decoding.events import Round
from specgen.decoding.loop import GenerationConfig, generate
from specgen.llama.grammar import Grammar, schema_example
from specgen.llama.model import LoadOptions, Model
from specgen.llama.pair import encode_messages


def greedy(model: Model, prompt: list[int], max_tokens: int, grammar: str | None = None) -> tuple[list[int], str]:
    """The target alone's greedy output for `prompt` (under `grammar`, GBNF, where given): its
    tokens and text."""
    tokens: list[int] = []
    text: list[str] = []
    settings = GenerationConfig(max_tokens=max_tokens, draft_tokens=0)
    with ExitStack() as owned:
        constraint = owned.enter_context(Grammar(model, grammar)) if grammar is not None else None
        for event in generate(model, None, prompt, settings, constraint):
            if isinstance(event, Round):
                tokens += event.tokens
                text.append(event.text)
    return tokens, "".join(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("prompts", nargs="+")
    parser.add_argument("-n", "--max-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--turns-out", type=Path)
    args = parser.parse_args()
    outputs: dict[str, dict] = {}
    later_turns: list[dict] = []
    with Model(args.target, LoadOptions(n_ctx=8192, n_threads=args.threads)) as model:
        for path in args.prompts:
            raw = (
                [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
                if path.endswith(".jsonl")
                else []
            )
            nexts = {r.get("name"): r.get("next_turns", []) for r in raw}
            for prompt in read_prompt_files([path], None):
                messages = list(prompt.messages) or [("user", prompt.text)]
                for turn, ask in enumerate([None, *nexts.get(prompt.name, [])], start=1):
                    if ask is not None:
                        messages += [("user", ask)]
                        later_turns.append(
                            {
                                "name": f"{prompt.name}/{turn}",
                                "kind": prompt.kind,
                                "messages": [{"role": r, "content": c} for r, c in messages],
                            }
                        )
                    first = ask is None
                    tokens = encode_all(model, [prompt], False)[0] if first else encode_messages(model, messages)
                    output, text = greedy(model, tokens, args.max_tokens, prompt_grammar(prompt) if first else None)
                    name = prompt.name if turn == 1 else f"{prompt.name}/{turn}"
                    outputs[name] = {
                        "kind": prompt.kind,
                        "prompt": tokens,
                        "output": output,
                        "text": text,
                        "quoted": first and (prompt.json_schema is not None or bool(prompt.tools)),
                        "example": schema_example(prompt.json_schema) if first else "",
                    }
                    print(f"{name}: {len(tokens)} prompt tokens, {len(output)} out", flush=True)
                    messages += [("assistant", text)]
    about = (
        f"Greedy outputs of {args.target.name} ({args.threads} threads, this project's engine, "
        f"at most {args.max_tokens} tokens) for {', '.join(args.prompts)}, chat-templated."
    )
    args.out.write_text(json.dumps({"about": about, "outputs": outputs}, ensure_ascii=False))
    if args.turns_out:
        args.turns_out.write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in later_turns))


if __name__ == "__main__":
    main()
