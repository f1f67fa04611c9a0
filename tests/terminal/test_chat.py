"""`specgen chat`: the renderers on recorded events, the conversation's cache reuse, the slash
commands, a full context, a pipe, and a real pseudo-terminal driven like a person would."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pexpect
from costfiles import plant_slow_costs
from rich.console import Console

from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.events import Round, Summary
from specgen.decoding.loop import GenerationConfig
from specgen.llama.calibrate import cached_costs
from specgen.llama.conversation import Conversation
from specgen.llama.model import LoadOptions, Model
from specgen.terminal.chat import Chat, ChatOptions
from specgen.terminal.live import (
    PlainView,
    RichView,
    drive,
    make_view,
    styled,
    visible,
    wants_plain,
)

SPECGEN = str(Path(sys.executable).with_name("specgen"))
ESC = re.compile(r"\x1b\[[0-9;]*m")

ROUNDS = [
    Round(drafted=(10, 11, 12), accepted=2, token=13, accepted_text="Hello", target_text=",", rejected_text="XYZ"),
    Round(drafted=(14, 15), accepted=2, token=16, accepted_text=" wor", target_text="ld", rejected_text=""),
    Round(drafted=(17,), accepted=0, token=None, accepted_text="", target_text="", rejected_text="\nQ"),
]
SUMMARY = Summary(
    mode="speculative",
    draft_tokens=3,
    prompt_tokens=9,
    prefilled_tokens=8,
    tokens=6,
    rounds=3,
    drafted=6,
    accepted=4,
    tokens_per_second=123.4,
    prefill_s=0.01,
    decode_s=0.05,
    draft_s=0.02,
    verify_s=0.02,
    other_s=0.01,
    stop_reason="eog",
)


def recorded(rounds=ROUNDS, summary=SUMMARY):
    """Replays loop events with generate's contract: Ctrl-C thrown in is answered with the Summary."""
    try:
        yield from rounds
    except KeyboardInterrupt:
        yield replace(summary, stop_reason="interrupted")
        return
    yield summary


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def terminal() -> Console:
    return Console(
        force_terminal=True, color_system="standard", file=io.StringIO(), width=80, height=24, highlight=False
    )


# -- renderers on recorded events ----------------------------------------------------------


def test_rich_view_colours_accepted_and_target_tokens_and_shows_the_status():
    out, err = terminal(), terminal()
    view = RichView(show_rejected=False, console=out, errors=err)
    view.welcome("chat with tiny")
    reply = view.render(recorded(), k=3)
    screen = out.file.getvalue()
    assert "\x1b[32mHello" in screen and "\x1b[32m wor" in screen  # accepted draft tokens: green
    assert "\x1b[36m," in screen and "\x1b[36mld" in screen  # the target's own tokens: cyan
    assert "XYZ" not in screen, "rejected tokens appear only with --show-rejected"
    assert "legend" in screen and "accepted draft tokens" in screen and "target's own tokens" in screen
    assert "accept 67% (4/6) · 123.4 tok/s · K 3 · 3 rounds · 6 tokens" in ESC.sub("", screen)
    assert ESC.sub("", screen).count("Hello, world") >= 1, "the finished reply is printed whole"
    assert reply.text == "Hello, world" and reply.tokens == (10, 11, 13, 14, 15, 16)
    assert reply.summary is SUMMARY and reply.first_token_s is not None


def test_show_rejected_strikes_the_rejected_draft_tokens_through():
    text = styled(ROUNDS[0], show_rejected=True)
    assert text.plain == "HelloXYZ,"
    assert [(text.plain[s.start : s.end], str(s.style)) for s in text.spans] == [
        ("Hello", "green"),
        ("XYZ", "red dim strike"),
        (",", "cyan"),
    ]
    assert styled(ROUNDS[2], show_rejected=True).plain == "↵Q", "a rejected newline must not break the line"
    out = terminal()
    RichView(show_rejected=True, console=out, errors=terminal()).render(recorded(), k=3)
    codes = re.search(r"\x1b\[([0-9;]*)mXYZ", out.file.getvalue()).group(1).split(";")
    assert {"2", "9", "31"} <= set(codes), "dim, struck through, red"


