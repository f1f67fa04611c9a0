"""Chat messages beyond one typed line: blocks between \"\"\" lines, attached files, a conversation
saved for `specgen bench` and loaded again, a reply generated again; in process on the tiny
models, then in a real pseudo-terminal with the keys a terminal sends (bracketed paste included)."""

from __future__ import annotations

import io
import json
import signal
import subprocess

import pexpect
import pytest
from costfiles import plant_pinned_costs
from test_chat import ESC, SPECGEN, new_chat, spawn

from specgen.bench.prompts import read_prompt_files
from specgen.decoding.drafters.base import Source
from specgen.decoding.drafters.lookup import PromptLookupDrafter
from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.events import consume
from specgen.decoding.loop import GenerationConfig, generate
from specgen.llama.model import LoadOptions, Model
from specgen.terminal.chat import Chat, ChatOptions
from specgen.terminal.live import PlainView

PASTE_ON, PASTE_OFF = "\x1b[?2004h", "\x1b[?2004l"
START, END = "\x1b[200~", "\x1b[201~"


def keys(*items):
    """A line reader over `items`; an exception among them is raised when its turn comes (Ctrl-C)."""
    feed = list(items)

    def read(_prompt: str):
        item = feed.pop(0) if feed else None
        if isinstance(item, BaseException):
            raise item
        return item

    return read


def plain_chat(pair, **settings) -> tuple[Chat, io.StringIO]:
    err = io.StringIO()
    return new_chat(*pair, PlainView(io.StringIO(), err), **settings), err


def users(chat: Chat) -> list[str]:
    return [content for role, content in chat.conversation.messages if role == "user"]


# -- in process ------------------------------------------------------------------------------


def test_lines_between_triple_quotes_are_one_message(pair):
    chat, err = plain_chat(pair)
    pasted = "/usr/bin/env python\nprint(1)"  # a pasted block that starts with a slash is no command
    chat.loop(keys('"""', "    def f():", "", "/help", "        return 1", '"""', "/stats", "  one line  ", pasted))
    assert users(chat) == ["    def f():\n\n/help\n        return 1", "one line", pasted], (
        "the block kept its lines and indentation; /help inside it is text"
    )
    assert chat.totals.replies == 3 and "commands:" not in err.getvalue() and "unknown command" not in err.getvalue()


def test_ctrl_c_inside_a_block_drops_it_and_the_end_of_input_inside_one_sends_nothing(pair):
    chat, err = plain_chat(pair)
    chat.loop(keys('"""', "half a message", KeyboardInterrupt(), "after", '"""', "never closed"))
    assert "message dropped (1 line(s)); nothing was sent" in err.getvalue()
    assert 'the input ended inside a """ message; it was not sent' in err.getvalue()
    assert users(chat) == ["after"], "only the message after the dropped block was sent"


def test_a_file_goes_with_the_next_message_fenced_under_its_name(pair, tmp_path, monkeypatch):
    (tmp_path / "my notes.md").write_text("Use ```code``` here\n")
    (tmp_path / "b.py").write_text("x = 1")
    chat, err = plain_chat(pair)
    monkeypatch.chdir(tmp_path)
    chat.loop(
        keys(
            "/file", "/file missing.py", f"/file {tmp_path}", "/file 'my notes.md'", "/file b.py", "explain", "and now?"
        )
    )
    assert users(chat) == [
        "my notes.md:\n````md\nUse ```code``` here\n````\n\nb.py:\n```py\nx = 1\n```\n\nexplain",
        "and now?",
    ], "attached once, to the next message only"
    log = err.getvalue()
    assert "/file needs a path: /file PATH" in log
    assert "cannot read missing.py: no such file" in log
    assert f"cannot read {tmp_path}: it is a folder; name a file in it" in log
    assert "attached my notes.md (1 line, 20 bytes); it goes with your next message" in log
    assert "attached b.py (1 line, 5 bytes); 2 files go with your next message" in log


