"""The package layout is the architecture: imports point down the layers, and one module owns
each heavy dependency. Read from the source with ast, so a function-level import counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "specgen"
# a package may import only the packages listed for it (and specgen.errors, specgen.storage)
ALLOWED = {
    "decoding": {"decoding"},
    "models": {"models", "decoding"},
    "llama": {"llama", "models", "decoding"},
    "engine": {"engine", "llama", "models", "decoding"},  # builds and runs a generation for the front ends
    "bench": {"bench", "engine", "llama", "models", "decoding"},
    "terminal": {"terminal", "engine", "llama", "models", "decoding"},
    "serve": {"serve", "engine", "llama", "models", "decoding"},
}
BASE = {"errors", "storage", "__version__"}


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module if node.level == 0 else f"specgen.?{node.module}")
            found.update(f"{node.module}.{alias.name}" for alias in node.names if node.level == 0)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def modules():
    return sorted(PACKAGE.rglob("*.py"))


def layer_of(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "specgen" else None


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_a_package_imports_only_the_layers_below_it(package):
    wrong = []
    for path in (PACKAGE / package).rglob("*.py"):
        for name in imports(path):
            layer = layer_of(name)
            if layer is not None and layer not in ALLOWED[package] and layer not in BASE:
                wrong.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not wrong


def test_no_relative_imports_hide_the_layers():
    assert not [p for p in modules() for name in imports(p) if name.startswith("specgen.?")]


@pytest.mark.parametrize("dependency, owner", [("llama_cpp", "llama/library.py"), ("huggingface_hub", "models/hub.py")])
def test_one_module_owns_each_heavy_dependency(dependency, owner):
    users = {
        str(p.relative_to(PACKAGE))
        for p in modules()
        if any(name == dependency or name.startswith(dependency + ".") for name in imports(p))
    }
    assert users == {owner}


def test_the_loop_does_no_io():
    for path in (PACKAGE / "decoding").rglob("*.py"):
        names = imports(path)
        assert not names & {"os", "pathlib", "json", "subprocess", "socket", "platformdirs"}, path


def test_the_drafters_stand_below_the_policy_that_chooses_among_them():
    """decoding/drafters/ uses only itself, the sampling and token helpers, what it asks of a
    model (protocols) and the clock (a draft model's passes are timed): the policy (policy,
    copy_rates) and the auto drafter composing them (auto) stand above it."""
    allowed = {
        "specgen.decoding.drafters",
        "specgen.decoding.sampling",
        "specgen.decoding.tokens",
        "specgen.decoding.protocols",
        "specgen.decoding.clock",
    }
    wrong = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in (PACKAGE / "decoding" / "drafters").rglob("*.py")
        for name in imports(path)
        if name.startswith("specgen.") and not any(name == a or name.startswith(a + ".") for a in allowed)
    ]
    assert not wrong


# what only the engine may call: a front end that ran the loop or chose a drafter itself would
# build its generation by hand again, and drift from the others (issue 47)
ENGINE_ONLY = {
    "specgen.decoding.loop.generate",
    "specgen.decoding.auto.AutoDrafter",
    "specgen.decoding.drafters.prediction.PredictionDrafter",
    "specgen.engine.drafting.drafter_for",
}


def test_only_the_engine_builds_and_runs_a_generation():
    wrong = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in modules()
        if path.parent.name not in ("engine", "decoding")
        for name in imports(path) & ENGINE_ONLY
    ]
    assert not wrong
