"""Every script under benchmarks/scripts runs, so that none breaks silently when the code it uses
changes: each runs on the recorded data of a results folder or on the suite's tiny models in a
few seconds, or, where it needs what CI lacks (a running server, llama.cpp's own tools, a GPU
machine), is checked by `--help` or `bash -n`. A script added without a test here fails
`test_every_script_is_covered`. llama.cpp's scripts are run in test_llama_cpp_scripts.py, the GPU
machine's in test_device_scripts.py; the scripts that read recordings or the tiny models, here."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from scriptrun import RESULTS, ROOT, SCRIPTS, ran, script

RECORDED = ROOT / "tests" / "data" / "greedy-outputs.json"

# each script and the test that runs it (in any test module of this folder); a script missing here fails the first test
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


def test_every_script_is_covered():
    found = {str(p.relative_to(SCRIPTS)) for p in SCRIPTS.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert found == set(COVERED), (
        f"scripts without a smoke test here: {sorted(found - set(COVERED))}; "
        f"listed but gone: {sorted(set(COVERED) - found)}"
    )
    names = {
        name
        for module in Path(__file__).parent.glob("test_*.py")
        for name in re.findall(r"^def (test_\w+)", module.read_text(), re.M)
    }
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
