"""The chat's line editor on a real pseudo-terminal: keys typed into its master side as a terminal
sends them (bracketed paste marks included), the editor reading its slave side in this process."""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import struct
import termios
import threading
import time

import pytest

from specgen.terminal.line_editor import LineEditor

PASTE_ON, PASTE_OFF = b"\x1b[?2004h", b"\x1b[?2004l"
START, END = "\x1b[200~", "\x1b[201~"


class Pty:
    """A pseudo-terminal whose screen (what the editor writes) is collected as it arrives."""

    def __init__(self):
        self.master, self.slave = os.openpty()
        self.screen = bytearray()
        self.out = open(self.slave, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 - open while the Pty lives; close() closes it
        self.collecting = True
        self.collector = threading.Thread(target=self._collect, daemon=True)
        self.collector.start()

    def _collect(self) -> None:
        while self.collecting:
            if select.select([self.master], [], [], 0.01)[0]:
                try:
                    self.screen += os.read(self.master, 4096)
                except OSError:
                    return

    def raw(self) -> bool:
        return not termios.tcgetattr(self.slave)[3] & termios.ICANON

    def type_when_raw(self, keys: str | bytes) -> threading.Thread:
        """Type `keys` once the editor has put the terminal in raw mode (typed earlier, the line
        discipline would cook them: Enter made a newline, Ctrl-C a signal)."""

        def type_() -> None:
            deadline = time.monotonic() + 10
            while not self.raw() and time.monotonic() < deadline:
                time.sleep(0.002)
            os.write(self.master, keys if isinstance(keys, bytes) else keys.encode("utf-8"))

        typist = threading.Thread(target=type_, daemon=True)
        typist.start()
        return typist

    def seen(self, ready=lambda screen: True) -> bytes:
        """The screen so far, once `ready(screen)` holds (or after 10 s)."""
        deadline = time.monotonic() + 10
        while not ready(bytes(self.screen)) and time.monotonic() < deadline:
            time.sleep(0.01)
        return bytes(self.screen)

    def hang_up(self) -> None:
        """Close the master side, as a terminal window closing does."""
        self.collecting = False
        self.collector.join(5)
        os.close(self.master)
        self.master = -1

    def close(self) -> None:
        if self.master >= 0:
            self.hang_up()
        with contextlib.suppress(OSError):  # what could not reach a terminal that has gone
            self.out.close()
        os.close(self.slave)


@pytest.fixture
def pty():
    terminal = Pty()
    yield terminal
    terminal.close()


def read(pty: Pty, editor: LineEditor, keys: str | bytes, prompt: str = "you> "):
    typist = pty.type_when_raw(keys)
    try:
        return editor.read(prompt)
    finally:
        typist.join(10)


def test_a_bracketed_paste_is_one_line_with_its_newlines(pty):
    editor = LineEditor(pty.slave, pty.out)
    line = read(pty, editor, f"fix this: {START}def f():\r    return 1\r\nx = 2{END} please\r")
    assert line == "fix this: def f():\n    return 1\nx = 2 please"
    shown = b"you> fix this: [pasted 3 lines] please"
    assert shown in pty.seen(lambda screen: shown in screen), "the paste shows as its size"


def test_paste_marking_is_on_while_reading_and_off_on_every_way_out(pty):
    editor = LineEditor(pty.slave, pty.out)
    cooked = termios.tcgetattr(pty.slave)
    outcomes = []
    for reads, keys in enumerate(("hello\r", "abc\x03", "\x04"), start=1):
        try:
            outcomes.append(read(pty, editor, keys))
        except KeyboardInterrupt:
            outcomes.append("Ctrl-C")
        screen = pty.seen(lambda screen, reads=reads: screen.count(PASTE_OFF) >= reads)
        assert screen.rfind(PASTE_ON) < screen.rfind(PASTE_OFF), f"marking left on after {keys!r}"
        assert termios.tcgetattr(pty.slave) == cooked, f"terminal modes not restored after {keys!r}"
    assert outcomes == ["hello", "Ctrl-C", None]
    assert pty.seen().count(PASTE_ON) == pty.seen().count(PASTE_OFF) == 3


def test_editing_keys_move_and_delete(pty):
    editor = LineEditor(pty.slave, pty.out)
    left, home, end, delete = "\x1b[D", "\x1b[H", "\x1bOF", "\x1b[3~"
    assert read(pty, editor, f"helo{left}l{end}!\r") == "hello!"
    assert read(pty, editor, f"xworld{home}{delete}hello {end}\x7f\x7fd\r") == "hello word"
    assert read(pty, editor, "one two three\x17\x17four\r") == "one four"
    assert read(pty, editor, f"abc def{left}{left}{left}\x0b\r") == "abc "
    assert read(pty, editor, f"abc def{left}{left}{left}\x15\r") == "def"
    assert read(pty, editor, "a\x01b\x05c\x02\x02\x06d\r") == "badc"


def test_a_paste_is_one_piece_for_the_cursor(pty):
    editor = LineEditor(pty.slave, pty.out)
    line = read(pty, editor, f"a{START}1\r2{END}b\x1b[D\x7f\r")
    assert line == "ab", "one backspace took the whole paste"
    assert read(pty, editor, f"{START}x y z{END}\x1b[D\x7f\r") == "x yz", "a one-line paste is characters"


def test_history_walks_earlier_lines_and_keeps_the_new_one(pty):
    editor = LineEditor(pty.slave, pty.out)
    up, down = "\x1b[A", "\x1b[B"
    for line in ("first", f"{START}two\rlines{END}", "third"):
        read(pty, editor, line + "\r")
    assert read(pty, editor, f"{up}{up}\r") == "two\nlines"
    assert read(pty, editor, f"draft{up}{up}{down}{down}{down}!\r") == "draft!"
    assert read(pty, editor, f"{up}{up}{up}{up}{up}{up}\r") == "first", "the oldest line stops the walk"


def test_utf8_wide_characters_and_unknown_keys(pty):
    editor = LineEditor(pty.slave, pty.out)
    assert read(pty, editor, "ü漢字\x1b[D\x7f\x1b[15~\x1b[1;5C\r") == "ü字", "F5 and Ctrl-→ do nothing"
    assert read(pty, editor, "a\x1bb\r") == "a", "Alt-b does nothing"
    half = "é".encode()[:1]
    assert read(pty, editor, b"x" + half + b"y\r") == "x\ufffdy", "half a character, then a whole one"


def test_lines_typed_ahead_are_read_in_turn(pty):
    editor = LineEditor(pty.slave, pty.out)
    assert read(pty, editor, "one\rtwo\r") == "one"
    assert editor.read("you> ") == "two", "the second line was already typed"


def test_a_long_line_wraps_and_the_cursor_returns_to_its_start(pty):
    fcntl.ioctl(pty.slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 20, 0, 0))  # 24 rows of 20 columns
    editor = LineEditor(pty.slave, pty.out)
    assert read(pty, editor, "x" * 30 + "\x01\r") == "x" * 30
    screen = pty.seen(lambda screen: screen.endswith(PASTE_OFF)).decode()
    assert "\x1b[1A\r\x1b[5C" in screen, "Home on a line of two rows: up one row, then after the prompt"


def test_a_terminal_that_goes_away_ends_the_input(pty):
    editor = LineEditor(pty.slave, pty.out)
    typist, closing = pty.type_when_raw("abc"), threading.Timer(0.3, pty.hang_up)
    closing.start()
    assert editor.read("you> ") is None, "gone while reading"
    typist.join(10)
    closing.join(10)
    assert editor.read("you> ") is None, "gone before reading"
