"""C1 control characters (U+0080 to U+009F: 8-bit CSI, OSC, ... that some terminals obey) in model
output reach no terminal as such: the chat's live view, its plain view and `run`'s stdout show
them as \\x escapes on a terminal, as C0 controls are shown as pictures; a pipe gets the text as
generated."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console
from test_chat import ROUNDS, _Tty, recorded, terminal

from specgen.terminal.live import PlainView, RichView, visible
from specgen.terminal.run_view import streamer

C1 = "a\x9b2Jb\x9d0;title\x9cc\x85"  # CSI clear screen, OSC set title, ST, NEL
SHOWN = "a\\x9b2Jb\\x9d0;title\\x9cc\\x85"


def c1_chars(text: str) -> list[str]:
    return [char for char in text if 0x80 <= ord(char) <= 0x9F]


def test_visible_escapes_every_c1_control_and_keeps_latin_1_text():
    assert visible(C1) == SHOWN
    assert c1_chars(visible("".join(map(chr, range(0x80, 0xA0))))) == []
    assert visible("caf\u00e9 \u00a0\u00ff") == "caf\u00e9 \u00a0\u00ff", "U+00A0 on is text"


def test_the_live_and_plain_views_show_c1_controls_escaped_on_a_terminal():
    event = replace(ROUNDS[0], accepted_text=C1, target_text="\n")
    out: Console = terminal()
    RichView(False, console=out, errors=terminal()).render(recorded([event]), k=3)
    assert c1_chars(out.file.getvalue()) == [] and SHOWN in out.file.getvalue()
    screen, pipe = _Tty(), io.StringIO()
    PlainView(screen, io.StringIO()).render(recorded([event]), k=3)
    PlainView(pipe, io.StringIO()).render(recorded([event]), k=3)
    assert screen.getvalue() == SHOWN + "\n" and pipe.getvalue() == C1 + "\n"


def test_run_streams_c1_controls_escaped_to_a_terminal_and_as_is_to_a_pipe():
    event = replace(ROUNDS[0], accepted_text=C1, target_text="\x1b")
    screen, pipe = _Tty(), io.StringIO()
    streamer(screen)(event)
    streamer(pipe)(event)
    assert screen.getvalue() == SHOWN + "\u241b" and pipe.getvalue() == C1 + "\x1b"
