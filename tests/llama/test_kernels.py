"""The repacked-kernels decision: forced by the environment, on without AMX, probed (once) with AMX.

This machine need not report AMX, so the AMX cases put the CPU's flags and the build's feature
line in front of the real decision code; the probe itself is a real child process that loads a
tiny model with extra buffer types and decodes, or a child that really dies of SIGSEGV.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from specgen.errors import UsageError
from specgen.llama import kernels
from specgen.llama.model import LoadOptions, Model

SEGFAULT = [sys.executable, "-c", "import ctypes; ctypes.string_at(0)"]
FAILS = [sys.executable, "-c", "raise SystemExit(3)"]
REAL_PROBE = kernels.probe_command


@pytest.fixture
def amx_machine(monkeypatch):
    """A CPU that reports AMX, a build with AMX kernels, no forcing in the environment."""
    monkeypatch.delenv(kernels.ENV, raising=False)
    monkeypatch.setattr(kernels, "cpu_info", lambda: ("Test Xeon", frozenset({"avx512f", "amx_tile"})))
    monkeypatch.setattr(kernels, "build_info", lambda: ("9.9.9", "CPU : AVX512 = 1 | AMX_INT8 = 1 |"))
    return monkeypatch


def test_the_environment_forces_the_choice(monkeypatch):
    monkeypatch.setenv(kernels.ENV, "0")
    assert kernels.extra_buffer_types() == kernels.KernelChoice(False, "forced by SPECGEN_EXTRA_BUFTS=0")
    monkeypatch.setenv(kernels.ENV, "1")
    assert kernels.extra_buffer_types().on
    monkeypatch.setenv(kernels.ENV, "yes")
    with pytest.raises(UsageError, match="must be 0 or 1"):
        kernels.extra_buffer_types()


def test_on_without_amx_in_the_cpu_or_the_build(monkeypatch):
    monkeypatch.delenv(kernels.ENV, raising=False)
    monkeypatch.setattr(kernels, "cpu_info", lambda: ("Test EPYC", frozenset({"avx2", "avx512f"})))
    assert kernels.extra_buffer_types() == kernels.KernelChoice(True, "no AMX on this CPU")
    monkeypatch.setattr(kernels, "cpu_info", lambda: ("Test Xeon", frozenset({"amx_tile"})))
    monkeypatch.setattr(kernels, "build_info", lambda: ("9.9.9", "CPU : AVX2 = 1 | FMA = 1 |"))
    assert kernels.extra_buffer_types() == kernels.KernelChoice(True, "this llama.cpp build has no AMX kernels")
    assert not kernels.verdicts_path().exists()


def test_cpu_info_reads_the_model_name_and_flags(tmp_path):
    (tmp_path / "cpuinfo").write_text(
        "processor\t: 0\nmodel name\t: Test Xeon\nflags\t\t: fpu avx2 amx_tile\n\n"
        "processor\t: 1\nmodel name\t: Test Xeon\nflags\t\t: fpu avx2 amx_tile\n"
    )
    assert kernels.cpu_info(str(tmp_path / "cpuinfo")) == ("Test Xeon", frozenset({"fpu", "avx2", "amx_tile"}))
    assert kernels.cpu_info(str(tmp_path / "missing")) == ("", frozenset())


def test_a_real_probe_passes_and_is_cached(amx_machine, tiny_models):
    choice = kernels.extra_buffer_types(tiny_models["target"])
    assert choice == kernels.KernelChoice(True, "AMX probe passed")
    amx_machine.setattr(kernels, "probe_command", lambda path, amx=True: SEGFAULT)
    assert kernels.extra_buffer_types(tiny_models["target"]) == kernels.KernelChoice(True, "AMX probe passed (cached)")
    assert kernels.extra_buffer_types() == kernels.KernelChoice(True, "AMX probe passed (cached)")


DIED_TWICE = "AMX probe died with SIGSEGV; probe without AMX died with SIGSEGV"


def test_death_by_a_signal_with_and_without_amx_turns_them_off_and_is_cached(amx_machine, tiny_models):
    assert kernels.extra_buffer_types() == kernels.KernelChoice(
        False, "AMX CPU not probed yet; the next model load probes it"
    )
    amx_machine.setattr(kernels, "probe_command", lambda path, amx=True: SEGFAULT)
    assert kernels.extra_buffer_types(tiny_models["target"]) == kernels.KernelChoice(False, DIED_TWICE, False)
    [entry] = json.loads(kernels.verdicts_path().read_text()).values()
    assert entry["on"] is False and entry["llama_cpp"] == "9.9.9" and entry["cpu"] == "Test Xeon"
    with Model(tiny_models["target"], LoadOptions(n_ctx=64, n_threads=1)) as model:
        assert model.kernels == kernels.KernelChoice(False, DIED_TWICE + " (cached)", False)
    amx_machine.setattr(kernels, "build_info", lambda: ("10.0.0", "CPU : AMX_INT8 = 1 |"))
    amx_machine.setattr(kernels, "probe_command", REAL_PROBE)
    assert kernels.extra_buffer_types(tiny_models["target"]) == kernels.KernelChoice(True, "AMX probe passed"), (
        "a new build probes again"
    )


def test_when_amx_dies_the_repacked_kernels_run_without_it(amx_machine, tiny_models):
    """The second child really loads and decodes with AMX taken out; the verdict keeps them on
    without AMX, and a model loaded under it has no AMX among its extra buffer types."""
    from specgen.llama.library import extra_buffer_type_names

    asked = []
    amx_machine.setattr(
        kernels,
        "probe_command",
        lambda path, amx=True: asked.append(amx) or (SEGFAULT if amx else REAL_PROBE(path, amx=False)),
    )
    choice = kernels.extra_buffer_types(tiny_models["target"])
    assert asked == [True, False]
    assert choice == (True, "AMX probe died with SIGSEGV; probe without AMX passed", False)
    assert kernels.extra_buffer_types() == kernels.KernelChoice(True, choice.reason + " (cached)", False)
    with Model(tiny_models["target"], LoadOptions(n_ctx=64, n_threads=1)) as model:
        assert model.kernels.on and not model.kernels.amx
        assert "AMX" not in extra_buffer_type_names()
        assert model.forward([1, 2, 3], all_logits=True).shape == (3, model.n_vocab)


def test_the_probe_child_without_amx_really_takes_it_out(tiny_models):
    """Run in a child: taking AMX out is for the whole process."""
    code = (
        "from specgen.llama.library import extra_buffer_type_names as n, drop_amx_buffer_type as d\n"
        "before = n(); d(); after = n()\n"
        "assert 'AMX' not in after and [x for x in before if x != 'AMX'] == after, (before, after)\n"
        "print(before, after)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_probe_that_fails_without_a_signal_is_not_cached(amx_machine, tiny_models):
    amx_machine.setattr(kernels, "probe_command", lambda path, amx=True: FAILS)
    assert kernels.extra_buffer_types(tiny_models["target"]) == kernels.KernelChoice(
        False, "AMX probe failed (exit 3); off to be safe"
    )
    assert not kernels.verdicts_path().exists()


def test_a_corrupt_cache_means_probing_again(amx_machine, tiny_models):
    kernels.verdicts_path().parent.mkdir(parents=True)
    kernels.verdicts_path().write_text("{not json")
    amx_machine.setattr(kernels, "probe_command", lambda path, amx=True: SEGFAULT)
    assert kernels.extra_buffer_types(tiny_models["target"]).reason == DIED_TWICE


def test_run_json_says_which_kernels(tiny_models):
    env = {**os.environ, kernels.ENV: "0"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "specgen",
            "run",
            "def",
            "--target",
            str(tiny_models["target"]),
            "--no-draft",
            "--raw",
            "-n",
            "3",
            "-t",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["extra_bufts"] is False and record["extra_bufts_reason"] == "forced by SPECGEN_EXTRA_BUFTS=0"
