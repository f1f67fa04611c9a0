"""--rpc and `specgen worker` on loopback: real worker processes on 127.0.0.1, the tiny target
split across them, the draft kept here; a worker that dies, a wrong address, Ctrl-C."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading

import pytest

from specgen.llama.library import has_rpc

SPECGEN = [sys.executable, "-m", "specgen"]


def rpc_built() -> bool:
    """Independently of specgen: does the installed library export llama.cpp's RPC server?"""
    import llama_cpp.llama_cpp

    return hasattr(llama_cpp.llama_cpp._lib, "ggml_backend_rpc_start_server")


needs_rpc = pytest.mark.skipif(not rpc_built(), reason="this llama-cpp-python was built without GGML_RPC")


def test_specgen_finds_the_rpc_backend_exactly_when_the_library_has_it():
    assert has_rpc() == rpc_built()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Worker:
    """A `specgen worker` process on a free loopback port; its stderr lines are kept as they come."""

    def __init__(self, *args: str, port: int | None = None):
        self.port = port or free_port()
        self.endpoint = f"127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [*SPECGEN, "worker", "--port", str(self.port), "-t", "1", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        assert self._ready.wait(60), "\n".join(self.lines)
        assert self.process.poll() is None, "\n".join(self.lines)

    def _read(self) -> None:
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))
            if "serving" in line:
                self._ready.set()
        self._ready.set()

    def stop(self, sig: int = signal.SIGINT) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(timeout=30)
        self._reader.join(timeout=30)  # every line it wrote is in self.lines
        return code


@pytest.fixture(scope="module")
def workers():
    running = [Worker(), Worker()]
    yield running
    for worker in running:
        worker.stop()


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*SPECGEN, "run", *args], capture_output=True, text=True, timeout=timeout)