def test_model_output_cannot_send_escape_codes_to_the_terminal():
    event = replace(ROUNDS[0], accepted_text="a\x1b[2Jb\x07", target_text="\tc\n")
    assert visible(event.accepted_text) == "a␛[2Jb␇"
    out = terminal()
    RichView(False, console=out, errors=terminal()).render(recorded([event]), k=3)
    assert "\x1b[2J" not in out.file.getvalue() and "\x07" not in out.file.getvalue()
    screen, pipe = _Tty(), io.StringIO()
    PlainView(screen, io.StringIO()).render(recorded([event]), k=3)
    PlainView(pipe, io.StringIO()).render(recorded([event]), k=3)
    assert screen.getvalue() == "a␛[2Jb␇\tc\n" and pipe.getvalue() == "a\x1b[2Jb\x07\tc\n"


def test_plain_view_writes_only_text_to_stdout_and_the_status_to_stderr():
    out, err = io.StringIO(), io.StringIO()
    reply = PlainView(out, err).render(recorded(), k=3)
    assert out.getvalue() == "Hello, world\n"
    assert "\x1b" not in out.getvalue() + err.getvalue()
    assert err.getvalue().startswith("accept 67% (4/6) · 123.4 tok/s")
    assert reply.text == "Hello, world"


def test_ctrl_c_while_rendering_ends_the_reply_with_the_loop_summary():
    shown = []

    def on_round(event):
        shown.append(event)
        if len(shown) == 2:
            raise KeyboardInterrupt

    reply = drive(recorded(), on_round)
    assert reply.text == "Hello, world" and reply.summary.stop_reason == "interrupted"
    err = io.StringIO()
    PlainView(io.StringIO(), err).render(recorded(ROUNDS[:1], replace(SUMMARY, stop_reason="interrupted")), k=3)
    assert "interrupted" in err.getvalue()


def test_no_color_plain_and_pipes_choose_the_plain_view(monkeypatch):
    monkeypatch.setattr(sys, "stdin", _Tty())
    monkeypatch.setattr(sys, "stdout", _Tty())
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert not wants_plain(False)
    assert isinstance(make_view(False, False), RichView)
    assert wants_plain(True)
    monkeypatch.setenv("NO_COLOR", "1")
    assert isinstance(make_view(False, False), PlainView)
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setattr(sys, "stdin", io.StringIO())
    assert wants_plain(False), "a pipe on stdin means plain text"


# -- the conversation and the session, in process ------------------------------------------


def new_chat(target, draft, view, max_tokens=16, system=None) -> Chat:
    target.truncate(0)
    draft.truncate(0)
    options = ChatOptions(GenerationConfig(max_tokens=max_tokens, draft_tokens=4), False, system)
    return Chat(target, ModelDrafter(draft), options, view)


def script(*lines, left=None):
    """A line reader over `lines`; what it never read stays in `left`."""
    feed = [] if left is None else left
    feed.extend(lines)
    return lambda _prompt: feed.pop(0) if feed else None


def test_later_turns_prefill_only_the_new_turn(pair):
    chat = new_chat(*pair, PlainView(io.StringIO(), io.StringIO()), system="be brief")
    prefilled, prompts = [], []
    for _ in range(4):
        history = list(chat.conversation.tokens)
        prompt = chat.conversation.prompt("the print of self", reserve=16)
        assert list(prompt.tokens[: len(history)]) == history, "the cached tokens are the prompt's prefix"
        new_turn = len(prompt.tokens) - len(history)
        chat.turn("the print of self")
        prefilled.append(chat.totals.last.summary.prefilled_tokens)
        prompts.append(chat.totals.last.summary.prompt_tokens)
        if history:
            assert new_turn <= prefilled[-1] <= new_turn + 1, (prefilled, new_turn)  # + the reply's uncached end
    assert prompts[3] > prompts[1] + 30, "the history grows..."
    assert max(prefilled[1:]) - min(prefilled[1:]) <= 1, "...but each turn prefills the same few tokens"
    assert prefilled[0] == prompts[0], "the first turn prefills its whole prompt"


