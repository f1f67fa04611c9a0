"""`specgen run` and `specgen chat`: generate text for a prompt, or in turns."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from specgen.cli.app import app, examples
from specgen.cli.options import (
    MODEL,
    DraftTokensOpt,
    ModelChoice,
    RawOpt,
    Resources,
    Sampling,
    generation_config,
    load_options,
    option_groups,
    select_models,
)
from specgen.engine.attached import attached_text
from specgen.errors import UsageError
from specgen.terminal.attach import fence

if TYPE_CHECKING:
    from specgen.llama.model import Model


@app.command(
    epilog=examples(
        "specgen run --raw -n 64 'def fibonacci(n: int) -> int:'",
        "cat app.py | specgen run 'Add type hints. Reply with the whole file.' > typed.py",
        "specgen run -f app.py --predict app.py 'Rename bal to balance. Reply with the whole file.' > new.py",
    )
)
@option_groups
def run(
    prompt: Annotated[
        str | None,
        typer.Argument(
            help="Prompt text. With text piped on stdin too, the prompt is the piped text, a blank line, then this; "
            "stdin alone when omitted or '-'."
        ),
    ] = None,
    files: Annotated[
        list[Path] | None,
        typer.Option(
            "--file",
            "-f",
            metavar="PATH",
            help="Attach this file's text to the prompt, named and fenced "
            "(repeatable; files come first, then stdin, then PROMPT).",
        ),
    ] = None,
    models: ModelChoice = ModelChoice(),
    sampling: Sampling = Sampling(max_tokens=256),
    draft_tokens: DraftTokensOpt = "auto",
    raw: RawOpt = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print one JSON object with the text and all statistics.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No summary line on stderr.")] = False,
    lookup_cache: Annotated[
        Path | None,
        typer.Option(
            "--lookup-cache",
            dir_okay=False,
            metavar="FILE",
            rich_help_panel=MODEL,
            help="Copy drafts also from the outputs of earlier runs kept in FILE, and add this one; "
            "the same prompt again follows its earlier reply (with auto; shared safely by several "
            "processes; bounded; one file per model family).",
        ),
    ] = None,
    predict: Annotated[
        Path | None,
        typer.Option(
            "--predict",
            metavar="FILE",
            rich_help_panel=MODEL,
            help="The text the output is expected to resemble (the file an edit reprints): drafts follow it, "
            "and the output stays the model's own.",
        ),
    ] = None,
    json_schema: Annotated[
        Path | None,
        typer.Option(
            "--json-schema",
            dir_okay=False,
            metavar="FILE",
            help="Reply with JSON that fits the JSON schema in FILE: a grammar masks every token the "
            "schema forbids, for the draft's tokens and the target's alike (the output stays the target's).",
        ),
    ] = None,
    resources: Resources = Resources(),
) -> None:
    """Generate text for one prompt; stdout gets only the text (shell pipelines welcome).

    The prompt, a blank line apart: each --file (named, fenced), the text piped on stdin, then PROMPT.
    """
    from specgen.engine.drafting import base_drafter, measures_costs
    from specgen.engine.generation import MEASURING_NOTE, STALE_COSTS_NOTE, Generation
    from specgen.engine.request import Request, Rules, followed_reply
    from specgen.llama import lookup_cache as memory_file
    from specgen.llama.library import backend_name
    from specgen.llama.pair import encode_prompt, open_models
    from specgen.llama.rpc import placement
    from specgen.terminal.run_view import json_record, prediction_fields, streamer, summary_line

    text, attached = read_prompt(prompt, files or [])
    predicted = (
        read_text(predict, f"--predict {predict}", "give the one file the output should resemble")
        if predict is not None
        else None
    )
    gbnf, example = schema_file_grammar(json_schema) if json_schema else (None, "")
    selection = select_models(models, draft_tokens)
    paths = selection.paths
    config, auto = generation_config(sampling, draft_tokens, selection.draft_tokens)
    vocabulary = memory_file.vocabulary_id(paths.target) if lookup_cache else ""
    memory = memory_file.load(lookup_cache, vocabulary) if lookup_cache else None
    output: list[int] = []
    show = streamer(None if json_out else sys.stdout)

    def on_round(event) -> None:
        output.extend(event.tokens)
        show(event)

    load = load_options(resources)
    with open_models(paths, load) as (target_model, draft_model):
        tokens = tuple(encode_prompt(target_model, text, raw))
        expected = prediction_tokens(target_model, predicted, predict) if predict and predicted is not None else None
        earlier = memory.reply_to(tokens) if memory is not None else None  # the same prompt's last reply
        request = Request(
            tokens,
            config,
            auto,
            Rules(gbnf) if gbnf else None,
            tuple(expected) if expected is not None else None,
            quoted=gbnf is not None,
            example=example,
            shared=(memory.index,) if memory is not None else (),
            repeats=followed_reply(earlier, expected is not None, config.sampling),
            attached=tuple(target_model.continuation(attached)) if attached and not raw else None,
        )
        drafter = base_drafter(draft_model)
        if not quiet and measures_costs(target_model, drafter, config, auto):
            print("specgen: " + MEASURING_NOTE, file=sys.stderr)
        with Generation(target_model, drafter, request) as generation:
            answer, summary = generation.consume(on_round)
        predicted_report = generation.report(output, summary)
        kernels, mapped = target_model.kernels, target_model.mapped
        layers = (target_model.layers, draft_model.layers if draft_model else {})
    answered = tokens if summary.stop_reason != "interrupted" else None  # a reply cut short answers no prompt
    if lookup_cache and not memory_file.save(lookup_cache, vocabulary, output, answered):
        print(f"specgen: warning: could not write --lookup-cache {lookup_cache}", file=sys.stderr)
    if json_out:
        where = {
            "target": str(paths.target),
            "draft": str(paths.draft or ""),
            "backend": backend_name(),
            "extra_bufts": kernels.on,
            "extra_bufts_reason": kernels.reason,
            "mmap": mapped,
            "lookup_cache": str(lookup_cache or ""),
            "lookup_memory_tokens": len(memory.index) if memory is not None else 0,
            "lookup_memory_bytes": memory.nbytes if memory is not None else 0,
            "rpc": [str(e) for e in load.rpc],
            "target_layers": layers[0],
            "draft_layers": layers[1],
        }
        print(json_record(answer, summary, {**where, **prediction_fields(predicted_report)}))
    elif sys.stdout.isatty() and answer and not answer.endswith("\n"):
        print()
    if not quiet and not json_out:
        print(summary_line(summary, placement(*layers) if load.rpc else "", predicted_report), file=sys.stderr)
    if not quiet and generation.stale_costs:
        print("specgen: " + STALE_COSTS_NOTE.format("run"), file=sys.stderr)
    if gbnf and not json_out:
        warn_if_cut(summary.stop_reason, config.max_tokens)
    if summary.stop_reason == "interrupted":
        raise typer.Exit(130)


def warn_if_cut(stop_reason: str, max_tokens: int) -> None:
    """A JSON document cut short by -n or the context is not JSON: one warning on stderr (with
    --quiet too), so that a pipeline into a JSON reader learns why it fails."""
    if stop_reason in ("length", "context"):
        limit = f"-n {max_tokens}; raise it" if stop_reason == "length" else "the end of the context; raise --ctx"
        print(f"specgen: warning: the JSON is cut short: the output reached {limit}", file=sys.stderr)


def schema_file_grammar(path: Path) -> tuple[str, str]:
    """The grammar of the JSON schema in `path`, and a document of its shape for auto's structure
    copies (`schema_example`); one UsageError line when they cannot be had."""
    from specgen.llama.grammar import GrammarError, schema_example, schema_grammar

    where = f"--json-schema {path}"
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{where}: no such file; check the path") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"{where}: cannot be read ({getattr(error, 'strerror', None) or error})") from None
    except ValueError as error:
        raise UsageError(f"{where}: not valid JSON ({error}); write the schema as one JSON object") from None
    try:
        return schema_grammar(schema), schema_example(schema)
    except GrammarError as error:
        raise UsageError(f"{where}: {error}") from None


def read_prompt(prompt: str | None, files: list[Path]) -> tuple[str, str]:
    """The prompt: each file attached (named, fenced), then stdin's text, then the argument, a
    blank line apart. Without an argument, or with '-', stdin is the text (and must be piped, unless
    files are attached); with one, stdin is read only when it is a pipe or a file, and adds
    nothing when it is empty. Also the text it attached (`engine.attached`): the files' texts,
    stdin's where an argument or a file came with it, and the fenced blocks of the rest."""
    texts = [read_attached(path) for path in files]
    parts = [fence(str(path), text) for path, text in zip(files, texts, strict=True)]
    stdin_only = prompt is None or prompt == "-"
    instruction = prompt if prompt is not None and not stdin_only else ""
    if stdin_only and (prompt == "-" or not files):
        instruction = read_stdin()  # stdin is the prompt, whatever it holds
        parts.append(instruction)
    elif stdin_is_piped():
        piped = read_stdin()
        parts += [piped] if piped.strip() else []
        texts += [piped]
    if prompt is not None and not stdin_only:
        parts.append(prompt)
    text = "\n\n".join([part.rstrip("\r\n") for part in parts[:-1]] + parts[-1:])
    return text, attached_text(instruction, tuple(texts))