def one_line(stderr: str, *fragments: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("specgen: error: "), stderr
    assert "Traceback" not in stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@needs_rpc
@pytest.mark.parametrize("draft_tokens", ["3", "auto"])
def test_a_target_split_across_two_workers_gives_the_local_tokens_and_the_draft_stays_here(
    workers, tiny_models, draft_tokens
):
    common = [
        "the print of self",
        "--target",
        str(tiny_models["target"]),
        "--draft",
        str(tiny_models["draft"]),
        "--raw",
        "-n",
        "40",
        "-k",
        draft_tokens,
        "-t",
        "1",
        "--json",
    ]
    local = run(*common)
    split = run(*common, "--rpc", ",".join(w.endpoint for w in workers))
    assert local.returncode == 0 and split.returncode == 0, local.stderr + split.stderr
    here, there = json.loads(local.stdout), json.loads(split.stdout)
    assert there["text"] == here["text"] and there["tokens"] == here["tokens"] > 0
    assert here["target_layers"] == {"CPU": 3} and here["rpc"] == []
    assert there["rpc"] == [w.endpoint for w in workers]
    assert set(there["target_layers"]) == {w.endpoint for w in workers}  # both workers hold layers, none here
    assert sum(there["target_layers"].values()) == 3  # two blocks and the output layer
    assert there["draft_layers"] == {"CPU": 3}


@needs_rpc
def test_the_summary_line_says_where_each_model_ran(workers, tiny_models):
    done = run(
        "x = 1",
        "--target",
        str(tiny_models["target"]),
        "--draft",
        str(tiny_models["draft"]),
        "--raw",
        "-n",
        "8",
        "-t",
        "1",
        "--rpc",
        workers[0].endpoint,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().endswith(f"target on {workers[0].endpoint} (3 layers); draft on CPU (3 layers)")


@needs_rpc
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_a_worker_gone_mid_generation_is_one_line_and_no_hang(workers, tiny_models, sig):
    doomed = Worker()
    process = subprocess.Popen(
        [
            *SPECGEN,
            "run",
            "the",
            "--target",
            str(tiny_models["target_endless"]),
            "--no-draft",
            "--raw",
            "-n",
            "100000",
            "--ctx",
            "32768",
            "-t",
            "1",
            "--rpc",
            f"{workers[0].endpoint},{doomed.endpoint}",
            "-q",  # no note that auto times the passes first: stderr holds the error alone
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert select.select([process.stdout], [], [], 60)[0], "no text within 60 s"
        assert os.read(process.stdout.fileno(), 64)  # generation is under way across both workers
        code = doomed.stop(sig)
        _, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 1
    one_line(stderr.decode(), f"the RPC worker at {doomed.endpoint} stopped answering")  # the other still listens
    if sig == signal.SIGINT:
        assert code == 0 and doomed.lines[-1] == "specgen worker: stopped"


@needs_rpc
def test_ctrl_c_on_the_main_machine_keeps_the_text_and_the_workers(workers, tiny_models):
    """Ctrl-C stops the reply as without --rpc (exit 130, the text kept); it never reaches ggml's RPC
    threads, which would take the interrupted socket call for a lost worker."""
    process = subprocess.Popen(
        [
            *SPECGEN,
            "run",
            "the",
            "--target",
            str(tiny_models["target_endless"]),
            "--no-draft",
            "--raw",
            "-n",
            "100000",
            "--ctx",
            "32768",
            "-t",
            "1",
            "--rpc",
            ",".join(w.endpoint for w in workers),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert select.select([process.stdout], [], [], 60)[0], "no text within 60 s"
        first = os.read(process.stdout.fileno(), 64)
        process.send_signal(signal.SIGINT)
        rest, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130 and first + rest
    assert "error" not in stderr.decode() and "stop: interrupted" in stderr.decode()
    assert all(w.process.poll() is None for w in workers)


@pytest.mark.parametrize(
    "address, fragment",
    [
        ("127.0.0.1", "--rpc takes HOST:PORT"),
        ("127.0.0.1:0", "--rpc takes HOST:PORT"),
        ("[::1]:50052", "IPv6"),
        ("127.0.0.1:50052,127.0.0.1:50052", "twice"),
    ],
)
def test_a_malformed_address_is_one_line_before_any_model_loads(address, fragment):
    done = run("hello", "--target", "/nonexistent.gguf", "--rpc", address)
    assert done.returncode == 2 and done.stdout == ""
    one_line(done.stderr, fragment)


@needs_rpc
def test_nothing_listening_is_one_line(tiny_models):
    port = free_port()
    done = run("hello", "--target", str(tiny_models["target"]), "--no-draft", "--rpc", f"127.0.0.1:{port}")
    assert done.returncode == 1 and done.stdout == ""
    one_line(done.stderr, f"nothing is listening at 127.0.0.1:{port}", "specgen worker")


@needs_rpc
def test_a_worker_stops_on_sigterm_and_frees_its_port():
    worker = Worker()
    assert worker.stop(signal.SIGTERM) == 0
    assert worker.lines[-1] == "specgen worker: stopped" and worker.process.stdout.read() == ""
    assert Worker(port=worker.port).stop() == 0  # the port is free again at once


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--host", "0.0.0.0"], "no authentication; pass --allow-network"),
        (["--host", "localhost.example"], "IPv4 address"),
    ],
)
def test_a_worker_beyond_loopback_needs_the_flag(args, fragment):
    done = subprocess.run([*SPECGEN, "worker", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    one_line(done.stderr, fragment)


@needs_rpc
def test_a_worker_with_cache_makes_its_cache_folder_and_one_that_cannot_is_one_line(monkeypatch, tmp_path):
    """llama.cpp's server writes no tensor where its cache folder is missing: the worker makes it."""
    monkeypatch.setenv("SPECGEN_CACHE_DIR", str(tmp_path / "cache"))
    worker = Worker("--cache")
    worker.stop()
    assert (tmp_path / "cache" / "rpc").is_dir()
    assert any(f"tensor cache {tmp_path / 'cache' / 'rpc'}" in line for line in worker.lines)
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("SPECGEN_CACHE_DIR", str(tmp_path / "file"))
    done = subprocess.run(
        [*SPECGEN, "worker", "--port", str(free_port()), "--cache"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    one_line(done.stderr, "--cache cannot make", "SPECGEN_CACHE_DIR")


@needs_rpc
def test_a_worker_open_to_the_network_names_its_port_in_the_warning():
    worker = Worker("--host", "0.0.0.0", "--allow-network")
    worker.stop()
    assert any("WARNING" in line and f"0.0.0.0:{worker.port}" in line for line in worker.lines), worker.lines


@needs_rpc
def test_a_taken_port_is_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run([*SPECGEN, "worker", "--port", str(port)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    one_line(done.stderr, f"cannot listen on 127.0.0.1:{port}")


@pytest.mark.skipif(rpc_built(), reason="this build has the RPC backend (CI builds it)")
def test_without_the_rpc_backend_rpc_is_one_line_naming_the_rebuild(tiny_models):
    done = run("hello", "--target", str(tiny_models["target"]), "--rpc", "127.0.0.1:50052")
    one_line(done.stderr, "built without", "specgen doctor")