def test_a_reply_the_template_cannot_carry_keeps_its_tokens(pair):
    target = pair[0]
    conversation = Conversation(target, system="be brief")
    first = conversation.prompt("hi", reserve=16)
    conversation.commit(first, "a\x00b", [target.bos, 300, 301])  # a NUL ends the template's C string
    second = conversation.prompt("next", reserve=16)
    assert list(second.tokens[: len(conversation.tokens)]) == conversation.tokens
    assert second.tokens[len(conversation.tokens) :] == tuple(
        target.tokenize("<|im_end|>\n<|im_start|>user\nnext<|im_end|>\n<|im_start|>assistant\n", False, True)
    )


def test_slash_commands_change_k_temperature_and_reset(pair):
    err = io.StringIO()
    chat = new_chat(*pair, PlainView(io.StringIO(), err))
    left = []
    chat.loop(
        script(
            "/help",
            "hi",
            "/k 2",
            "hi again",
            "/temp 0.8",
            "/k 40",
            "/k x",
            "/temp -1",
            "/stats",
            "/reset",
            "hello",
            "/k auto",
            "/temp 0",
            "and you",
            "/k 0",
            "bye",
            "/nope",
            "/quit",
            "unread",
            left=left,
        )
    )
    log = err.getvalue()
    assert "/reset" in log and "/temp T" in log, "/help lists the commands"
    assert "K = 2" in log and "temperature = 0.8" in log and "conversation cleared" in log
    assert "/k needs a whole number from 0 to 32" in log and "/temp needs a number" in log
    assert "unknown command /nope" in log
    assert "2 replies" in log and "turns in the conversation: 2," in log, "/stats before /reset"
    statuses = " ".join(line for line in log.splitlines() if " tok/s · " in line)
    assert re.findall(r"K \d+|K auto|target only", statuses) == ["K 4", "K 2", "K 2", "K auto", "target only"]
    assert chat.config.draft_tokens == 0 and chat.config.sampling.temperature == 0
    assert chat.conversation.turns == 3, "/reset forgot the first two turns"
    assert left == ["unread"], "/quit leaves at once"


def test_a_full_context_is_a_notice_with_a_way_on(tiny_models):
    load = LoadOptions(n_ctx=256, n_threads=1)
    with Model(tiny_models["target_endless"], load) as target, Model(tiny_models["draft"], load) as draft:
        err = io.StringIO()
        chat = new_chat(target, draft, PlainView(io.StringIO(), err), max_tokens=512)
        long = "the print of self and " * 5
        chat.loop(script(long, long, "if " * 300, "/stats", "hi", "/quit"))
    log = err.getvalue()
    assert "the 256-token context is full; your next message will drop the oldest turns" in log
    assert "forgot the oldest 1 turn(s) to make room" in log
    assert re.search(r"this message needs \d+ tokens but the context holds 256", log)
    assert chat.totals.replies == 3, "the chat went on after each notice"


def test_a_reply_that_finds_the_cached_costs_too_slow_has_the_next_reply_measure_them_again(
    pair, monkeypatch, tmp_path
):
    """Costs cached while the machine was busy (planted: 50 times this machine's) are found too
    slow by the first reply's one-token passes, which the chat says once on stderr; the second
    reply measures them again, which the chat says before it (and finds them right: no second
    note)."""
    monkeypatch.setenv("SPECGEN_CACHE_DIR", str(tmp_path))
    target, draft = pair
    cached_costs(target, draft)
    stored = plant_slow_costs(tmp_path)
    slow = json.loads(stored.read_text())["verify"]
    target.truncate(0)
    draft.truncate(0)
    options = ChatOptions(GenerationConfig(max_tokens=40, draft_tokens=4), True, None)
    out, err = io.StringIO(), io.StringIO()
    chat = Chat(target, ModelDrafter(draft), options, PlainView(out, err))
    chat.loop(script("def add(a, b):", "hi"))
    assert json.loads(stored.read_text())["verify"]["1"] < slow["1"] / 10
    notes = [line for line in err.getvalue().splitlines() if "cached step costs" in line]
    assert notes == [
        "specgen: note: this machine's cached step costs were measured while it was busy (passes now run"
        " faster); they were removed, and the next reply measures them again"
    ]
    assert "cached step costs" not in out.getvalue()
    lines = err.getvalue().splitlines()
    timing = [i for i, line in enumerate(lines) if "timing this machine's passes" in line]
    assert len(timing) == 1 and timing[0] > lines.index(notes[0])  # before the second reply only


