"""The GPU machine's scripts under benchmarks/scripts/device run without a GPU or llama.cpp's
tools: the stand-in weights, the device call's dry run, and its summary on recorded lines
(covered in test_scripts.COVERED)."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

from scriptrun import ROOT, SCRIPTS, ran, script


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