def test_a_saved_chat_is_what_bench_reads_one_prompt_per_turn(pair, tmp_path):
    chat, err = plain_chat(pair, system="be brief")
    replies = []
    for message in ("hi", "the print of self"):
        chat.loop(keys(message))
        replies.append(chat.totals.last.text)
    chat.loop(keys(f"/save {tmp_path / 'talk.jsonl'}", f"/save {tmp_path / 'talk.log'}"))
    assert "saved 2 turn(s) to" in err.getvalue() and "'specgen bench " in err.getvalue()
    for name in ("talk.jsonl", "talk.log"):  # bench knows JSONL by its first line, whatever the name
        prompts = read_prompt_files([str(tmp_path / name)], None)
        assert [p.messages for p in prompts] == [
            (("system", "be brief"), ("user", "hi")),
            (("system", "be brief"), ("user", "hi"), ("assistant", replies[0]), ("user", "the print of self")),
        ]
        assert [p.text for p in prompts] == ["hi", "the print of self"]
    last = json.loads((tmp_path / "talk.jsonl").read_text().splitlines()[-1])
    assert last["reply"] == replies[1]


def test_save_refuses_without_a_name_without_turns_or_without_a_folder(pair, tmp_path):
    (tmp_path / "a-file").write_text("")
    chat, err = plain_chat(pair)
    chat.loop(keys("/save", f"/save {tmp_path / 'early.jsonl'}", "hi", f"/save {tmp_path / 'a-file' / 'x.jsonl'}"))
    log = err.getvalue()
    assert "/save needs a file name: /save FILE.jsonl" in log
    assert "nothing to save yet: the conversation has no turns" in log
    assert f"could not write {tmp_path / 'a-file' / 'x.jsonl'}; check that its folder exists and can be written" in log
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"], "no file, and nothing half-written"


def test_a_loaded_chat_goes_on_as_if_it_had_never_stopped(pair, tmp_path):
    saved = tmp_path / "talk.jsonl"
    first, _ = plain_chat(pair, system="be brief")
    first.loop(keys("hi", "the print of self", f"/save {saved}"))
    history = list(first.conversation.messages)

    second, err = plain_chat(pair, system="other")  # its caches hold another conversation when it loads
    second.loop(keys("something else entirely", f"/load {saved}", "and then"))
    assert "loaded 2 turn(s) from" in err.getvalue() and "with its system prompt" in err.getvalue()
    assert second.conversation.messages[:-2] == history and second.conversation.system == "be brief"
    after_load = second.totals.last

    target, draft = pair
    target.truncate(0)
    draft.truncate(0)
    fresh = target.encode_chat([*history, ("user", "and then")])
    text, _summary = consume(generate(target, ModelDrafter(draft), fresh, second.config), lambda _: None)
    assert after_load.text == text, "the same reply as from empty caches"
    assert after_load.summary.prompt_tokens == len(fresh)

    second.turn("one more")  # the caches hold the loaded conversation now: only the new turn is prefilled
    new_turn = second.totals.last.summary.prompt_tokens - len(fresh) - len(after_load.tokens)
    assert new_turn <= second.totals.last.summary.prefilled_tokens <= new_turn + 1


def test_a_loaded_chat_that_ends_with_the_user_is_answered_at_once(pair, tmp_path):
    bench_prompt = tmp_path / "prompt.jsonl"
    bench_prompt.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    chat, err = plain_chat(pair, system="dropped by the load")
    chat.loop(keys(f"/load {bench_prompt}"))
    assert "loaded 1 turn(s) from" in err.getvalue() and "without a system prompt" in err.getvalue()
    assert chat.totals.replies == 1 and chat.conversation.messages == [
        ("user", "hi"),
        ("assistant", chat.totals.last.text),
    ]


