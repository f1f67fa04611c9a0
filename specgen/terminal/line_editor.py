"""The chat's input line on a terminal: a small line editor that keeps a pasted block whole.

input() returns one line at a time, so a pasted block of code would reach the chat as one
message per line; whether readline keeps a paste together depends on its version and the
user's inputrc. This editor reads the keys itself, with the terminal in raw mode only while it
reads, and asks the terminal to mark pastes (bracketed paste, ESC[?2004h): what arrives between
ESC[200~ and ESC[201~ is one piece of the line, newlines kept, shown as "[pasted N lines]" until
Enter sends it. Every way out of a read (Enter, Ctrl-C, Ctrl-D, SIGTERM or SIGHUP, an error)
turns paste marking off again (ESC[?2004l) and restores the terminal's modes.

Keys: Enter sends; ← → Home End (Ctrl-A, Ctrl-E) move; Backspace, Delete, Ctrl-U, Ctrl-K, Ctrl-W
delete; ↑ ↓ walk this chat's history; Ctrl-L clears the screen; Ctrl-Z suspends; Ctrl-C raises
KeyboardInterrupt; Ctrl-D on an empty line ends the input.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import select
import signal
import sys
import termios
from dataclasses import dataclass, field
from typing import TextIO

from rich.cells import cell_len

from specgen.terminal.live import visible

PASTE_ON, PASTE_OFF = "\x1b[?2004h", "\x1b[?2004l"
PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"
ESC_WAIT_S = 0.1  # a lone Escape key (or a broken UTF-8 character): nothing follows it within this time
LONGEST_SEQUENCE = 32

HOME = {"\x01", "\x1b[H", "\x1bOH", "\x1b[1~", "\x1b[7~"}
END = {"\x05", "\x1b[F", "\x1bOF", "\x1b[4~", "\x1b[8~"}
LEFT, RIGHT = {"\x02", "\x1b[D", "\x1bOD"}, {"\x06", "\x1b[C", "\x1bOC"}
UP, DOWN = {"\x10", "\x1b[A", "\x1bOA"}, {"\x0e", "\x1b[B", "\x1bOB"}
BACKSPACE, DELETE = {"\x7f", "\x08"}, {"\x1b[3~"}


@dataclass(frozen=True)
class Paste:
    """A bracketed paste's text, line ends as `\\n`."""

    text: str


@dataclass
class Line:
    """The line being edited: pieces (one character each, or a pasted block) and the cursor's index."""

    pieces: list[str] = field(default_factory=list)
    cursor: int = 0

    def insert(self, piece: str) -> None:
        self.pieces.insert(self.cursor, piece)
        self.cursor += 1

    def delete(self, start: int, end: int) -> None:
        del self.pieces[start:end]
        self.cursor = start

    def word_start(self) -> int:
        """Where the word before the cursor begins (spaces before the cursor are part of it)."""
        start = self.cursor
        while start and self.pieces[start - 1].isspace():
            start -= 1
        while start and not self.pieces[start - 1].isspace():
            start -= 1
        return start


def shown(piece: str) -> str:
    """How a piece looks on the line: a pasted block as its size, control characters as symbols."""
    if "\n" in piece:
        lines = len(piece.splitlines())
        return f"[pasted {lines} line{'' if lines == 1 else 's'}]"
    return visible(piece).replace("\t", " ")


def typed(key: str) -> bool:
    """Text to insert: printable characters or a tab (a broken UTF-8 byte arrives as U+FFFD and the next one)."""
    return not key.startswith("\x1b") and all(c.isprintable() or c == "\t" for c in key)


