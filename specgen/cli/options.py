"""The options run, chat, bench and serve share, each declared once as a typed alias, and the
one place they become model paths, load settings and a generation config."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from specgen.errors import UsageError

# Each option is declared once, as a typed alias; a command only sets its default. Model files
# and load settings are built from them in one place: select_models() and load_options().

MODEL, SAMPLING, RESOURCES = "Model", "Sampling", "Context and threads"

PairOpt = Annotated[Optional[str], typer.Option(
    "--pair", rich_help_panel=MODEL,
    help="A matched pair from 'specgen pairs', downloaded on first use (default pair without --target).")]
TargetOpt = Annotated[Optional[Path], typer.Option(
    "--target", dir_okay=False, rich_help_panel=MODEL,
    help="Target model (GGUF file), e.g. one listed by 'specgen pairs --local'.")]
DraftOpt = Annotated[Optional[Path], typer.Option(
    "--draft", dir_okay=False, rich_help_panel=MODEL,
    help="Draft model (GGUF file) sharing the target's vocabulary.")]
NoDraftOpt = Annotated[bool, typer.Option(
    "--no-draft", rich_help_panel=MODEL, help="Decode with the target alone (the baseline).")]
OfflineOpt = Annotated[bool, typer.Option(
    "--offline", rich_help_panel=MODEL, help="Never download; fail if the pair's files are not cached.")]
DraftTokensOpt = Annotated[str, typer.Option(
    "--draft-tokens", "-k", rich_help_panel=MODEL,
    help="Draft tokens per round: K (1-32), or auto: 0 to the pair's draft_tokens, chosen each round from measured costs.")]

MaxTokensOpt = Annotated[int, typer.Option(
    "--max-tokens", "-n", min=1, rich_help_panel=SAMPLING, help="Most tokens to generate (per reply, per run).")]
TempOpt = Annotated[float, typer.Option(
    "--temp", min=0.0, rich_help_panel=SAMPLING, help="Sampling temperature; 0 is greedy.")]
TopKOpt = Annotated[int, typer.Option(
    "--top-k", min=0, rich_help_panel=SAMPLING, help="Keep only the k most likely tokens (0: all).")]
TopPOpt = Annotated[float, typer.Option(
    "--top-p", min=0.0, max=1.0, rich_help_panel=SAMPLING, help="Nucleus sampling mass.")]
SeedOpt = Annotated[Optional[int], typer.Option("--seed", rich_help_panel=SAMPLING, help="Random seed for sampling.")]
RawOpt = Annotated[bool, typer.Option(
    "--raw", rich_help_panel=SAMPLING, help="Send the prompt as is, without the chat template.")]

CtxOpt = Annotated[int, typer.Option("--ctx", min=16, rich_help_panel=RESOURCES, help="Context size in tokens.")]
ThreadsOpt = Annotated[Optional[int], typer.Option(
    "--threads", "-t", min=1, rich_help_panel=RESOURCES, help="CPU threads (default: all cores).")]
GpuLayersOpt = Annotated[Optional[int], typer.Option(
    "--gpu-layers", min=0, rich_help_panel=RESOURCES, help="Layers to offload (default: all, on GPU builds).")]


def select_models(pair: str | None, target: Path | None, draft: Path | None, no_draft: bool, offline: bool):
    """--pair/--target/--draft/--no-draft/--offline -> the files to load (hub.Selection)."""
    from specgen.models.select import resolve_models

    return resolve_models(pair, target, draft, no_draft, offline)


def load_options(ctx: int, threads: int | None, gpu_layers: int | None):
    """--ctx/--threads/--gpu-layers -> engine.LoadOptions."""
    from specgen.llama.model import LoadOptions

    return LoadOptions(n_ctx=ctx, n_threads=threads, n_gpu_layers=gpu_layers)


def generation_config(max_tokens: int, draft_tokens: str, cap: int, temp: float, top_k: int, top_p: float,
                      seed: int | None):
    """The sampling options and --draft-tokens -> speculative.GenerationConfig."""
    from specgen.decoding.loop import GenerationConfig
    from specgen.decoding.sampling import SamplingParams

    k, adaptive = draft_length(draft_tokens, cap)
    return GenerationConfig(max_tokens, k, SamplingParams(temp, top_k, top_p, seed), adaptive)


def draft_length(text: str, cap: int) -> tuple[int, bool]:
    """--draft-tokens: (K, adaptive); `auto` lets each round choose 0..cap (the pair's draft_tokens)."""
    if text.strip().lower() == "auto":
        return cap, True
    from specgen.decoding.tokens import MAX_DRAFT_TOKENS

    if text.strip().isdigit() and 1 <= int(text) <= MAX_DRAFT_TOKENS:
        return int(text), False
    raise UsageError(f"--draft-tokens takes a number from 1 to {MAX_DRAFT_TOKENS} or 'auto', not {text!r}")
