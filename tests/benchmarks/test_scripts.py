"""Every script under benchmarks/scripts runs, so that none breaks silently when the code it uses
changes: each runs on the recorded data of a results folder or on the suite's tiny models in a
few seconds, or, where it needs what CI lacks (a running server, llama.cpp's own tools, a GPU
machine), is checked by `--help` or `bash -n`. A script added without a test here fails
`test_every_script_is_covered`."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "benchmarks" / "scripts"
RESULTS = ROOT / "benchmarks" / "results"
RECORDED = ROOT / "tests" / "data" / "greedy-outputs.json"

# each script and the test that runs it; a script missing here fails the first test
COVERED = {
    "copy_ceiling.py": "test_copy_ceiling_prices_a_tiny_models_schema_reply",
    "copy_offers.py": "test_copy_offers_tallies_every_offer_of_a_replay",
    "delay_proxy.py": "test_delay_proxy_holds_each_direction",
    "depth_curve.py": "test_depth_curve_times_every_calibrated_size_after_its_depth",
    "fim_bench.py": "test_server_scripts_answer_help",
    "kind_calibrated.py": "test_kind_calibrated_replays_both_ways_within_the_hindsight_bound",
    "make_figure.py": "test_make_figure_draws_a_recorded_bench",
    "query_bench.py": "test_query_bench_times_every_history_length",
    "reach_calibration.py": "test_reach_calibration_counts_each_offer_at_every_length_it_reaches",
    "record_outputs.py": "test_record_outputs_records_the_target_alones_reply",
    "replay_curves.py": "test_replay_curves_means_and_added_delays",
    "specbench_prompts.py": "test_specbench_prompts_draws_disjoint_splits",
    "target_confidences.py": "test_target_confidences_reads_the_greedy_tokens_as_the_rows_most_likely",
    "llama-cpp/compare.py": "test_compare_reads_llama_cpp_lines_as_recorded",
    "llama-cpp/template_prompts.py": "test_template_prompts_writes_the_chat_template",
    "llama-cpp/draft_free.sh": "test_draft_free_takes_the_end_of_generation_token_off_a_reply_that_ended",
    "llama-cpp/json_check.sh": "test_shell_scripts_parse",
    "llama-cpp/serve_vs_llama_server.sh": "test_shell_scripts_parse",
    "llama-cpp/noamx.c": "test_noamx_shim_compiles",
    "device/common.sh": "test_shell_scripts_parse",
    "device/pack.sh": "test_shell_scripts_parse",
    "device/prepare.sh": "test_shell_scripts_parse",
    "auto_python.py": "test_auto_python_times_autos_parts_on_rounds_the_draft_model_drafted",
    "device/mission7b.sh": "test_mission7b_dry_run_runs_every_step_without_llama_cpp_tools",
    "device/standins.py": "test_standins_rows_never_tie_at_a_real_vocabulary",
    "device/summary.py": "test_mission7b_dry_run_runs_every_step_without_llama_cpp_tools",
}


def script(name: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run benchmarks/scripts/NAME with this Python from the repository root."""
    return subprocess.run(
        [sys.executable, str(SCRIPTS / name), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
    )


def ran(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_every_script_is_covered():
    found = {str(p.relative_to(SCRIPTS)) for p in SCRIPTS.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert found == set(COVERED), (
        f"scripts without a smoke test here: {sorted(found - set(COVERED))}; "
        f"listed but gone: {sorted(set(COVERED) - found)}"
    )
    names = {name for name in globals() if name.startswith("test_")}
    assert set(COVERED.values()) <= names


def test_make_figure_draws_a_recorded_bench(tmp_path):
    reports = [RESULTS / "2026-11-22-repacked-kernels" / name for name in ("code.json", "chat.json")]
    out = tmp_path / "speedup.svg"
    ran(script("make_figure.py", *map(str, reports), "-o", str(out)))
    svg = out.read_text()
    assert svg.startswith(("<svg", "<?xml"))
    kinds = {
        row["key"] for report in reports for row in json.loads(report.read_text())["results"] if row["group"] == "kind"
    }
    assert len(kinds) > 1 and all(f">{kind}, auto K<" in svg for kind in kinds)  # every kind is drawn


def test_replay_curves_means_and_added_delays():
    flat = "flat=" + ",".join(f"{n}:0.01" for n in (1, 2, 4, 8, 16, 32, 64))
    out = ran(
        script(
            "replay_curves.py", str(RECORDED), "--curve", flat, "--curve", "epyc", "--add-ms", "5", "--example", "both"
        )
    )
    recorded = json.loads(RECORDED.read_text())["outputs"]
    rows: dict[str, list[float]] = {}
    for line in out.splitlines():
        name, output = line.split()[:2]
        found = re.search(r"with example ([\d.]+)", line)
        assert found, line
        if output != "geometric":
            rows.setdefault(name, []).append(float(found.group(1)))
            continue
        mean = float(found.group(1))
        assert mean == pytest.approx(math.exp(sum(map(math.log, rows[name])) / len(rows[name])), abs=2e-3)
    assert list(rows) == ["flat", "flat+5ms", "epyc", "epyc+5ms"]
    assert all(len(values) == len(recorded) for values in rows.values())
    # a pass of 64 tokens costs what one does: every kept copy is free, so no reply is slower
    assert min(rows["flat"]) >= 1.0 and max(rows["flat"]) > 1.5
    # a flat curve with 5 ms more on every pass is still flat: the same rounds, the same ratios
    assert rows["flat+5ms"] == rows["flat"]
    # a fixed cost added to every pass is paid once by a copy of many tokens: copies gain more
    assert sum(rows["epyc+5ms"]) > sum(rows["epyc"])


def test_replay_curves_refuses_a_bad_curve_in_one_line():
    for bad in ("nonesuch", "mine=1:x", "mine=2:0.1"):
        result = script("replay_curves.py", str(RECORDED), "--curve", bad)
        assert result.returncode == 2 and result.stdout == ""
        assert "Traceback" not in result.stderr and "--curve" in result.stderr.splitlines()[-1]


def test_copy_offers_tallies_every_offer_of_a_replay():
    out = ran(script("copy_offers.py", str(RECORDED)))
    counts = [int(n) for n in re.findall(r"of +(\d+)", out)]
    assert counts and sum(counts) > 0


def test_reach_calibration_counts_each_offer_at_every_length_it_reaches():
    """An offer counted at j is counted at every shorter length, and one kept for j tokens was kept
    for fewer: over each group, offers and kept ones never grow with j; and some offers held."""
    out = ran(script("reach_calibration.py", str(RECORDED)))
    for block in out.split(":\n")[1:]:
        rows = [line for line in block.splitlines() if line.strip().startswith("j=")]
        cells = [re.findall(r"([\d.]+)/([\d.]+) \( *(\d+)\)", row) for row in rows]
        offers = [sum(int(n) for _, _, n in row) for row in cells]
        kept = [sum(float(share) * int(n) for _, share, n in row) for row in cells]
        assert len(rows) == 7 and offers[0] > 0 and kept[0] > 0
        assert offers == sorted(offers, reverse=True)
        rounding = [0.005 * n for n in offers]  # shares print to two decimals
        assert all(kept[i + 1] <= kept[i] + rounding[i] + rounding[i + 1] for i in range(len(kept) - 1))


def test_reach_calibration_splits_each_group_by_the_targets_confidence(tmp_path):
    """Split by a confidence file (two positions in three unsure), the two halves of each group add
    up to the group's offers at every length and bin, and both halves hold offers."""
    recorded = json.loads(RECORDED.read_text())["outputs"]
    unsure = {name: [[0.5 if i % 3 else 1.0, 0.5] for i in range(len(r["output"]))] for name, r in recorded.items()}
    confidences = {str(RECORDED): unsure}
    (tmp_path / "conf.json").write_text(json.dumps(confidences))
    whole = ran(script("reach_calibration.py", str(RECORDED)))
    split = ran(script("reach_calibration.py", str(RECORDED), "--confidences", str(tmp_path / "conf.json")))

    def counts(out: str) -> dict[tuple[str, str], list[int]]:
        found = {}
        for block in re.split(r"\n(?=\S[^\n]*:\n)", out)[1:]:  # a group's name line, then its rows
            group, body = block.split(":\n", 1)
            for row in body.splitlines():
                j = re.match(r" +j= *(\d+)", row)
                if j:
                    found[(group, j.group(1))] = [int(n) for n in re.findall(r"\( *(\d+)\)", row)]
        return found

    halves, groups = counts(split), counts(whole)
    assert {group for group, _ in halves} == {"grounded, sure", "grounded, unsure", "other, sure", "other, unsure"}
    for (group, j), offers in groups.items():
        assert sum(offers) == sum(halves[(f"{group}, sure", j)]) + sum(halves[(f"{group}, unsure", j)])
    assert sum(halves[("grounded, unsure", "1")]) > 0 and sum(halves[("grounded, sure", "1")]) > 0


def test_confidence_scripts_refuse_a_missing_file_or_recording_in_one_line(tmp_path):
    """A file that is not there, or a confidence file without the recording asked about: exit 2
    with argparse's one line, not a traceback."""
    (tmp_path / "conf.json").write_text(json.dumps({"other.json": {}}))
    for result in (
        script("target_confidences.py", str(tmp_path / "none.gguf"), str(RECORDED), "--out", str(tmp_path / "o")),
        script("reach_calibration.py", str(tmp_path / "none.json")),
        script("reach_calibration.py", str(RECORDED), "--confidences", str(tmp_path / "conf.json")),
    ):
        assert result.returncode == 2 and "Traceback" not in result.stderr
        last = result.stderr.strip().splitlines()[-1]
        assert last.endswith(("none.gguf", "none.json", "run target_confidences.py on it")), last


def test_kind_calibrated_replays_both_ways_within_the_hindsight_bound(tmp_path):
    """From reach_calibration.py's table of the recorded outputs, both kinds replay as auto and
    with estimates calibrated by kind; neither beats the hindsight drafting of both runs' offers."""
    table = tmp_path / "cal.txt"
    table.write_text(ran(script("reach_calibration.py", str(RECORDED))))
    out = ran(script("kind_calibrated.py", str(table), str(RECORDED)))
    row = r"(grounded|other) +n= *(\d+) auto ([\d.]+) .* kind-calibrated ([\d.]+) .* hindsight ([\d.]+)"
    found = re.findall(row, out)
    assert {kind for kind, *_ in found} == {"grounded", "other"}
    for _, outputs, auto, calibrated, hindsight in found:
        assert int(outputs) > 0 and float(hindsight) >= 1.0
        assert float(auto) <= float(hindsight) and float(calibrated) <= float(hindsight)


def test_query_bench_times_every_history_length():
    out = ran(script("query_bench.py"))
    rows = [line.split() for line in out.splitlines() if line.strip() and line.split()[0].isdigit()]
    assert [int(row[0]) for row in rows] == [100, 1_000, 4_000, 32_000]
    assert all(0 < float(row[1]) <= float(row[3]) for row in rows)  # median at most p99


def test_compare_reads_llama_cpp_lines_as_recorded():
    """The folder's draft-free lines give the same best method and rate per prompt as the table it
    recorded with them (whose specgen columns came from an earlier bench of the same prompts)."""
    folder = RESULTS / "2026-11-26-specbench-vs-llama-cpp"
    out = ran(script("llama-cpp/compare.py", str(folder / "draft_free.txt"), str(folder / "bench.json")))

    def best_rates(table: str) -> dict[str, tuple[str, str]]:
        return {
            cells[0]: (cells[1], cells[2])
            for cells in (line.strip("|").split(" | ") for line in table.splitlines() if line.count("|") == 7)
            if cells[0].strip() not in ("prompt", "---")
        }

    recorded = best_rates((folder / "compare-first-run.md").read_text())
    assert len(recorded) == 30 and best_rates(out) == recorded


STAND_IN = """#!/usr/bin/env bash
# prints what llama-speculative-simple logs: a reply of 12 tokens and the end-of-generation token,
# or with -n under 12 the n + 1 tokens it decodes before it stops for length
n=256; while [ $# -gt 0 ]; do [ "$1" = -n ] && n=$2; shift; done
decoded=$(( n < 12 ? n + 1 : 13 ))
echo "I encoded   26 tokens in    0.472 seconds, speed:   55.128 t/s" >&2
printf 'I decoded %4d tokens in %8.3f seconds, speed: %8.3f t/s\\n' $decoded 0.5 $(( decoded * 2 )) >&2
echo "I accept    = 0.000%" >&2
"""


@pytest.mark.parametrize(("n", "stop", "specgen_counts"), [(256, "eog", 12), (8, "length", 9)])
def test_draft_free_takes_the_end_of_generation_token_off_a_reply_that_ended(tmp_path, n, stop, specgen_counts):
    """A reply that ended before N tokens is marked `stop eog`, and compare.py rates it by the
    tokens before the end-of-generation token (12 in 0.5 s: 24 tok/s, not the printed 26); one
    cut at N is marked `stop length` and rated as printed."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "prompts").mkdir()
    stand_in = tmp_path / "bin" / "llama-speculative-simple"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    (tmp_path / "prompts" / "qa-1.txt").write_text("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    command = [SCRIPTS / "llama-cpp" / "draft_free.sh", tmp_path / "prompts", "t.gguf", tmp_path / "bin"]
    result = subprocess.run(
        ["bash", *map(str, command)],
        capture_output=True,
        text=True,
        env={**os.environ, "N": str(n)},
        check=True,
    )
    lines = result.stdout.splitlines()
    assert len(lines) == 5 and all(line.endswith(f"| stop {stop}") for line in lines)
    (tmp_path / "draft_free.txt").write_text(result.stdout)
    runs = [{"prompt": "qa-1", "config": config, "tokens_per_second": 20.0} for config in ("target", "lookup-auto")]
    (tmp_path / "bench.json").write_text(json.dumps({"runs": runs}))
    out = ran(script("llama-cpp/compare.py", str(tmp_path / "draft_free.txt"), str(tmp_path / "bench.json")))
    row = next(line for line in out.splitlines() if line.startswith("| qa-1 |"))
    assert row.split(" | ")[2] == f"{specgen_counts / 0.5:.1f}"


def test_compare_takes_specgens_median_over_an_even_number_of_repeats_as_the_mean_of_the_middle_two(tmp_path):
    """Two repeats at 18.0 and 20.4 tok/s are 19.2 tok/s, as `specgen bench` prints the median;
    against llama.cpp's 16.16 that is 1.19x (the upper of the two would say 20.4 and 1.26x)."""
    line = "qa-1 {} | decoded  101 tokens in    6.250 seconds, speed:   16.160 |  | stop length\n"
    (tmp_path / "draft_free.txt").write_text("".join(line.format(m) for m in ("ngram-simple", "ngram-mod")))
    runs = [
        {"prompt": "qa-1", "config": config, "tokens_per_second": rate}
        for config, rate in (("target", 9.0), ("target", 10.0), ("lookup-auto", 18.0), ("lookup-auto", 20.4))
    ]
    (tmp_path / "bench.json").write_text(json.dumps({"runs": runs}))
    out = ran(script("llama-cpp/compare.py", str(tmp_path / "draft_free.txt"), str(tmp_path / "bench.json")))
    row = next(line for line in out.splitlines() if line.startswith("| qa-1 |")).strip("|").split(" | ")
    assert [cell.strip() for cell in row[2:]] == ["16.2", "9.5", "19.2", "1.19×"]


def test_compare_pairs_a_bench_name_with_a_colon_with_the_file_template_prompts_named_with_a_dash(tmp_path):
    """A prompt without a name is `new:1` in the bench and `new-1` in llama.cpp's lines (its
    file's name): 20 against 16 tok/s is 1.25x. Prompts with nothing in common are one line on
    stderr and exit 1."""
    line = "new-1 ngram-mod | decoded  101 tokens in    6.250 seconds, speed:   16.000 |  | stop length\n"
    (tmp_path / "draft_free.txt").write_text(line)
    runs = [{"prompt": "new:1", "config": config, "tokens_per_second": 20.0} for config in ("target", "lookup-auto")]
    (tmp_path / "bench.json").write_text(json.dumps({"runs": runs}))
    out = ran(script("llama-cpp/compare.py", str(tmp_path / "draft_free.txt"), str(tmp_path / "bench.json")))
    assert next(line for line in out.splitlines() if line.startswith("| new-1 |")).endswith("| 1.25× |")
    (tmp_path / "other.txt").write_text(line.replace("new-1", "qa-7"))
    failed = script("llama-cpp/compare.py", str(tmp_path / "other.txt"), str(tmp_path / "bench.json"))
    assert failed.returncode == 1 and "no prompt is in both" in failed.stderr and "Traceback" not in failed.stderr


def test_specbench_prompts_draws_disjoint_splits(tmp_path):
    kinds = {"writing": "chat", "translation": "translation", "math_reasoning": "math"}
    questions = [
        {"question_id": 100 * n + i, "category": category, "turns": [f"question {100 * n + i}", "and then?"]}
        for n, category in enumerate(kinds)
        for i in range(8)
    ]
    (tmp_path / "question.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    ran(script("specbench_prompts.py", str(tmp_path / "question.jsonl"), str(tmp_path / "out"), "--per-kind", "3"))
    for kind in kinds.values():
        dev, held = (
            [json.loads(line) for line in (tmp_path / "out" / split / f"{kind}.jsonl").read_text().split("\n") if line]
            for split in ("dev", "heldout")
        )
        assert len(dev) == len(held) == 3
        assert not {r["name"] for r in dev} & {r["name"] for r in held}
        assert all(r["kind"] == kind and r["prompt"] == f"question {r['name'].split('-')[-1]}" for r in dev + held)
        assert all(r.get("next_turns") == ["and then?"] for r in dev + held)


def test_delay_proxy_holds_each_direction():
    """A round trip through the proxy takes at least twice its one-way delay longer than without."""
    upstream = socket.create_server(("127.0.0.1", 0))

    def echo() -> None:
        connection, _ = upstream.accept()
        with connection:
            while data := connection.recv(4096):
                connection.sendall(data)

    threading.Thread(target=echo, daemon=True).start()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proxy = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "delay_proxy.py"), str(port), f"127.0.0.1:{upstream.getsockname()[1]}", "150"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                client = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except ConnectionRefusedError:
                assert time.monotonic() < deadline and proxy.poll() is None, "the proxy never listened"
                time.sleep(0.05)
        with client:
            start = time.monotonic()
            client.sendall(b"ping")
            assert client.recv(16) == b"ping"
            assert time.monotonic() - start >= 0.3
    finally:
        proxy.kill()
        proxy.wait()
        upstream.close()


def test_server_scripts_answer_help():
    out = ran(script("fim_bench.py", "--help"))
    assert "--server" in out and "--cuts" in out


def test_shell_scripts_parse():
    for path in [*SCRIPTS.rglob("*.sh")]:
        result = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert result.returncode == 0, f"{path}: {result.stderr}"


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_noamx_shim_compiles(tmp_path):
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-O2", "-o", str(tmp_path / "noamx.so"), str(SCRIPTS / "llama-cpp" / "noamx.c")],
        check=True,
        capture_output=True,
    )
    assert (tmp_path / "noamx.so").stat().st_size > 0


def test_template_prompts_writes_the_chat_template(tiny_models, tmp_path):
    prompts = tmp_path / "kind.txt"
    prompts.write_text("first question\n---\nsecond question\n")
    ran(script("llama-cpp/template_prompts.py", str(tmp_path / "out"), str(tiny_models["target"]), str(prompts)))
    written = sorted((tmp_path / "out").iterdir())
    assert [p.name for p in written] == ["kind-1.txt", "kind-2.txt"]
    # the tiny target's template is ChatML, written out by hand here
    assert written[0].read_text() == "<|im_start|>user\nfirst question<|im_end|>\n<|im_start|>assistant\n"


def test_record_outputs_records_the_target_alones_reply(tiny_models, tmp_path):
    prompts = tmp_path / "kind.txt"
    prompts.write_text("the def return\n")
    out = tmp_path / "outputs.json"
    ran(script("record_outputs.py", str(tiny_models["target"]), str(out), str(prompts), "-n", "12"))
    record = json.loads(out.read_text())["outputs"]["kind:1"]
    assert 0 < len(record["output"]) <= 12 and record["quoted"] is False
    # the same prompt through the command a user runs, target alone, greedy
    command = ["run", "--target", str(tiny_models["target"]), "--no-draft", "-k", "0", "-n", "12", "--quiet"]
    plain = subprocess.run(
        [sys.executable, "-m", "specgen", *command, "the def return"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert plain.returncode == 0, plain.stderr
    assert record["text"] == plain.stdout.rstrip("\n")


def test_target_confidences_reads_the_greedy_tokens_as_the_rows_most_likely(tiny_models, tmp_path):
    """On the tiny target's own greedy reply, the row at each position gives the recorded token
    the largest probability (nearly everywhere: batched and one-token kernels may part at a
    near-tie), which an alignment off by one position would not."""
    prompts = tmp_path / "kind.txt"
    prompts.write_text("the def return\n")
    outputs = tmp_path / "outputs.json"
    ran(script("record_outputs.py", str(tiny_models["target"]), str(outputs), str(prompts), "-n", "24"))
    out = tmp_path / "conf.json"
    ran(script("target_confidences.py", str(tiny_models["target"]), str(outputs), "--out", str(out)))
    output = json.loads(outputs.read_text())["outputs"]["kind:1"]["output"]
    found = json.loads(out.read_text())[str(outputs)]["kind:1"]
    assert len(found) == len(output) > 4
    assert all(0.0 < own <= top <= 1.0 for top, own in found)
    assert sum(abs(top - own) < 1e-3 for top, own in found) >= 0.9 * len(found)


def test_copy_ceiling_prices_a_tiny_models_schema_reply(tiny_models, tmp_path):
    prompts = tmp_path / "new.jsonl"
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    prompts.write_text(json.dumps({"name": "json-a", "prompt": "give a", "json_schema": schema}) + "\n")
    costs = tmp_path / "bench.json"
    costs.write_text(
        json.dumps({"step_costs": {"verify": {str(n): 0.01 * n for n in (1, 2, 4, 8, 16, 32, 64)}, "switch": 0.0}})
    )
    out = ran(script("copy_ceiling.py", str(tiny_models["target"]), str(prompts), "--costs", str(costs), "-n", "32"))
    line = out.strip()
    assert line.startswith("json-a") and "pass ms 1/4/16/64: 10.0, 40.0, 160.0, 640.0, switch 0.0" in line
    # a pass costs its tokens here, so drafting saves nothing: the oracle is plain decoding exactly
    assert "oracle copier 1.00x" in line


def test_copy_ceiling_oracle_on_a_hand_worked_reply():
    """The bound's two parts against schedules worked out by hand."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        import copy_ceiling
    finally:
        sys.path.remove(str(SCRIPTS))
    # reply 1 2 3 9 after context 1 2 3: at 0 all of "1 2 3" is written before, at 1 "2 3", at 2 "3"
    assert copy_ceiling.longest_matches([1, 2, 3], [1, 2, 3, 9]) == [3, 2, 1, 0]
    # a match may run to the reply's last token, but copies only what was written before it:
    # 5 5 5 after one 5 finds one 5, then two, then one
    assert copy_ceiling.longest_matches([7, 1, 2], [1, 2]) == [2, 1]
    assert copy_ceiling.longest_matches([5], [5, 5, 5]) == [1, 2, 1]
    # every pass costs 1: one round drafting the three (and the target adding the 9) costs 1
    assert copy_ceiling.cheapest([3, 2, 1, 0], lambda size: 1.0) == 1.0
    # a pass costs its size: no schedule beats four single passes
    assert copy_ceiling.cheapest([3, 2, 1, 0], float) == 4.0
    # 4 tokens cost 2.5, 2 tokens 1.5: drafting 3 (2.5) beats 1+1+1+1 (4) and 2+2 (3.0)
    assert copy_ceiling.cheapest([3, 2, 1, 0], {1: 1.0, 2: 1.5, 3: 2.0, 4: 2.5}.__getitem__) == 2.5


def test_standins_rows_never_tie_at_a_real_vocabulary():
    """Every row of a 152,064-token output head differs at the dry run's width (the pool of 2^24
    numbers random_model.py used repeats every 65,536 rows of 256), and the pool's length is prime."""
    sys.path.insert(0, str(SCRIPTS / "device"))
    try:
        import standins
    finally:
        sys.path.remove(str(SCRIPTS / "device"))
    assert all(standins.POOL % d for d in range(2, math.isqrt(standins.POOL) + 1))
    import numpy as np

    head = standins.weights(standins.pool(7), "output.weight", (152_064, 256))
    assert len(np.unique(head.view(np.dtype((np.void, 2 * 256))))) == 152_064


def test_standins_quiet_only_the_later_layers_residual_writers(tiny_models, tmp_path):
    """--quiet-from 2 --scale 0.5 halves attn_output and ffn_down of layers 2 and on, against the
    same fill without it, and leaves every other tensor as it was."""
    from gguf import GGUFReader

    for name, extra in (("plain", ()), ("quiet", ("--quiet-from", "2", "--scale", "0.5"))):
        fill = ("device/standins.py", "fill", str(tiny_models["target"]), str(tmp_path / f"{name}.gguf"))
        ran(script(*fill, "--shape", "tiny", *extra))
    plain, quiet = (
        {t.name: t.data.astype("float32") for t in GGUFReader(tmp_path / f"{n}.gguf").tensors}
        for n in ("plain", "quiet")
    )
    assert set(plain) == set(quiet)
    halved = {f"blk.{i}.{t}.weight" for i in (2, 3) for t in ("attn_output", "ffn_down")}
    for name in plain:
        # F16 numbers halved, as F16 again (exact but below 2^-14, where the last bit goes)
        expected = (plain[name] * 0.5).astype("float16").astype("float32") if name in halved else plain[name]
        assert (quiet[name] == expected).all(), name
    assert all(plain[name].any() for name in halved)


def test_mission7b_dry_run_runs_every_step_without_llama_cpp_tools(tiny_models, tmp_path):
    """The device call's dry run (DRY=1) on the tiny target's tokenizer, with no llama.cpp tool:
    one line for each step that needs one, stand-ins at the dry run's shapes (T padded past the
    tokenizer, S T's first layers byte for byte, Q4_K_M), both benches with every configuration
    and the target alone's text, and a summary whose per-round milliseconds are the JSON's."""
    import numpy as np
    from gguf import GGUFReader

    out, work = tmp_path / "out", tmp_path / "work"
    settings = {"DRY": "1", "BIN": "", "PY": sys.executable, "OUT": str(out), "WORK": str(work)}
    settings |= {"SKEL": str(tiny_models["target"]), "N_TOKENS": "8", "PROMPTS": "1", "LIMIT": "300"}
    result = subprocess.run(
        ["bash", str(SCRIPTS / "device" / "mission7b.sh")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, **settings},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    log = (out / "log.txt").read_text()
    for tool in ("llama-bench", "llama-speculative-simple", "llama-server"):
        assert sum(f"(no {tool} in any llama.cpp build)" in line for line in log.splitlines()) == 1
    assert re.search(r"auto's Python: [\d.]+ us a round", log)

    def header(path: Path) -> tuple[dict, dict]:
        reader = GGUFReader(path)
        fields = {f.name: f.contents() for f in reader.fields.values() if not f.name.startswith("GGUF.")}
        return fields, {t.name: t for t in reader.tensors}

    tiny, _ = header(tiny_models["target"])
    (t_keys, t_tensors), (s_keys, s_tensors), (n_keys, n_tensors) = (header(work / f"{m}.gguf") for m in "TSN")
    listed = len(tiny["tokenizer.ggml.tokens"])
    padding = [f"[PAD{i}]" for i in range(listed, listed + 128)]  # as Qwen's converter pads a vocabulary
    assert t_keys["tokenizer.ggml.tokens"] == tiny["tokenizer.ggml.tokens"] + padding
    assert n_keys["tokenizer.ggml.tokens"] == tiny["tokenizer.ggml.tokens"]
    assert t_keys["tokenizer.chat_template"] == tiny["tokenizer.chat_template"]
    assert (t_keys["llama.block_count"], t_keys["llama.embedding_length"], s_keys["llama.block_count"]) == (4, 256, 2)
    assert "output.weight" in t_tensors and "output.weight" not in n_tensors  # T untied, N tied as the 0.5B
    assert {t.tensor_type.name for t in t_tensors.values()} >= {"Q4_K", "Q6_K"}
    kept = {name for name in t_tensors if not name.startswith(("blk.2.", "blk.3."))}
    assert set(s_tensors) == kept
    assert all(bytes(s_tensors[name].data) == bytes(t_tensors[name].data) for name in kept)
    rows = np.asarray(t_tensors["output.weight"].data).reshape(listed + 128, -1)
    assert len(np.unique(rows.view(np.dtype((np.void, rows.shape[1]))))) == listed + 128

    summary = (out / "summary.txt").read_text()
    configs = {
        "S": ["target", "draft-k1", "draft-k2", "draft-k4", "draft-auto"],
        "N": ["target", "draft-k2", "draft-auto"],
    }
    for name in "SN":
        bench = json.loads((out / f"bench-{name}.json").read_text())
        assert [c["name"] for c in bench["configs"]] == configs[name]
        assert bench["audit"]["identical"]
        for config in [c["name"] for c in bench["configs"]]:
            runs = [r for r in bench["runs"] if r["config"] == config]
            rounds = sum(r["rounds"] for r in runs)
            ms = [f"{1000 * sum(r[field] for r in runs) / rounds:.2f}" for field in ("python_s", "draft_s", "verify_s")]
            row = next(line for line in summary.splitlines() if line.startswith(f"| {name} | {config} |"))
            assert row.split(" | ")[6:9] == ms and row.endswith("| identical (1 runs) |")
    texts = json.loads((out / "texts.json").read_text())["outputs"]
    assert list(texts) == ["qa-324"] and texts["qa-324"]["text"]


def test_summary_reads_llama_cpp_lines_and_texts(tmp_path):
    """summary.py on what llama.cpp's tools wrote in a dry run (these lines are that run's): a draft
    length's rate is its prompts' tokens over their seconds, a text is the target alone's when the
    shorter of the two begins the longer, and llama-bench's pass costs are its mean nanoseconds."""
    recorded = """\
draft-max default | chat-117 | decoded   28 tokens in   13.685 seconds, speed:    2.046 | n_draft   = 3 | accept    = 64.286%
draft-max default | qa-324 | decoded   27 tokens in    4.668 seconds, speed:    5.784 | n_draft   = 3 | accept    = 79.167%
draft-max 2 | chat-117 | decoded   27 tokens in    0.669 seconds, speed:   40.375 | n_draft   = 2 | accept    = 76.190%
draft-max 4 | chat-117 | decoded   29 tokens in   12.793 seconds, speed:    2.267 | n_draft   = 4 | accept    = 67.742%
draft-max 2 | qa-324 | decoded   27 tokens in    2.708 seconds, speed:    9.969 | n_draft   = 2 | accept    = 76.190%
"""  # noqa: E501
    (tmp_path / "spec-simple.txt").write_text(recorded)
    folder = tmp_path / "spec-simple"
    folder.mkdir()
    prompts = {
        "chat-117": "<|im_start|>user\nhow many?<|im_end|>\n<|im_start|>assistant\n",
        "qa-324": "<|im_start|>user\nbird?<|im_end|>\n<|im_start|>assistant\n",
    }
    # llama-speculative-simple's stdout: two newlines, the prompt, the reply (past -n), two newlines
    replies = {
        "chat-117-default": "ten of them",
        "chat-117-2": "ten of them",
        "chat-117-4": "ten of them",
        "qa-324-default": "a hornbill, Zazu",
        "qa-324-2": "a hornbilk",
    }
    for name, text in prompts.items():
        (folder / f"{name}.txt").write_text(text)
    for run, reply in replies.items():
        (folder / f"{run}.out").write_text("\n\n" + prompts[run.rsplit("-", 1)[0]] + reply + "\n\n")
    texts = {"chat-117": {"text": "ten of"}, "qa-324": {"text": "a hornbill"}}
    (tmp_path / "texts.json").write_text(json.dumps({"outputs": texts}))
    bench = [
        {"model_filename": "/tmp/m/T.gguf", "n_prompt": 1, "n_gen": 0, "avg_ns": 12014762, "avg_ts": 91.5},
        {"model_filename": "/tmp/m/T.gguf", "n_prompt": 4, "n_gen": 0, "avg_ns": 7440000, "avg_ts": 537.6},
        {"model_filename": "/tmp/m/T.gguf", "n_prompt": 0, "n_gen": 24, "avg_ns": 331000000, "avg_ts": 72.5},
    ]
    (tmp_path / "llama-bench.json").write_text(json.dumps(bench))
    out = ran(script("device/summary.py", str(tmp_path)))
    rows = {
        cells[1]: cells
        for cells in (line.strip("|").split(" | ") for line in out.splitlines())
        if cells[0].strip() == "llama.cpp"
    }
    assert set(rows) == {
        "spec-simple -md S, draft default (3)",
        "spec-simple -md S, draft 2",
        "spec-simple -md S, draft 4",
    }
    # (28 + 27) / (13.685 + 4.668) = 3.00, not the mean of the two speeds (3.9); both texts begin the target's
    assert rows["spec-simple -md S, draft default (3)"][2:5] == ["3.0", "-", "72%"]
    assert rows["spec-simple -md S, draft default (3)"][-1].strip() == "2/2 the target's"
    # (27 + 27) / (0.669 + 2.708) = 16.0; qa-324's "a hornbilk" is not "a hornbill"
    assert (
        rows["spec-simple -md S, draft 2"][2] == "16.0"
        and rows["spec-simple -md S, draft 2"][-1].strip() == "1/2 the target's"
    )
    assert "| T | 12.01 | 7.44 | 72.5 (13.79 ms) |" in out
    assert "(no bench-S.json: not run)" in out and "(no bench-N.json: not run)" in out


def test_auto_python_times_autos_parts_on_rounds_the_draft_model_drafted(tiny_models):
    """On the tiny pair, priced at the H200's costs, auto drafts with the model, and the parts
    (each inside auto's proposing or learning) add up to no more than auto's Python a round."""
    out = ran(script("auto_python.py", str(tiny_models["target"]), str(tiny_models["draft"]), "-n", "48"))
    rounds, modelled = map(int, re.search(r"rounds (\d+), drafted by the model (\d+)", out).groups())
    assert 0 < modelled <= rounds
    parts = {name: float(us) for name, us in re.findall(r"^(\w+): ([\d.]+) us a round \(", out, re.M)}
    assert set(parts) == {"offers", "choose", "confidence", "learn"} and parts["confidence"] > 0
    total = float(re.search(r"auto's Python: ([\d.]+) us a round", out).group(1))
    assert sum(parts.values()) <= total
    missing = script("auto_python.py", str(tiny_models["target"]), "/no/draft.gguf")
    assert missing.returncode == 2 and missing.stderr.strip().endswith("error: no such file: /no/draft.gguf")
    assert "Traceback" not in missing.stderr


def test_depth_curve_times_every_calibrated_size_after_its_depth(tiny_models, tmp_path):
    """On the tiny target: every pass is timed with the cache holding exactly the depth's tokens
    (the text's, repeated) and gives a row for each of its tokens; the file has every calibrated
    size and the replay reads it as a curve; a bad depth, a missing file and an empty text are
    one-line errors."""
    spec = importlib.util.spec_from_file_location("depth_curve", SCRIPTS / "depth_curve.py")
    depth_curve = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(depth_curve)
    from specgen.llama.calibrate import SIZES
    from specgen.llama.model import LoadOptions, Model

    with Model(tiny_models["target"], LoadOptions(n_ctx=48 + SIZES[-1] + 16)) as target:
        tokens = depth_curve.context_tokens(target, "def add(a, b):\n    return a + b\n", 48 + SIZES[-1])
        seen: list[tuple[list[int], int, int]] = []
        forward = target.forward

        def watched(batch: list[int], all_logits: bool):
            rows = forward(batch, all_logits)
            seen.append((list(target.tokens[: -len(batch)]), len(batch), len(rows)))
            return rows

        target.forward = watched
        verify = depth_curve.time_sizes(target, tokens, 48, 2)
    assert list(verify) == list(SIZES) and all(seconds > 0 for seconds in verify.values())
    assert [(size, rows) for _, size, rows in seen] == [(size, size) for size in SIZES for _ in range(2)]
    assert all(cache == tokens[:48] for cache, _, _ in seen)
    out = tmp_path / "depth.json"
    printed = ran(script("depth_curve.py", str(tiny_models["target"]), str(out), "--depth", "48", "--passes", "2"))
    data = json.loads(out.read_text())
    assert data["depth"] == 48 and [int(size) for size in data["verify"]] == list(SIZES) and "(depth 48)" in printed
    replayed = subprocess.run(
        [sys.executable, "tests/copyreplay.py", "--curve", str(out), str(RECORDED)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert replayed.returncode == 0 and "file:depth " in replayed.stdout and "geometric mean" in replayed.stdout
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    for arguments, error in (
        (["--depth", "-1"], "--depth -1 --passes 5: want a depth of 0 or more and at least one pass"),
        (["--text", "/no/text.txt"], "no such file: /no/text.txt"),
        (["--text", str(empty)], f"{empty} has no text to fill the context with: give --text a file with some"),
    ):
        bad = script("depth_curve.py", str(tiny_models["target"]), str(out), *arguments)
        assert bad.returncode == 2 and bad.stderr.strip().endswith(f"error: {error}") and "Traceback" not in bad.stderr
