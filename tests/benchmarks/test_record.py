"""The measurement record stays one a newcomer can follow: every results folder is listed in
benchmarks/README.md with one line and has a README of its own, and no script kept as data
under benchmarks/results reaches into specgen (such a script breaks silently when the code
changes; one that is run again belongs in benchmarks/scripts, where CI runs it)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
INDEX = ROOT / "benchmarks" / "README.md"
# an import of specgen or of the test helpers that import it, in Python or in a shell's `python -c`
IMPORTS_SPECGEN = re.compile(
    r"^\s*(from|import)\s+(specgen|copyreplay|tinymodels)\b"
    r"|[\"';]\s*(from|import)\s+specgen\b",
    re.MULTILINE,
)


def folders() -> list[str]:
    return sorted(p.name for p in RESULTS.iterdir() if p.is_dir())


def indexed_lines() -> dict[str, list[str]]:
    """Folder name -> the index lines that link it as results/NAME/."""
    found: dict[str, list[str]] = {}
    for line in INDEX.read_text().splitlines():
        for name in re.findall(r"\]\(results/([^/)]+)/\)", line):
            found.setdefault(name, []).append(line)
    return found


def test_every_results_folder_has_one_line_in_the_index():
    indexed = indexed_lines()
    missing = [name for name in folders() if name not in indexed]
    rows = " ".join(f"`| [{name}](results/{name}/) | WHAT WAS MEASURED | MACHINE |`" for name in missing)
    assert not missing, f"benchmarks/README.md lacks a line for {', '.join(missing)}; add to its results table: {rows}"
    gone = sorted(set(indexed) - set(folders()))
    assert not gone, f"benchmarks/README.md links results folders that do not exist: {gone}"
    rows_of = {name: [line for line in lines if line.startswith(f"| [{name}]")] for name, lines in indexed.items()}
    twice = sorted(name for name, rows in rows_of.items() if len(rows) != 1)
    assert not twice, f"each folder heads exactly one row of the index: {twice}"


def test_every_results_folder_has_a_readme():
    missing = [name for name in folders() if not (RESULTS / name / "README.md").is_file()]
    assert not missing, (
        "results folders without a README.md (say what was run, on which commit and machine, "
        f"and what it showed): {missing}"
    )


def test_no_script_under_results_imports_specgen():
    offenders = [
        str(path.relative_to(ROOT))
        for path in sorted(RESULTS.rglob("*"))
        if path.suffix in (".py", ".sh") and IMPORTS_SPECGEN.search(path.read_text(errors="replace"))
    ]
    assert not offenders, (
        "scripts under benchmarks/results import specgen: move one that is run again to "
        "benchmarks/scripts (with a test in tests/benchmarks/test_scripts.py), or describe it "
        f"in its folder's README and delete it: {offenders}"
    )


def test_the_import_check_sees_the_ways_scripts_import():
    for text in (
        "from specgen.llama.model import Model\n",
        "import specgen\n",
        "    from specgen import x\n",
        "from copyreplay import replay\n",
        'python3 -c "from specgen.llama.library import llama; llama()"\n',
        "python -c 'import specgen; print(1)'\n",
    ):
        assert IMPORTS_SPECGEN.search(text), text
    for text in (
        "python -m specgen bench x.jsonl\n",
        "specgen run -k 0\n",
        "SHAPES = 'specgen.random.shapes'\n",
        "# loads specgen's Model\n",
    ):
        assert not IMPORTS_SPECGEN.search(text), text
