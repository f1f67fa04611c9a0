"""`specgen pairs`, `pull`, `check` and `doctor`: the models there are, and what this machine can do."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer

from specgen.cli.app import app, examples, print_table
from specgen.cli.options import OfflineOpt
from specgen.errors import UsageError

pairs_app = typer.Typer(no_args_is_help=False)
app.add_typer(pairs_app, name="pairs")


@pairs_app.callback(
    invoke_without_command=True,
    epilog=examples(
        "specgen pairs",
        "specgen pairs --local",
        "specgen pairs --local --dir ~/models --dir /mnt/gguf",
    ),
)
def pairs(
    ctx: typer.Context,
    local: Annotated[
        bool,
        typer.Option(
            "--local",
            help="Pair the GGUF files already on disk ($SPECGEN_MODELS, Hugging Face cache, LM Studio, "
            "Ollama) instead of listing the registry.",
        ),
    ] = False,
    dirs: Annotated[
        list[Path] | None,
        typer.Option("--dir", file_okay=False, help="Also look in this folder (repeatable; implies --local)."),
    ] = None,
) -> None:
    """List the matched target/draft pairs: sizes, draft length K, whether they are downloaded.

    Add or override pairs in a models.toml in specgen's config directory
    ($SPECGEN_CONFIG_DIR, else the platform's user config folder for 'specgen').
    """
    from specgen.doctor import human_size

    if ctx.invoked_subcommand is not None:
        return
    if local or dirs:
        local_pairs(dirs or [])
        return
    from specgen.models.hub import cached_path
    from specgen.models.registry import load_registry

    registry = load_registry()
    rows = []
    for pair in registry.pairs.values():
        have = [cached_path(pair.target) is not None, cached_path(pair.draft) is not None]
        state = "yes" if all(have) else ("target" if have[0] else "draft" if have[1] else "no")
        mark = "*" if pair.name == registry.default else ""
        models = [f"{model.quant} {human_size(round(model.size_gb * 1e9))}" for model in (pair.target, pair.draft)]
        rows.append([pair.name + mark, *models, str(pair.draft_tokens), state])
    print_table(["pair", "target", "draft", "K", "downloaded"], rows)
    print(
        "* the default pair; 'specgen pairs show NAME' for repos and files, 'specgen pull NAME' to download",
        file=sys.stderr,
    )


def local_pairs(dirs: list[Path]) -> None:
    """The table of pairs among the files on disk; what was scanned and skipped goes to stderr."""
    from specgen.doctor import human_size
    from specgen.models.local import scan

    for folder in dirs:
        if not folder.expanduser().is_dir():
            raise UsageError(f"--dir {folder}: no such folder")
    found = scan(dirs)
    rows = [
        [
            pair.target.name,
            pair.draft.name,
            human_size(pair.target.size),
            human_size(pair.draft.size),
            f"{pair.ratio:.1f}x",
            str(pair.target.path),
            str(pair.draft.path),
        ]
        for pair in found.pairs
    ]
    if sys.stdout.isatty():  # paths are too long for table cells: one ready-to-run line per pair
        for target, draft, target_size, draft_size, ratio, target_path, draft_path in rows:
            print(f"{target} ({target_size})  <-  {draft} ({draft_size}), {ratio}")
            print(f"  specgen run --target {shlex.quote(target_path)} --draft {shlex.quote(draft_path)}")
    else:
        print_table(["target", "draft", "target size", "draft size", "ratio", "target path", "draft path"], rows)
    searched = sum(1 for _, folder in found.folders if folder.is_dir())
    print(
        f"{len(found.models)} models in {searched} folders, {len(found.pairs)} pairs; "
        "use one with 'specgen run --target PATH --draft PATH'",
        file=sys.stderr,
    )
    if found.skipped:
        print(f"skipped {len(found.skipped)} files that are not usable GGUF models:", file=sys.stderr)
        for skipped in found.skipped[:5]:
            print(f"  {skipped.path}: {skipped.reason}", file=sys.stderr)
        if len(found.skipped) > 5:
            print(f"  ... and {len(found.skipped) - 5} more", file=sys.stderr)


@pairs_app.command("show")
def pairs_show(name: str = typer.Argument(..., help="Pair name, e.g. llama3-8b:1b.")) -> None:
    """Everything about one pair: repos, files, quantization, size, license, cache paths."""
    from specgen.doctor import human_size
    from specgen.models.hub import cached_path
    from specgen.models.registry import load_registry

    pair = load_registry().get(name)
    print(f"pair: {pair.name}\ndescription: {pair.description}\ndraft tokens: {pair.draft_tokens}\nfrom: {pair.source}")
    for role, model in (("target", pair.target), ("draft", pair.draft)):
        gated = "gated (set HF_TOKEN)" if model.gated else "not gated"
        print(f"{role}: {model.repo} / {model.file}")
        print(f"  {model.quant}, {human_size(round(model.size_gb * 1e9))}, license {model.license or '?'}, {gated}")
        print(f"  cached: {cached_path(model) or 'no'}")


@pairs_app.command("check")
def pairs_check(
    name: str = typer.Argument(..., help="Pair name, e.g. llama3-8b:1b."), offline: OfflineOpt = False
) -> None:
    """Check from the GGUF headers that the pair's draft can speak for its target (the cached
    files', else read from the hub: a few MB, nothing downloaded)."""
    from specgen.models.hub import pair_headers
    from specgen.models.registry import load_registry

    report_verdict(*pair_headers(load_registry().get(name), offline))


@app.command()
def pull(name: str = typer.Argument(..., help="Pair name from 'specgen pairs'.")) -> None:
    """Download both files of a pair into the Hugging Face cache; print their paths.

    Each download is checked against the SHA-256 the hub gives for it (once per file; stderr
    says what was verified). A damaged download is removed, and the pull fails.
    """
    from specgen.llama.pair import preflight
    from specgen.models.hub import fetch_pair, verify
    from specgen.models.paths import ModelPaths
    from specgen.models.registry import load_registry

    pair = load_registry().get(name)
    paths = fetch_pair(pair, precheck=True)
    checks = [verify(getattr(pair, role), paths[role]) for role in ("target", "draft")]
    for check in checks:
        print(verification_line(check), file=sys.stderr)
    preflight(ModelPaths(paths["target"], paths["draft"]))  # before the paths: stdout holds only usable files
    print(f"{paths['target']}\n{paths['draft']}")


def verification_line(check) -> str:
    """One stderr line on what is known of a pulled file's bytes (a hub.Verification)."""
    from datetime import datetime

    from specgen.models.hub import NOT_VERIFIABLE, VERIFIED

    name = check.path.name
    when = datetime.fromtimestamp(check.checked_at).strftime("%Y-%m-%d %H:%M")
    if check.state == VERIFIED:
        return f"specgen: verified {name}: its SHA-256 {check.sha256[:16]}... is the hub's (checked {when})"
    if check.state == NOT_VERIFIABLE:
        return f"specgen: {name} is not verifiable: the hub gives no SHA-256 for it (a file kept in git, not LFS)"
    return f"specgen: {name} is not verified: {check.reason}"


@app.command()
def check(
    target: Path = typer.Option(..., "--target", help="Target model (GGUF file).", dir_okay=False),
    draft: Path = typer.Option(..., "--draft", help="Draft model (GGUF file).", dir_okay=False),
) -> None:
    """Can this draft speak for this target? Compares the GGUF headers; loads no weights."""
    from specgen.models.gguf import read_info

    report_verdict(read_info(target), read_info(draft))


def report_verdict(target, draft) -> None:
    """Print the compatibility verdict of two GGUF headers on stdout; exit 1 when incompatible."""
    from specgen.models.vocab import check_vocabularies

    verdict = check_vocabularies(target, draft)
    print(f"{'compatible' if verdict.compatible else 'incompatible'}: {verdict.reason}")
    if not verdict.compatible:
        raise typer.Exit(1)


@app.command(epilog=examples("specgen doctor", "specgen doctor --json > doctor.json"))
def doctor(
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of text.")] = False,
) -> None:
    """What this build and machine can do: versions, backend, GPU offload, CPU features, kernels,
    threads, model folders, registry files, downloaded pairs, and how to rebuild for your GPU."""
    from specgen.doctor import as_json, gather, render

    report = gather()
    print(as_json(report) if json_out else render(report))