@pytest.mark.parametrize(
    "content, problem",
    [
        (None, "cannot load {path}: no such file"),  # read as attachments are: the same words
        ("", "cannot load {path}: it is empty"),
        ("{not json\n", "cannot load {path}: line 1 is not valid JSON"),
        (
            '{"prompt": "hi"}\n\n',
            'cannot load {path}: line 1 has no "messages" list; /load reads the files /save writes',
        ),
        (
            '{"messages": [{"role": "user", "content": "a"}], "reply": 3}',
            'cannot load {path}: line 1: "reply" must be a string',
        ),
        ('{"messages": [{"role": "tool", "content": "a"}]}', 'cannot load {path}: line 1: each message needs a "role"'),
        ('{"messages": [{"role": "system", "content": "a"}]}', "cannot load {path}: line 1 holds no user message"),
        (
            '{"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}',
            "cannot load {path}: line 1: message 2 is the user's where the assistant's belongs",
        ),
    ],
)
def test_a_file_that_is_not_a_conversation_is_one_line_and_the_chat_goes_on(pair, tmp_path, content, problem):
    path = tmp_path / "bad.jsonl"
    if content is not None:
        path.write_text(content)
    chat, err = plain_chat(pair)
    chat.loop(keys("hi", f"/load {path}"))
    expected = (
        problem.format(path=path).replace("cannot load", "cannot read")
        if content is None
        else problem.format(path=path)
    )
    assert expected in err.getvalue()
    assert users(chat) == ["hi"] and chat.conversation.turns == 1, "the conversation is as it was"


def test_retry_generates_the_last_reply_again_from_the_cached_prompt(pair):
    chat, err = plain_chat(pair)
    chat.loop(keys("/retry", "hi", "/retry"))
    log = err.getvalue()
    assert "nothing to retry: there is no reply yet" in log and "the last reply again:" in log
    again = chat.totals.last
    assert chat.totals.replies == 2 and len([line for line in log.splitlines() if " tok/s" in line]) == 2
    assert chat.conversation.messages == [("user", "hi"), ("assistant", again.text)], "the retry took the reply's place"
    assert again.summary.prefilled_tokens <= 1, "the prompt was still in the cache"
    chat.loop(keys("/reset", "/retry"))
    assert err.getvalue().count("nothing to retry") == 2


def test_retry_at_temperature_0_repeats_and_when_sampling_draws_again(pair):
    chat, _ = plain_chat(pair)
    greedy = []
    for line in ("hi", "/retry", "/retry"):
        chat.loop(keys(line))
        greedy.append(chat.totals.last.text)
    assert greedy[0] == greedy[1] == greedy[2] and chat.totals.replies == 3
    chat.loop(keys("/temp 1.5"))  # unseeded: each retry draws anew
    sampled = []
    for _ in range(3):
        chat.loop(keys("/retry"))
        sampled.append(chat.totals.last.text)
    assert len(set(sampled)) > 1, "three sampled retries, all alike"
    assert chat.conversation.turns == 1


def test_a_greedy_retry_with_auto_follows_the_reply_it_repeats(pair, tmp_path):
    target, draft = pair
    target.truncate(0)
    draft.truncate(0)
    options = ChatOptions(GenerationConfig(max_tokens=24, draft_tokens=4), True, None)
    chat = Chat(target, ModelDrafter(draft), options, PlainView(io.StringIO(), io.StringIO()))
    chat.loop(keys("the print of self"))
    first = chat.totals.last
    assert Source.REPEAT not in first.summary.by_source
    # the costs the first reply measured, pinned flat: how far auto follows a copy it is sure of must
    # not depend on how busy the machine was while the tiny models' passes were timed
    plant_pinned_costs(tmp_path / "cache", flat=True)
    chat.loop(keys("/retry"))
    again = chat.totals.last
    assert again.text == first.text
    followed = again.summary.by_source[Source.REPEAT]
    assert followed.kept == followed.drafted >= (len(first.tokens) - 1) // 2
    chat.loop(keys("/temp 0.05", "/retry"))  # sampled: a new draw, not the reply before followed
    assert Source.REPEAT not in chat.totals.last.summary.by_source


