"""What `specgen bench` reads and writes: prompt file formats, chat turns, and one-line errors for bad
prompt files, --draft-tokens, stdin and output paths."""

from __future__ import annotations

import json

import pytest
from benchcli import CODE, call

from specgen.bench.plan import configurations, parse_draft_tokens
from specgen.bench.prompts import BenchPrompt, read_prompt_files
from specgen.bench.runner import encode_all
from specgen.errors import UsageError


def test_prompt_file_formats(tmp_path):
    (tmp_path / "one.txt").write_text("{not json} is a fine prompt\n")
    (tmp_path / "many.txt").write_text(CODE)
    (tmp_path / "lines.jsonl").write_text('{"prompt": "a", "kind": "qa"}\n{"prompt": "b", "name": "bee"}\n')
    prompts = read_prompt_files([str(tmp_path / n) for n in ("one.txt", "many.txt", "lines.jsonl")], None)
    assert [(p.name, p.kind, p.text) for p in prompts] == [
        ("one:1", "one", "{not json} is a fine prompt"),
        ("many:1", "many", "def add(a, b):"),
        ("many:2", "many", "x = 1\nfor i in"),
        ("lines:1", "qa", "a"),
        ("bee", "lines", "b"),
    ]


def test_a_chat_turn_is_timed_after_its_conversation(tmp_path, target_model):
    """A "messages" line is encoded through the chat template whole, as chat and serve do; the
    timed reply is the last user turn's."""
    turns = [
        {"role": "user", "content": "write f"},
        {"role": "assistant", "content": "def f(): pass"},
        {"role": "user", "content": "rename f to g"},
    ]
    (tmp_path / "revise.jsonl").write_text(json.dumps({"messages": turns}) + "\n")
    [prompt] = read_prompt_files([str(tmp_path / "revise.jsonl")], None)
    assert (prompt.name, prompt.kind, prompt.text) == ("revise:1", "revise", "rename f to g")
    tokens = encode_all(target_model, [prompt], raw=False)[0]
    assert tokens == target_model.encode_chat([(t["role"], t["content"]) for t in turns])
    assert tokens != encode_all(target_model, [BenchPrompt("x", "x", "rename f to g")], raw=False)[0]
    with pytest.raises(UsageError, match="drop --raw"):
        encode_all(target_model, [prompt], raw=True)


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("missing.txt", None, "cannot read prompt file"),
        ("empty.txt", "\n \n", "is empty"),
        ("gap.txt", "a\n---\n\n---\nb\n", "prompt 2 (line 3) is empty"),
        ("trailing.txt", "a\n---\n", "remove the extra '---'"),
        ("bad.jsonl", '{"prompt": "a"}\n{"prompt": \n', "line 2 is not valid JSON"),
        ("noprompt.jsonl", '{"prompt": "a"}\n{"text": "b"}\n', 'line 2 has no "prompt" string'),
        ("latin1.txt", "caf\xe9".encode("latin-1"), "is not UTF-8"),
        ("dupes.jsonl", '{"prompt": "a", "name": "x"}\n{"prompt": "b", "name": "x"}\n', "two prompts are named 'x'"),
        (
            "chat.jsonl",
            '{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}\n',
            "must end with the user's turn",
        ),
        ("role.jsonl", '{"messages": [{"role": "robot", "content": "a"}]}\n', 'each message needs a "role"'),
        ("list.jsonl", '{"messages": "hello"}\n', '"messages" must be a list'),
    ],
)
def test_bad_prompt_files_get_one_line_errors(tmp_path, name, content, message):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    code, stdout, stderr = call(["bench", str(path), "--target", "t.gguf", "--draft", "d.gguf"])
    assert code == 2 and stdout == ""
    assert stderr.count("\n") == 1 and stderr.startswith("specgen: error: ") and message in stderr


def test_draft_tokens_option():
    assert parse_draft_tokens("2, 4,2,8,AUTO") == (2, 4, 8, "auto")
    for text in ("0", "33", "two", "2,,4"):
        with pytest.raises(UsageError, match="from 1 to 32"):
            parse_draft_tokens(text)
    assert [c.name for c in configurations((2, "auto"), draft_model=False, lookup=True)] == [
        "target",
        "lookup-k2",
        "lookup-auto",
    ]
    auto = configurations(("auto",), draft_model=True, lookup=True, auto_cap=6)[-1]
    assert (auto.name, auto.k, auto.adaptive) == ("draft-auto", 6, True)
    with pytest.raises(UsageError, match="nothing to compare"):
        configurations((2,), draft_model=False, lookup=False)


def test_stdin_twice_and_nothing_to_compare_are_one_line_errors(tmp_path):
    code, _, stderr = call(["bench", "-", "-", "--target", "t.gguf"], stdin="a")
    assert code == 2 and "read only once" in stderr
    (tmp_path / "p.txt").write_text("a")
    code, _, stderr = call(["bench", str(tmp_path / "p.txt"), "--target", "t.gguf", "-k", "auto", "--no-lookup"])
    assert code == 2 and "nothing to compare" in stderr and stderr.count("\n") == 1


def test_an_output_file_in_a_missing_folder_is_refused_before_the_runs(tmp_path):
    (tmp_path / "p.txt").write_text("a")
    code, _, stderr = call(
        ["bench", str(tmp_path / "p.txt"), "--target", "t.gguf", "--json", str(tmp_path / "nowhere" / "out.json")]
    )
    assert code == 2 and "folder does not exist" in stderr and stderr.count("\n") == 1


def test_an_output_path_that_is_a_folder_is_refused_before_the_runs(tmp_path):
    (tmp_path / "p.txt").write_text("a")
    for option, says in (("--json", "is a folder; name a file in it"), ("--csv", "is a directory")):
        code, _, stderr = call(["bench", str(tmp_path / "p.txt"), "--target", "t.gguf", option, str(tmp_path)])
        assert code == 2 and says in stderr and stderr.count("\n") == 1
