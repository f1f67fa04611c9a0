"""A file attached to a prompt: fenced under its name, and one line for every file that cannot be read."""

from __future__ import annotations

import os

import pytest

from specgen.errors import UsageError
from specgen.terminal.attach import attach, fence


def test_a_file_is_fenced_under_its_name():
    assert fence("app.py", "x = 1\n") == "app.py:\n```py\nx = 1\n```"
    assert fence("notes.txt", "no newline at the end") == "notes.txt:\n```txt\nno newline at the end\n```"
    assert fence("empty.txt", "") == "empty.txt:\n```txt\n```"


def test_the_fence_is_longer_than_any_backtick_run_inside():
    readme = "Run:\n```sh\nmake\n```\nand `x`.\n"
    assert fence("README.md", readme) == f"README.md:\n````md\n{readme}````"
    assert fence("odd.md", "a ````` b") == "odd.md:\n``````md\na ````` b\n``````"


def test_attach_reads_the_text_and_counts_lines_and_bytes(tmp_path):
    (tmp_path / "café.py").write_text("π = 3.14\nprint(π)\n", encoding="utf-8")
    file = attach(str(tmp_path / "café.py"))
    assert file.name == str(tmp_path / "café.py") and file.text == "π = 3.14\nprint(π)\n"
    assert (file.lines, file.size) == (2, 20)  # π is two bytes in UTF-8, twice
    assert file.fenced == f"{tmp_path / 'café.py'}:\n```py\nπ = 3.14\nprint(π)\n```"
    (tmp_path / "one.txt").write_text("one line, no end")
    assert attach(str(tmp_path / "one.txt")).lines == 1


def test_a_file_that_cannot_be_read_is_one_line(tmp_path):
    (tmp_path / "binary.bin").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    cases = {
        str(tmp_path / "missing.py"): "no such file",
        str(tmp_path): "it is a folder; name a file in it",
        str(tmp_path / "binary.bin"): "it is not UTF-8 text",
    }
    if os.geteuid() != 0:  # root reads files whatever their mode
        (tmp_path / "secret.txt").write_text("x")
        (tmp_path / "secret.txt").chmod(0)
        cases[str(tmp_path / "secret.txt")] = "permission denied"
    for path, problem in cases.items():
        with pytest.raises(UsageError) as raised:
            attach(path)
        assert str(raised.value) == f"cannot read {path}: {problem}"
        assert raised.value.exit_code == 2