# -- the command line: a pipe and a pseudo-terminal ----------------------------------------


def model_args(tiny_models, *extra):
    return [
        "chat",
        "--target",
        str(tiny_models["target"]),
        "--draft",
        str(tiny_models["draft"]),
        "--threads",
        "1",
        "--ctx",
        "2048",
        *extra,
    ]


def test_piped_chat_writes_two_plain_replies(tiny_models, pair):
    done = subprocess.run(
        [SPECGEN, *model_args(tiny_models, "-n", "24")],
        input="hi\nsecond\n/quit\n",
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TERM": "xterm-256color"},
    )
    assert done.returncode == 0, done.stderr
    out = io.StringIO()
    new_chat(*pair, PlainView(out, io.StringIO()), max_tokens=24).loop(script("hi", "second"))
    assert done.stdout == out.getvalue(), "the same two replies as the library gives"
    assert not ESC.search(done.stdout)
    assert len([line for line in done.stderr.splitlines() if " tok/s" in line]) == 2


def test_chat_refuses_a_model_without_a_chat_template(tiny_models):
    args = ["chat", "--target", str(tiny_models["target_no_template"]), "--no-draft"]
    done = subprocess.run([SPECGEN, *args], input="hi\n", capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().endswith(
        "has no chat template, so chat cannot tell the turns apart; use 'specgen run --raw' for plain completion"
    )


def spawn(tiny_models, *extra) -> pexpect.spawn:
    env = {**os.environ, "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    return pexpect.spawn(
        SPECGEN, model_args(tiny_models, *extra), env=env, encoding="utf-8", dimensions=(30, 100), timeout=30
    )


def test_chat_in_a_terminal_shows_colours_legend_and_status(tiny_models):
    child = spawn(tiny_models, "-n", "24", "-k", "4", "--show-rejected")
    screen = io.StringIO()
    child.logfile_read = screen
    for line in ("hi", "second"):
        child.expect_exact("you> ")
        child.sendline(line)
    child.expect_exact("you> ")
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    child.close()
    text = screen.getvalue()
    assert child.exitstatus == 0, text
    assert "legend" in text and "rejected draft tokens" in text
    replies = text.split("you> ", 1)[1]  # after the legend
    assert "\x1b[32m" in replies and "\x1b[36m" in replies, "accepted and target tokens in their colours"
    plain = ESC.sub("", text)
    assert len(re.findall(r"accept \d+% \(\d+/\d+\) · [\d.]+ tok/s · K 4", plain)) >= 2
    assert "first token" in " ".join(plain.split()), "time to first token in the status (wrapped at the width)"


def test_ctrl_c_stops_the_reply_and_keeps_the_chat(tiny_models):
    args = [
        "chat",
        "--target",
        str(tiny_models["target_endless"]),
        "--draft",
        str(tiny_models["draft"]),
        "--threads",
        "1",
        "--ctx",
        "8192",
        "-n",
        "100000",
    ]
    child = pexpect.spawn(
        SPECGEN, args, env={**os.environ, "TERM": "xterm-256color"}, encoding="utf-8", dimensions=(30, 100), timeout=30
    )
    child.expect_exact("you> ")
    child.sendline("hi")
    child.expect("tok/s")  # the live status line: the reply is streaming
    child.sendintr()
    child.expect("interrupted")
    child.expect_exact("you> ")
    child.sendline("/stats")
    child.expect(r"1 replies")
    child.expect_exact("you> ")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