def test_help_lists_the_message_commands(pair):
    chat, err = plain_chat(pair)
    chat.loop(keys("/help"))
    for command in ("/file PATH", "/save FILE", "/load FILE", "/retry", '"""'):
        assert command in err.getvalue()


# -- a saved chat in specgen bench -------------------------------------------------------------


def test_specgen_bench_times_each_turn_of_a_saved_chat(tiny_models, pair, tmp_path):
    chat, _ = plain_chat(pair, system="be brief")
    chat.loop(keys("hi", "the print of self", f"/save {tmp_path / 'talk.jsonl'}"))
    done = subprocess.run(
        [
            SPECGEN,
            "bench",
            str(tmp_path / "talk.jsonl"),
            "--target",
            str(tiny_models["target"]),
            "--draft",
            str(tiny_models["draft"]),
            "--threads",
            "1",
            "-k",
            "auto",
            "-n",
            "8",
            "-r",
            "1",
            "--warmup",
            "0",
            "--json",
            str(tmp_path / "bench.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "bench.json").read_text())
    assert [(p["name"], p["text"]) for p in report["prompts"]] == [("talk:1", "hi"), ("talk:2", "the print of self")]
    assert sorted((r["prompt"], r["config"]) for r in report["runs"]) == [
        ("talk:1", "draft-auto"),
        ("talk:1", "target"),
        ("talk:2", "draft-auto"),
        ("talk:2", "target"),
    ]


# -- a real terminal --------------------------------------------------------------------------


def finish(child: pexpect.spawn) -> str:
    """Ctrl-D at the prompt; the whole screen, once the chat has ended."""
    child.expect_exact("you> ")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    return child.logfile_read.getvalue()


def watched(tiny_models, *extra) -> pexpect.spawn:
    child = spawn(tiny_models, "-n", "16", *extra)
    child.logfile_read = io.StringIO()
    return child


def test_a_block_pasted_into_a_terminal_is_one_message(tiny_models, tmp_path):
    child = watched(tiny_models)
    child.expect_exact("you> ")
    child.send(f"look: {START}def f():\r    return 1\r{END}")  # a terminal sends a pasted newline as \r
    child.expect_exact("[pasted 2 lines]")
    child.send(" thanks\r")
    child.expect("tok/s")
    child.expect_exact("you> ")
    child.send(f"/save {tmp_path / 'talk.jsonl'}\r")
    child.expect_exact("saved 1 turn(s)")
    screen = finish(child)
    assert [p.text for p in read_prompt_files([str(tmp_path / "talk.jsonl")], None)] == [
        "look: def f():\n    return 1\n thanks"
    ]
    assert ESC.sub("", screen).count("prefilled") == 1, "one reply (its final status line)"
    prompts = screen.split(PASTE_ON)[1:]
    assert len(prompts) == 3 and all(PASTE_OFF in after for after in prompts), "marking on at each prompt, then off"
    assert screen.rstrip().endswith(PASTE_OFF)


def test_triple_quotes_typed_in_a_terminal_and_ctrl_c_inside(tiny_models, tmp_path):
    child = watched(tiny_models)
    for line in ('"""', "first line", "  second line"):
        child.expect(r"(you|\.\.\.)> ")
        child.send(line + "\r")
    child.expect_exact("...> ")
    child.send('"""\r')
    child.expect("tok/s")
    child.expect_exact("you> ")
    child.send('"""\rnever sent\r\x03')
    child.expect_exact("message dropped (1 line(s)); nothing was sent")
    child.expect_exact("you> ")
    child.send(f"/save {tmp_path / 'talk.jsonl'}\r")
    child.expect_exact("saved 1 turn(s)")
    finish(child)
    assert [p.text for p in read_prompt_files([str(tmp_path / "talk.jsonl")], None)] == ["first line\n  second line"]


def test_file_retry_save_and_load_in_a_terminal(tiny_models, tmp_path):
    (tmp_path / "app.py").write_text("def f():\n    return 1\n")
    child = watched(tiny_models)
    child.expect_exact("you> ")
    child.send(f"/file {tmp_path / 'app.py'}\r")
    child.expect_exact("(2 lines, 22 bytes)")
    child.send("explain\r")
    child.expect("tok/s")
    child.expect_exact("you> ")
    child.send("/retry\r")
    child.expect_exact("the last reply again:")
    child.expect("tok/s")
    child.expect_exact("you> ")
    child.send(f"/save {tmp_path / 'talk.jsonl'}\r")
    child.expect_exact("saved 1 turn(s)")
    child.expect_exact("you> ")
    child.send(f"/load {tmp_path / 'talk.jsonl'}\r")
    child.expect_exact("loaded 1 turn(s)")
    child.expect_exact("you> ")
    child.send("/stats\r")
    child.expect_exact("turns in the conversation: 1,")
    finish(child)
    saved = json.loads((tmp_path / "talk.jsonl").read_text())
    assert saved["messages"] == [
        {"role": "user", "content": f"{tmp_path / 'app.py'}:\n```py\ndef f():\n    return 1\n```\n\nexplain"}
    ]


@pytest.mark.parametrize("leave, status", [("sendeof", 0), ("sendintr", 0), ("SIGTERM", 128 + 15)])
def test_the_terminal_leaves_paste_marking_on_every_way_out(tiny_models, leave, status):
    child = watched(tiny_models)
    child.expect_exact("you> ")
    child.send("typed but not sent")
    if leave == "SIGTERM":
        child.kill(signal.SIGTERM)
    elif leave == "sendintr":
        child.sendintr()  # Ctrl-C at the prompt keeps the chat; then Ctrl-D leaves
        child.expect_exact("(Ctrl-D or /quit leaves)")
        child.expect_exact("you> ")
        child.sendeof()
    else:
        child.sendeof()  # Ctrl-D with text on the line deletes, it does not leave
        child.send("\x15\x04")  # Ctrl-U empties the line, Ctrl-D leaves
    child.expect(pexpect.EOF)
    child.close()
    screen = child.logfile_read.getvalue()
    assert child.exitstatus == status
    assert screen.count(PASTE_ON) == screen.count(PASTE_OFF) >= 1 and screen.rstrip().endswith(PASTE_OFF)


def test_a_message_that_fences_code_has_auto_follow_it(tiny_models, tmp_path):
    """A message holding a fenced block (a pasted file, a /file attachment) has auto follow the
    block as a prediction (`Source.ATTACHED`); one without drafts nothing from it. The target
    writes one character per token whatever the prompt, so a message fencing its own reply gets
    that reply back, reprinting what it attached."""
    load = LoadOptions(n_ctx=2048, n_threads=1)
    options = ChatOptions(GenerationConfig(max_tokens=24, draft_tokens=4), True, None)
    with Model(tiny_models["target_fim_context_free"], load) as target:
        chat = Chat(target, PromptLookupDrafter(), options, PlainView(io.StringIO(), io.StringIO()))
        chat.loop(keys("walk"))
        first = chat.totals.last
        assert Source.ATTACHED not in first.summary.by_source
        plant_pinned_costs(tmp_path / "cache", flat=True)  # how far auto copies must not depend on a busy machine
        target.truncate(0)
        chat = Chat(target, PromptLookupDrafter(), options, PlainView(io.StringIO(), io.StringIO()))
        chat.loop(keys('"""', "walk this", "```", first.text, "```", '"""'))
        again = chat.totals.last
        assert again.text == first.text
        assert again.summary.by_source[Source.ATTACHED].kept >= len(first.tokens) // 2
