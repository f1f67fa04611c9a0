"""Turn the command line's model options (--pair, --target, --draft, --no-draft, --offline)
into the files to load, downloading a registry pair's missing files first."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specgen.errors import UsageError
from specgen.models.hub import fetch_pair
from specgen.models.local import drafts_for
from specgen.models.paths import ModelPaths
from specgen.models.registry import DEFAULT_DRAFT_TOKENS, load_registry


@dataclass(frozen=True)
class Selection:
    """The model files a command will load, and the draft length that suits them."""

    paths: ModelPaths
    draft_tokens: int


def resolve_models(
    pair: str | None, target: Path | None, draft: Path | None, no_draft: bool, offline: bool
) -> Selection:
    """Turn --pair/--target/--draft/--no-draft into model paths, pulling a pair's missing files.

    With neither --pair nor --target, the registry's default pair is used.
    """
    if pair is not None and (target is not None or draft is not None):
        raise UsageError("--pair names both models; drop --target/--draft, or drop --pair")
    if target is None:
        if draft is not None:
            raise UsageError("--draft needs --target PATH (or use --pair NAME for a matched pair)")
        registry = load_registry()
        chosen = registry.get(registry.default if pair is None else pair)
        paths = fetch_pair(chosen, ("target",) if no_draft else ("target", "draft"), offline, precheck=True)
        return Selection(ModelPaths(paths["target"], paths.get("draft")), chosen.draft_tokens)
    if draft is None and not no_draft:
        raise UsageError(
            f"no draft model: pass --draft PATH{_drafts_on_disk(target)}, "
            "or --no-draft to decode without one (drafts copied from the text)"
        )
    return Selection(ModelPaths(target, None if no_draft else draft), DEFAULT_DRAFT_TOKENS)


def _drafts_on_disk(target: Path) -> str:
    """' (compatible drafts on disk: A, B)' from a scan of the usual model folders, or a hint.
    An unreadable target raises its own GGUFError here, which is the problem to fix first."""
    found = [str(model.path) for model in drafts_for(target)]
    if not found:
        return " (no compatible draft found on disk; 'specgen pairs --local' lists what is there)"
    more = f" and {len(found) - 3} more ('specgen pairs --local')" if len(found) > 3 else ""
    return f" (compatible drafts on disk: {', '.join(found[:3])}{more})"