def edit(key: str, line: Line) -> None:
    """Apply a moving or deleting key to the line; other keys do nothing."""
    if key in HOME:
        line.cursor = 0
    elif key in END:
        line.cursor = len(line.pieces)
    elif key in LEFT:
        line.cursor = max(line.cursor - 1, 0)
    elif key in RIGHT:
        line.cursor = min(line.cursor + 1, len(line.pieces))
    elif key in BACKSPACE and line.cursor:
        line.delete(line.cursor - 1, line.cursor)
    elif key in DELETE or key == "\x04":
        line.delete(line.cursor, line.cursor + 1)
    elif key == "\x15":
        line.delete(0, line.cursor)
    elif key == "\x0b":
        line.delete(line.cursor, len(line.pieces))
    elif key == "\x17":
        line.delete(line.word_start(), line.cursor)


class LineEditor:
    """Reads lines from the terminal at `fd`, echoing to `out`; keeps the history of one chat."""

    def __init__(self, fd: int, out: TextIO):
        self.fd, self.out = fd, out
        self.history: list[list[str]] = []
        self.pending = bytearray()  # bytes read but not used yet: what was typed ahead
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.row = 0  # the screen row of the cursor, counted from the prompt's row
        self.outer: list = []  # the terminal's modes outside a read

    def read(self, prompt: str) -> str | None:
        """One line, pasted blocks inside it whole; None at Ctrl-D on an empty line or when the terminal goes."""
        try:
            self.outer = termios.tcgetattr(self.fd)
        except termios.error:  # the terminal has gone
            return None
        handlers = {number: signal.signal(number, _exit_on_signal) for number in (signal.SIGTERM, signal.SIGHUP)}
        try:
            self._enter()
            return self._edit(prompt)
        finally:
            self._leave()
            for number, handler in handlers.items():
                signal.signal(number, handler)

    def _enter(self) -> None:
        """Raw input (no echo, no line buffering, no signals from keys), output as before, pastes marked."""
        mode = [*self.outer[:6], list(self.outer[6])]
        mode[0] &= ~(termios.ICRNL | termios.INLCR | termios.IGNCR | termios.IXON)
        mode[3] &= ~(termios.ECHO | termios.ICANON | termios.ISIG | termios.IEXTEN)
        mode[6][termios.VMIN], mode[6][termios.VTIME] = 1, 0
        termios.tcsetattr(self.fd, termios.TCSADRAIN, mode)
        self._write(PASTE_ON)

    def _leave(self) -> None:
        """Paste marking off and the terminal's modes as they were before the read."""
        self._write(PASTE_OFF)
        with contextlib.suppress(OSError, termios.error):  # a terminal that has gone
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self.outer)

    def _edit(self, prompt: str) -> str | None:
        line = Line()
        entries, position = [*map(list, self.history), []], len(self.history)
        self.row = 0
        self._render(prompt, line)
        while True:
            key = self._key()
            if key == "":
                return None
            if key in ("\r", "\n", "\x03") or (key == "\x04" and not line.pieces):
                return self._finish(prompt, line, key)
            if isinstance(key, Paste):
                for piece in [key.text] if "\n" in key.text else list(key.text):
                    line.insert(piece)
            elif key in UP or key in DOWN:
                entries[position] = line.pieces
                position = max(0, min(position + (1 if key in DOWN else -1), len(entries) - 1))
                line = Line(list(entries[position]), len(entries[position]))
            elif key == "\x0c":
                self._write("\x1b[H\x1b[2J")
                self.row = 0
            elif key == "\x1a":
                self._suspend()
            elif typed(key):
                for character in key:
                    line.insert(character)
            else:
                edit(key, line)
            self._render(prompt, line)

    def _finish(self, prompt: str, line: Line, key: str) -> str | None:
        """Leave the cursor under the finished line; the line's text, None at the end, or Ctrl-C raised."""
        line.cursor = len(line.pieces)
        self._render(prompt, line)
        self._write("^C\r\n" if key == "\x03" else "\r\n")
        if key == "\x03":
            raise KeyboardInterrupt
        if key == "\x04":
            return None
        if line.pieces and line.pieces != (self.history[-1] if self.history else None):
            self.history.append(line.pieces)
        return "".join(line.pieces)

    def _render(self, prompt: str, line: Line) -> None:
        """Redraw the prompt and the line (wrapped to the terminal's width) and place the cursor."""
        width = _columns(self.fd)
        before = prompt + "".join(shown(p) for p in line.pieces[: line.cursor])
        whole = before + "".join(shown(p) for p in line.pieces[line.cursor :])
        cells = cell_len(whole)
        draw = (f"\x1b[{self.row}A" if self.row else "") + "\r\x1b[J" + whole
        if cells and cells % width == 0:
            draw += "\r\n"  # past the last column: move to the next row, as further text would
        end_row, cursor_cells = cells // width, cell_len(before)
        self.row, column = cursor_cells // width, cursor_cells % width
        if end_row > self.row:
            draw += f"\x1b[{end_row - self.row}A"
        draw += "\r" + (f"\x1b[{column}C" if column else "")
        self._write(draw)

    def _suspend(self) -> None:
        """Ctrl-Z: give the terminal back as it was, stop, and take it again when continued."""
        self._write("\r\n")
        self._leave()
        os.kill(os.getpid(), signal.SIGTSTP)
        self._enter()
        self.row = 0

    def _write(self, text: str) -> None:
        """Write to the terminal; where it has gone, nothing (the next read finds the end of input)."""
        with contextlib.suppress(OSError, ValueError):
            self.out.write(text)
            self.out.flush()

    def _key(self) -> str | Paste:
        """The next key: a character, an escape sequence, a Paste, or "" when the terminal has gone."""
        byte = self._byte()
        if byte is None:
            return ""
        if byte != 0x1B:
            return self._char(byte)
        follower = self._byte(ESC_WAIT_S)
        if follower is None:
            return "\x1b"
        sequence = bytearray([0x1B, follower])
        while follower in (ord("O"), ord("[")) and len(sequence) < LONGEST_SEQUENCE:
            final = self._byte()  # SS3 (ESC O) takes one more byte; CSI (ESC [) runs to a byte in @..~
            if final is None:
                break
            sequence.append(final)
            if follower == ord("O") or 0x40 <= final <= 0x7E:
                break
        if sequence == PASTE_START:
            return Paste(self._paste())
        return sequence.decode("latin-1")

    def _char(self, byte: int) -> str:
        text = self.decoder.decode(bytes([byte]))
        while not text:
            following = self._byte(ESC_WAIT_S)
            text = self.decoder.decode(b"" if following is None else bytes([following]), final=following is None)
        return text

    def _paste(self) -> str:
        """Everything up to the end-of-paste mark, decoded, `\\r\\n` and `\\r` made `\\n`."""
        while (end := self.pending.find(PASTE_END)) < 0:
            if not self._fill(None):
                end = len(self.pending)
                break
        data = bytes(self.pending[:end])
        del self.pending[: end + len(PASTE_END)]
        return data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")

    def _byte(self, timeout: float | None = None) -> int | None:
        """The next byte of input; None when none comes within `timeout` or the terminal has gone."""
        if not self.pending and not self._fill(timeout):
            return None
        byte = self.pending[0]
        del self.pending[:1]
        return byte

    def _fill(self, timeout: float | None) -> bool:
        """Read what the terminal has into `pending`; False on a timeout or at the terminal's end."""
        if timeout is not None and not select.select([self.fd], [], [], timeout)[0]:
            return False
        try:
            chunk = os.read(self.fd, 4096)
        except OSError:  # EIO: the terminal was closed
            chunk = b""
        self.pending += chunk
        return bool(chunk)


def _columns(fd: int) -> int:
    try:
        return max(os.get_terminal_size(fd).columns, 1)
    except OSError:
        return 80


def _exit_on_signal(number: int, _frame) -> None:
    """SIGTERM or SIGHUP while reading: unwind, so the terminal is restored on the way out."""
    sys.exit(128 + number)
