"""The options run, chat, bench and serve share: declared once, in three groups (which models,
how to sample, what resources), each a frozen dataclass that a command takes as one parameter.

Typer reads options from a function's signature, so `option_groups` expands each group parameter
into its fields' options for Typer and gathers the parsed values back into the dataclass before the
command runs. A command sets its own defaults by giving the group a default instance.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from specgen.errors import UsageError

MODEL, SAMPLING, RESOURCES = "Model", "Sampling", "Context and threads"

PairOpt = Annotated[
    str | None,
    typer.Option(
        "--pair",
        rich_help_panel=MODEL,
        help="A matched pair from 'specgen pairs', downloaded on first use (default pair without --target).",
    ),
]
TargetOpt = Annotated[
    Path | None,
    typer.Option(
        "--target",
        dir_okay=False,
        rich_help_panel=MODEL,
        help="Target model (GGUF file), e.g. one listed by 'specgen pairs --local'.",
    ),
]
DraftOpt = Annotated[
    Path | None,
    typer.Option(
        "--draft",
        dir_okay=False,
        rich_help_panel=MODEL,
        help="Draft model (GGUF file) sharing the target's vocabulary.",
    ),
]
NoDraftOpt = Annotated[
    bool,
    typer.Option(
        "--no-draft",
        rich_help_panel=MODEL,
        help="No draft model: drafts are copied from the text only (-k 0 for none).",
    ),
]
OfflineOpt = Annotated[
    bool,
    typer.Option("--offline", rich_help_panel=MODEL, help="Never download; fail if the pair's files are not cached."),
]
DraftTokensOpt = Annotated[
    str,
    typer.Option(
        "--draft-tokens",
        "-k",
        rich_help_panel=MODEL,
        help="Draft tokens per round: K (1-32; 0: plain decoding, the target alone), or auto: chosen each round "
        "from measured costs (the draft model up to the pair's draft_tokens, copies up to 64).",
    ),
]

MaxTokensOpt = Annotated[
    int,
    typer.Option(
        "--max-tokens", "-n", min=1, rich_help_panel=SAMPLING, help="Most tokens to generate (per reply, per run)."
    ),
]
TempOpt = Annotated[
    float, typer.Option("--temp", min=0.0, rich_help_panel=SAMPLING, help="Sampling temperature; 0 is greedy.")
]
TopKOpt = Annotated[
    int, typer.Option("--top-k", min=0, rich_help_panel=SAMPLING, help="Keep only the k most likely tokens (0: all).")
]
TopPOpt = Annotated[
    float, typer.Option("--top-p", min=0.0, max=1.0, rich_help_panel=SAMPLING, help="Nucleus sampling mass.")
]
SeedOpt = Annotated[int | None, typer.Option("--seed", rich_help_panel=SAMPLING, help="Random seed for sampling.")]
RawOpt = Annotated[
    bool,
    typer.Option(
        "--raw",
        rich_help_panel=SAMPLING,
        help="Send the prompt as is, without the chat template; special tokens written in it "
        "(such as <|im_start|>) are read as control tokens, as llama.cpp reads a prompt.",
    ),
]

CtxOpt = Annotated[int, typer.Option("--ctx", min=16, rich_help_panel=RESOURCES, help="Context size in tokens.")]
ThreadsOpt = Annotated[
    int | None,
    typer.Option("--threads", "-t", min=1, rich_help_panel=RESOURCES, help="CPU threads (default: all cores)."),
]
GpuLayersOpt = Annotated[
    int | None,
    typer.Option(
        "--gpu-layers",
        min=0,
        rich_help_panel=RESOURCES,
        help="Layers to offload to the GPU or the --rpc workers (default: all, where there is one).",
    ),
]


def _check_rpc(text: str | None) -> str | None:
    """Refuse a malformed --rpc while parsing, before any model is looked for or downloaded."""
    if text is not None:
        from specgen.llama.rpc import parse_endpoints

        parse_endpoints(text)
    return text


RpcOpt = Annotated[
    str | None,
    typer.Option(
        "--rpc",
        metavar="HOST:PORT[,...]",
        callback=_check_rpc,
        rich_help_panel=RESOURCES,
        help=(
            "Put the target's layers on these 'specgen worker' (or llama.cpp rpc-server) machines; "
            "the draft stays here."
        ),
    ),
]


@dataclass(frozen=True)
class ModelChoice:
    """--pair, or --target/--draft; --no-draft; --offline."""

    pair: PairOpt = None
    target: TargetOpt = None
    draft: DraftOpt = None
    no_draft: NoDraftOpt = False
    offline: OfflineOpt = False


@dataclass(frozen=True)
class Sampling:
    """How many tokens, and how each is drawn."""

    max_tokens: MaxTokensOpt = 256
    temp: TempOpt = 0.0
    top_k: TopKOpt = 0
    top_p: TopPOpt = 1.0
    seed: SeedOpt = None


@dataclass(frozen=True)
class Resources:
    """The context to allocate and where the work runs."""

    ctx: CtxOpt = 4096
    threads: ThreadsOpt = None
    gpu_layers: GpuLayersOpt = None
    rpc: RpcOpt = None


def option_groups(command: Callable) -> Callable:
    """Show Typer each dataclass parameter of `command` as its fields' options; call it with the group.

    Typer passes every value by keyword, so all parameters become keyword-only."""
    hints = typing.get_type_hints(command, include_extras=True)
    signature = inspect.signature(command)
    groups = {name: hints[name] for name in signature.parameters if dataclasses.is_dataclass(hints[name])}
    shown = []
    for name, parameter in signature.parameters.items():
        if name not in groups:
            shown.append(parameter.replace(annotation=hints[name], kind=inspect.Parameter.KEYWORD_ONLY))
            continue
        defaults = parameter.default if parameter.default is not parameter.empty else groups[name]()
        field_hints = typing.get_type_hints(groups[name], include_extras=True)
        shown += [
            inspect.Parameter(
                field.name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=field_hints[field.name],
                default=getattr(defaults, field.name),
            )
            for field in dataclasses.fields(groups[name])
        ]
    names = [parameter.name for parameter in shown]
    assert len(names) == len(set(names)), f"an option of {command.__name__} is declared twice: {names}"

    @functools.wraps(command)
    def with_groups(**values):
        for name, group in groups.items():
            values[name] = group(**{field.name: values.pop(field.name) for field in dataclasses.fields(group)})
        return command(**values)

    with_groups.__signature__ = signature.replace(parameters=shown)  # type: ignore[attr-defined]  # read by inspect; typeshed does not declare it
    with_groups.__annotations__ = {parameter.name: parameter.annotation for parameter in shown}
    return with_groups


def select_models(models: ModelChoice, draft_tokens: str = "auto"):
    """The model options -> the files to load (models.select.Selection); -k 0 (plain decoding)
    needs no draft model, as --no-draft."""
    from specgen.models.select import resolve_models

    plain = draft_length(draft_tokens, 1) == (0, False)
    return resolve_models(models.pair, models.target, models.draft, models.no_draft or plain, models.offline)


def load_options(resources: Resources):
    """--ctx/--threads/--gpu-layers/--rpc -> llama.model.LoadOptions."""
    from specgen.llama.model import LoadOptions
    from specgen.llama.rpc import parse_endpoints

    return LoadOptions(
        n_ctx=resources.ctx,
        n_threads=resources.threads,
        n_gpu_layers=resources.gpu_layers,
        rpc=parse_endpoints(resources.rpc) if resources.rpc else (),
    )


def sampling_params(sampling: Sampling):
    """The sampling options -> decoding.sampling.SamplingParams."""
    from specgen.decoding.sampling import SamplingParams

    return SamplingParams(sampling.temp, sampling.top_k, sampling.top_p, sampling.seed)


def generation_config(sampling: Sampling, draft_tokens: str, cap: int):
    """The sampling options and --draft-tokens -> (decoding.loop.GenerationConfig, whether the
    auto policy chooses each round: engine.drafting.drafter_for's `auto`)."""
    from specgen.decoding.loop import GenerationConfig

    k, auto = draft_length(draft_tokens, cap)
    return GenerationConfig(sampling.max_tokens, k, sampling_params(sampling)), auto


def draft_length(text: str, cap: int) -> tuple[int, bool]:
    """--draft-tokens: (K, auto); `auto` lets each round choose 0..cap (the pair's draft_tokens)."""
    if text.strip().lower() == "auto":
        return cap, True
    from specgen.decoding.tokens import MAX_DRAFT_TOKENS

    if text.strip().isdigit() and 0 <= int(text) <= MAX_DRAFT_TOKENS:
        return int(text), False
    raise UsageError(f"--draft-tokens takes a number from 0 to {MAX_DRAFT_TOKENS} or 'auto', not {text!r}")
