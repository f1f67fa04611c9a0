"""A pair in the engines users grow into: llama-server's command line, vLLM's speculative_config.

specgen serves one user on one machine; a team or a service moves to llama-server or vLLM and
wants the pair that worked here, with the draft length that paid, in that engine's own terms.
Every flag and field here is one those engines document: llama-server's from the
tools/server/README.md of the llama.cpp that specgen's llama-cpp-python vendors (where
--draft-max gave way to --spec-draft-n-max), vLLM's from its speculative decoding docs
(`--speculative-config` with method draft_model, ngram or suffix).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from specgen.errors import UsageError
from specgen.models.registry import ModelFile, Pair

DRAFT, NGRAM, SUFFIX = "draft", "ngram", "suffix"
METHODS = (DRAFT, NGRAM, SUFFIX)
# llama.cpp's fastest draft-free method on the prompts of benchmarks/results/2026-11-24-copy-drafting/
LLAMA_NGRAM = "ngram-map-k"
ALL_LAYERS = "99"


@dataclass(frozen=True)
class Speculation:
    """How the engine should speculate: a draft model or a copying method, K tokens, and why."""

    method: str
    k: int
    reason: str


@dataclass(frozen=True)
class Export:
    """A pair in another engine's terms: its command line, and vLLM's speculative_config."""

    engine: str
    argv: tuple[str, ...]
    speculative_config: dict | None  # vLLM's, as its --speculative-config takes it
    notes: tuple[str, ...] = ()  # what the user should know beyond the command (stderr)


def choose(pair: Pair, method: str | None, k: int | None, bench: dict | None) -> Speculation:
    """The method and K to export: as given; else what a `specgen bench --json` document found
    fastest; else the pair's draft model at its registry K."""
    if method is not None and method not in METHODS:
        raise UsageError(f"--method takes {', '.join(METHODS)}, not {method!r}")
    if bench is None:
        return Speculation(
            method or DRAFT,
            k or pair.draft_tokens,
            "as asked" if method or k else f"the pair's draft model at its K ({pair.draft_tokens})",
        )
    found = from_bench(pair, bench)
    return Speculation(method or found.method, k or found.k, found.reason)


def from_bench(pair: Pair, bench: dict) -> Speculation:
    """The bench's fastest configuration in engine terms: prompt lookup (and an auto that copied in
    at least half its rounds) becomes a copying method, a draft model keeps its K (auto: the pair's)."""
    try:
        best = bench["verdict"]["best"]
        config = next(c for c in bench["configs"] if c["name"] == best)
        runs = [r for r in bench["runs"] if r["config"] == best]
        outcome = bench["verdict"]["outcome"]
    except (KeyError, TypeError, StopIteration):
        raise UsageError("--bench wants the JSON that 'specgen bench --json PATH' writes") from None
    _same_models(pair, bench.get("settings") or {})
    if config["adaptive"]:
        copied = 2 * sum(r.get("lookup_rounds", 0) for r in runs) >= max(sum(r.get("rounds", 0) for r in runs), 1)
    else:
        copied = config["drafter"] == "lookup"
    k = pair.draft_tokens if config["adaptive"] else int(config["k"])
    paid = {
        "pays": "faster than the target alone",
        "noise": "within the noise of the target alone",
        "costs": "slower than the target alone, like every configuration",
    }.get(outcome, outcome)
    reason = f"the bench's fastest configuration was {best} ({paid})"
    return Speculation(NGRAM if copied else DRAFT, k, reason)


def _same_models(pair: Pair, settings: dict) -> None:
    """A bench of other model files says nothing of this pair's: refused."""
    measured = [Path(str(settings[role])).name for role in ("target", "draft") if settings.get(role)]
    if measured and measured != [pair.target.file, pair.draft.file][: len(measured)]:
        raise UsageError(
            f"--bench measured {' and '.join(measured)}, not pair {pair.name}'s {pair.target.file} and "
            f"{pair.draft.file}; bench this pair (specgen bench FILE --pair {pair.name} --json OUT)"
        )


def llama_server(pair: Pair, spec: Speculation, ctx: int, local: tuple[Path, Path] | None = None) -> Export:
    """`llama-server` with the pair: from the hub (-hf/-hff, -hfd/-md), or these local files (-m/-md)."""
    if spec.method == SUFFIX:
        raise UsageError("llama-server has no suffix decoding; use --method ngram (its copying method) or draft")
    argv = [
        "llama-server",
        *(("-m", str(local[0])) if local else ("-hf", pair.target.repo, "-hff", pair.target.file)),
        "-c",
        str(ctx),
        "-ngl",
        ALL_LAYERS,
    ]
    if spec.method == DRAFT:  # -hfd REPO with -md FILE picks that file of the repo (llama.cpp's common/arg.cpp)
        draft = ("-md", str(local[1])) if local else ("-hfd", pair.draft.repo, "-md", pair.draft.file)
        argv += [
            *draft,
            "-ngld",
            ALL_LAYERS,
            "--spec-type",
            "draft-simple",
            "--spec-draft-n-max",
            str(spec.k),
            "--spec-draft-n-min",
            "0",
        ]
    else:
        argv += ["--spec-type", LLAMA_NGRAM]
    return Export("llama-server", tuple(argv), None)


def vllm(pair: Pair, spec: Speculation, ctx: int) -> Export:
    """`vllm serve` with the pair's original models (or its GGUF files, through vLLM's GGUF plugin)."""
    target, target_note = _vllm_model(pair.target)
    config: dict = {
        "method": {DRAFT: "draft_model", NGRAM: "ngram", SUFFIX: "suffix"}[spec.method],
        "num_speculative_tokens": spec.k,
    }
    notes = [target_note]
    if spec.method == DRAFT:
        config["model"], draft_note = _vllm_model(pair.draft)
        notes.append(draft_note)
    elif spec.method == NGRAM:
        config["prompt_lookup_max"] = 4
    else:
        notes.append("vLLM's suffix decoding needs 'pip install arctic-inference'")
    argv = ("vllm", "serve", target, "--max-model-len", str(ctx), "--speculative-config", json.dumps(config))
    return Export("vllm", argv, config, tuple(note for note in notes if note))


def _vllm_model(model: ModelFile) -> tuple[str, str]:
    """The model vLLM should load, and a note when that is the GGUF file rather than the original."""
    if model.base:
        return model.base, ""
    name = f"{model.repo}:{model.quant}" if model.quant else model.repo
    return name, (
        f"{name} has no 'base' (its original model) in models.toml: vLLM loads GGUF only through "
        "vllm-gguf-plugin, with --tokenizer naming the original model"
    )
