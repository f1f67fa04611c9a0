"""`specgen bench` end to end on the tiny models: JSON and CSV consistency, the figure script, stdin,
cached costs too slow for auto rows, and the sampled audit's report."""

from __future__ import annotations

import csv
import importlib.util
import json
import statistics
import time
from pathlib import Path

import pytest
from benchcli import CODE, PROSE, call, models
from costfiles import plant_slow_costs

from specgen.llama.calibrate import DEPTH_MIN

FIGURE = Path(__file__).parents[2] / "benchmarks" / "scripts" / "make_figure.py"


@pytest.fixture(scope="module")
def report(tiny_models, tmp_path_factory):
    """One bench over two prompt files: (exit code, stdout, JSON document, CSV rows, folder)."""
    folder = tmp_path_factory.mktemp("bench")
    (folder / "code.txt").write_text(CODE)
    (folder / "prose.jsonl").write_text(PROSE)
    argv = [
        "bench",
        str(folder / "code.txt"),
        str(folder / "prose.jsonl"),
        *models(tiny_models),
        "-k",
        "2,4,auto",
        "-r",
        "2",
        "--warmup",
        "1",
        "--json",
        str(folder / "out.json"),
        "--csv",
        str(folder / "out.csv"),
    ]
    started = time.perf_counter()
    code, stdout, _ = call(argv)
    (folder / "wall_s").write_text(str(time.perf_counter() - started))  # an outside clock
    document = json.loads((folder / "out.json").read_text())
    with open(folder / "out.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return code, stdout, document, rows, folder


def test_bench_reports_consistent_numbers(report):
    code, stdout, doc, rows, folder = report
    assert code == 0
    assert doc["schema"] == "specgen-bench/1"
    names = [c["name"] for c in doc["configs"]]
    assert names == ["target", "draft-k2", "draft-k4", "draft-auto", "lookup-k2", "lookup-k4"]
    assert doc["settings"]["draft_tokens"] == [2, 4, "auto"]
    assert [p["name"] for p in doc["prompts"]] == ["code:1", "code:2", "self", "prose:2"]
    assert len(doc["runs"]) == 4 * 6 * 2
    results = doc["results"]
    assert {(r["group"], r["key"]) for r in results} >= {("overall", "all"), ("kind", "code"), ("prompt", "self")}
    # each prompt's medians and speedups, recomputed here from the raw runs
    by_run: dict[tuple[str, str], list[float]] = {}
    for run in doc["runs"]:
        by_run.setdefault((run["prompt"], run["config"]), []).append(run["tokens"] / run["decode_s"])
    for r in results:
        rate = r["tokens_per_second"]
        assert rate["min"] <= rate["median"] <= rate["max"]
        if r["group"] == "prompt":
            assert rate["median"] == pytest.approx(statistics.median(by_run[r["key"], r["config"]]))
            assert r["speedup"] == pytest.approx(rate["median"] / statistics.median(by_run[r["key"], "target"]))
        if r["drafted"]:
            assert r["prediction"]["speedup"] > 0
        if r["config"] == "target":
            assert r["speedup_interval"] is None and r["outcome"] is None
        else:
            ci = r["speedup_interval"]
            assert ci["low"] <= ci["high"] and r["outcome"] in ("faster", "slower", "unclear")
        split = r["time_split"]
        assert split["draft"] + split["verify"] + split["other"] == pytest.approx(1.0, abs=1e-6)
        assert 0 < split["python"] < 1  # the rounds less the models' passes: part of the three above
    measured = sum(run["decode_s"] + run["prefill_s"] for run in doc["runs"])
    assert measured <= float((folder / "wall_s").read_text())  # no run claims more speed than the clock allows
    assert doc["audit"]["identical"] is True and doc["distribution_audit"] is None
    costs = doc["step_costs"]
    assert costs["verify"]["1"] > 0 and costs["draft_step"] > 0
    timed = {int(n): seconds for n, seconds in costs["verify"].items()}
    ceiling = costs["copy_ceiling"]  # at least the best of the timed sizes, kept whole (sizes between interpolated)
    assert 1 <= ceiling["tokens"] <= 64 and ceiling["speedup"] >= max(n * timed[1] / timed[n] for n in timed) - 1e-9
    assert (
        f"a copy kept whole gains at most {ceiling['speedup']:.2f}× here ({ceiling['tokens']} tokens a pass)" in stdout
    )
    overall = {r["config"]: r["tokens_per_second"]["median"] for r in results if r["group"] == "overall"}
    fastest = max((c for c in overall if c != "target"), key=overall.get)
    assert doc["peak_rss_mib"] > 0 and doc["verdict"]["best"] == fastest
    assert doc["memory_mib"]["anonymous"] > 0 and doc["memory_mib"]["file"] > 0
    assert len(rows) == len(results) and rows[0]["config"] == "target"
    assert "speedup" in stdout and "verdict:" in stdout and "all 48 runs give the target alone's tokens" in stdout
    assert "95% interval" in stdout and "repacked kernels on" in stdout.splitlines()[0]


def test_figure_script_draws_one_line_per_kind_and_drafter(report):
    *_, folder = report
    spec = importlib.util.spec_from_file_location("make_figure", FIGURE)
    figure = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(figure)
    figure.main([str(folder / "out.json"), "-o", str(folder / "speedup.svg")])
    svg = (folder / "speedup.svg").read_text()
    assert svg.startswith("<svg") and svg.count("<polyline") == 6
    assert "code, draft model" in svg and "prose, prompt lookup" in svg and "code, auto K" in svg
    assert ">auto</text>" in svg


def test_json_to_stdout_with_prompts_on_stdin_and_no_draft_model(tiny_models):
    code, stdout, stderr = call(
        ["bench", "-", *models(tiny_models, draft=False), "-k", "3", "-r", "1", "--warmup", "0", "--json", "-"],
        stdin=PROSE,
    )
    assert code == 0
    doc = json.loads(stdout)
    assert [c["name"] for c in doc["configs"]] == ["target", "lookup-k3"]
    assert doc["settings"]["draft"] is None and doc["prompts"][1]["kind"] == "stdin"
    assert "verdict:" in stderr


def test_a_long_prompt_gets_its_own_copy_ceiling_and_a_short_one_the_calibrations(tiny_models, tmp_path):
    """A prompt of DEPTH_MIN tokens or more is timed again where its passes run: its ceiling comes
    from its own costs, and the header line gives the range; a short prompt's is the calibration's."""
    long_text = "def add(a, b):\n    return a + b\n" * 60
    lines = [{"name": "long", "prompt": long_text}, {"name": "short", "prompt": "def add(a, b):"}]
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    argv = ["bench", str(tmp_path / "p.jsonl"), *models(tiny_models, draft=False), "-k", "auto", "-r", "1"]
    code, stdout, stderr = call([*argv, "--warmup", "0", "--json", str(tmp_path / "bench.json")])
    assert code == 0, stderr
    doc = json.loads((tmp_path / "bench.json").read_text())
    long, short = doc["prompts"]
    assert long["prompt_tokens"] >= DEPTH_MIN > short["prompt_tokens"]
    assert short["copy_ceiling"] == doc["step_costs"]["copy_ceiling"]
    assert long["copy_ceiling"]["speedup"] > 0 and 1 <= long["copy_ceiling"]["tokens"] <= 64
    assert f"after {long['prompt_tokens']}-token prompts {long['copy_ceiling']['speedup']:.2f}×" in stdout + stderr


def test_a_bench_keeps_the_costs_it_measured_in_place_of_the_cached_ones(tiny_models, tmp_path, monkeypatch):
    """The cache key names the host and its CPU, which a VM moved to another host of the same name
    keeps: a bench, which measures the machine anyway, leaves its own measurement for the runs
    after it, in place of the costs cached before (here planted 50 times too slow)."""
    monkeypatch.setenv("SPECGEN_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "p.txt").write_text("def add(a, b):")
    argv = [
        "bench",
        str(tmp_path / "p.txt"),
        "--target",
        str(tiny_models["target"]),
        "--raw",
        "-t",
        "1",
        "-n",
        "40",
        "--no-draft",
        "-k",
        "auto",
        "-r",
        "1",
        "--warmup",
        "0",
    ]
    assert call(argv)[0] == 0  # the auto row measured this machine's costs and cached them
    stored = plant_slow_costs(tmp_path / "cache")
    planted = json.loads(stored.read_text())["verify"]
    assert call([*argv, "--json", str(tmp_path / "bench.json")])[0] == 0
    reported = json.loads((tmp_path / "bench.json").read_text())["step_costs"]["verify"]
    kept = json.loads(stored.read_text())["verify"]
    assert kept == reported and kept["1"] < planted["1"] / 10


def test_sampled_bench_audits_distributions(tiny_models, tmp_path):
    (tmp_path / "p.txt").write_text("the print of self")
    code, stdout, _ = call(
        [
            "bench",
            str(tmp_path / "p.txt"),
            *models(tiny_models),
            "-k",
            "2",
            "-r",
            "1",
            "--warmup",
            "0",
            "--temp",
            "0.8",
            "--top-p",
            "0.95",
            "--seed",
            "3",
            "--audit-seeds",
            "60",
            "--audit-tokens",
            "3",
            "--json",
            str(tmp_path / "o.json"),
        ]
    )
    assert code == 0 and "distribution: PASS at the 0.001 level" in stdout and "exactness" not in stdout
    doc = json.loads((tmp_path / "o.json").read_text())
    audit = doc["distribution_audit"]
    assert audit["passed"] and audit["seeds"] == 60 and audit["tokens"] == 3
    assert [c["config"] for c in audit["checks"]] == ["draft-k2", "lookup-k2"]
    assert doc["settings"]["top_p"] == 0.95 and doc["settings"]["audit_seeds"] == 60


def test_sampled_bench_without_audit_seeds_says_so(tiny_models, tmp_path):
    (tmp_path / "p.txt").write_text("the print of self")
    code, stdout, _ = call(
        [
            "bench",
            str(tmp_path / "p.txt"),
            *models(tiny_models),
            "-k",
            "2",
            "-r",
            "1",
            "--warmup",
            "0",
            "--no-lookup",
            "--temp",
            "0.8",
            "--audit-seeds",
            "0",
        ]
    )
    assert code == 0 and "distribution audit was off" in stdout