def stdin_is_piped() -> bool:
    """Whether stdin is a pipe or a file: text sent on purpose, not a terminal, /dev/null or none."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (AttributeError, OSError, ValueError):  # no stdin, or one without a file descriptor
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


def read_stdin() -> str:
    """All of stdin's text; a UsageError when it is a terminal or not UTF-8."""
    if sys.stdin is None or sys.stdin.isatty():
        raise UsageError("no prompt: pass it as an argument or pipe it on stdin")
    stream = getattr(sys.stdin, "buffer", None)  # bytes, so that no locale setting lets bad bytes through
    try:
        return stream.read().decode("utf-8") if stream is not None else sys.stdin.read()
    except UnicodeDecodeError as error:
        raise UsageError(
            f"stdin is not UTF-8 text ({error.reason} at byte {error.start}); convert it first (iconv -t UTF-8)"
        ) from error


def read_attached(path: Path) -> str:
    """The UTF-8 text of a file given with --file; one UsageError line when it cannot be had."""
    return read_text(path, f"--file {path}", "attach its files one by one (-f a.py -f b.py)")


def read_text(path: Path, where: str, folder_hint: str) -> str:
    """The UTF-8 text of a file an option names (`where`: the option and its value, as the
    user wrote them); one UsageError line, naming it, when it cannot be had."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as error:
        raise UsageError(f"{where}: no such file; check the path") from error
    except IsADirectoryError as error:
        raise UsageError(f"{where}: is a folder; {folder_hint}") from error
    except OSError as error:
        raise UsageError(f"{where}: cannot be read ({error.strerror}); check its permissions") from error
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(
            f"{where}: not UTF-8 text ({error.reason} at byte {error.start}); give text "
            "files only, or convert it first (iconv -t UTF-8)"
        ) from error


def prediction_tokens(target: Model, text: str, path: Path) -> list[int]:
    """The prediction in the target's tokens, as text the output continues; a UsageError when
    it is longer than the context."""
    tokens = target.continuation(text) if text else []
    if len(tokens) > target.n_ctx:
        raise UsageError(
            f"--predict {path}: {len(tokens)} tokens, longer than the {target.n_ctx}-token context; "
            "pass a larger --ctx or a shorter prediction"
        )
    return tokens


@app.command(
    epilog=examples(
        "specgen chat",
        "specgen chat --pair llama3-8b:1b --show-rejected",
        "specgen chat --target big.gguf --draft small.gguf --temp 0.7 --seed 1",
    )
)
@option_groups
def chat(
    models: ModelChoice = ModelChoice(),
    system: Annotated[str | None, typer.Option("--system", help="System prompt for the whole chat.")] = None,
    sampling: Sampling = Sampling(max_tokens=512),
    draft_tokens: DraftTokensOpt = "auto",
    show_rejected: Annotated[
        bool, typer.Option("--show-rejected", help="Also show the rejected draft tokens, struck through.")
    ] = False,
    plain: Annotated[
        bool, typer.Option("--plain", help="Plain text: no colours, no live status (also with NO_COLOR or in a pipe).")
    ] = False,
    resources: Resources = Resources(),
) -> None:
    """Chat in turns, and watch which tokens the draft model got right as each reply streams.

    --ctx holds the whole conversation; /temp changes the temperature during the chat.

    A pasted block is one message, and so are the lines between two \"\"\" lines.
    /file PATH attaches a file to the next message; /save FILE writes the chat as
    prompts for 'specgen bench' and /load FILE takes it up again; /retry generates
    the last reply again. /help in the chat lists every command.
    """
    from specgen.terminal.chat import ChatOptions, run_chat

    selection = select_models(models, draft_tokens)
    config, auto = generation_config(sampling, draft_tokens, selection.draft_tokens)
    run_chat(selection.paths, load_options(resources), ChatOptions(config, auto, system, show_rejected, plain))
