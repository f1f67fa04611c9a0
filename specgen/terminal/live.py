"""Chat's two screens: a live colour view of which tokens the draft got right, and plain text.

Both consume the loop's events the same way (`drive`), so Ctrl-C is handled in one place: the
interrupt is thrown back into the loop, which answers with its Summary, and the partial reply
is kept. `RichView` streams the reply with accepted draft tokens, the target's own tokens and
(optionally) rejected draft tokens in their own styles, under a legend, with a status line that
updates as rounds arrive; when the reply ends it prints the whole reply and the final status, so
what stays on the screen is the complete reply, however long. `PlainView` writes only the text
to stdout and one status line to stderr: for pipes, NO_COLOR and --plain.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.text import Text

from specgen.decoding.drafters.base import Source
from specgen.decoding.events import Round, Summary, Tally, consume
from specgen.terminal.run_view import copy_notes, visible

ACCEPTED = "green"
TARGET = "cyan"
REJECTED = "red dim strike"
STATUS = "dim"
NOTICE = "yellow"
REFRESH_S = 0.05


@dataclass(frozen=True)
class Reply:
    """A finished (or interrupted) reply: its text and tokens, the loop's Summary, time to first token."""

    text: str
    tokens: tuple[int, ...]
    summary: Summary
    first_token_s: float | None


def drive(events, on_round, tally: Tally | None = None) -> Reply:
    """Consume the loop's events (render.consume), also keeping the reply's tokens, its time
    to first token and (given one) a running Tally; Ctrl-C ends the reply early."""
    start = time.perf_counter()
    tokens: list[int] = []
    first: list[float] = []

    def each(event: Round) -> None:
        if not first:
            first.append(time.perf_counter() - start)
        tokens.extend(event.tokens)
        if tally is not None:
            tally.add(event)
        on_round(event)

    text, summary = consume(events, each)
    return Reply(text, tuple(tokens), summary, first[0] if first else None)


@dataclass
class Progress:
    """Running counts for the status line while a reply streams."""

    k: int
    auto: bool = False
    start: float = field(default_factory=time.perf_counter)
    tally: Tally = field(default_factory=Tally)
    last: Round | None = None

    def add(self, event: Round) -> None:
        self.tally.add(event)
        self.last = event

    def line(self) -> str:
        t = self.tally
        rate = t.tokens / max(time.perf_counter() - self.start, 1e-9)
        k = f"{drafting(self.last)} (auto)" if self.auto else f"K {self.k}"
        return status(k if self.k else "", t.accepted, t.drafted, rate, t.rounds, t.tokens)


def drafting(event: Round | None) -> str:
    """What the last round did: which drafter proposed how many tokens, or plain decoding."""
    if event is None or not event.drafted:
        return Source.PLAIN
    what = f"{Source.LOOKUP if event.source.copied else 'draft'} K {len(event.drafted)}"
    what += " with a learnt rewrite" if event.rewrites else ""
    return what + {
        Source.PATTERN: " by the record pattern",
        Source.ATTACHED: " from the attached text",
        Source.QUOTED: " from the prompt as JSON",
        Source.STRUCTURE: " from an earlier record by its keys",
        Source.FILLER: " to hold the pass size",
    }.get(event.source, "")


def status(k: str, accepted: int, drafted: int, tok_s: float, rounds: int, tokens: int) -> str:
    """The status line: acceptance, speed, K (empty: the target alone), rounds, tokens."""
    speed = f"{tok_s:.1f} tok/s"
    if not k:
        return f"target only · {speed} · {tokens} tokens"
    rate = f"{accepted / drafted:.0%}" if drafted else "–"
    return f"accept {rate} ({accepted}/{drafted}) · {speed} · {k} · {rounds} rounds · {tokens} tokens"


STOPS = {"length": "stopped at -n", "context": "context full", "interrupted": "interrupted"}


def final_status(reply: Reply) -> str:
    """The status line for a finished reply, with its time to first token and how it ended."""
    s = reply.summary
    k = f"K {s.draft_tokens}" if s.draft_tokens else ""
    if k and s.mode.endswith("(auto)"):
        k = "K auto"  # what each drafter drafted and kept follows in the copy notes
    line = status(k, s.accepted, s.drafted, s.tokens_per_second, s.rounds, s.tokens)
    line += "".join(f" · {note}" for note in copy_notes(s))
    if reply.first_token_s is not None:
        line += f" · first token {reply.first_token_s:.2f}s"
    line += f" · prefilled {s.prefilled_tokens}"
    return line + (f" · {STOPS[s.stop_reason]}" if s.stop_reason in STOPS else "")


def styled(event: Round, show_rejected: bool) -> Text:
    """One round as styled text: accepted draft tokens, rejected ones (struck), the target's token."""
    out = Text()
    out.append(visible(event.accepted_text), style=ACCEPTED)
    if show_rejected and event.rejected_text:
        out.append(visible(event.rejected_text).replace("\n", "↵"), style=REJECTED)
    out.append(visible(event.target_text), style=TARGET)
    return out


def legend(show_rejected: bool) -> Text:
    parts: list[str | tuple[str, str]] = [("accepted draft tokens", ACCEPTED), "  ", ("target's own tokens", TARGET)]
    if show_rejected:
        parts += ["  ", ("rejected draft tokens", REJECTED)]
    return Text.assemble(("legend: ", STATUS), *parts)


class _Tail:
    """The last lines of the reply that fit on the screen, and the status line under them."""

    def __init__(self, text: Text, status_line: str):
        self.text, self.status_line = text, status_line

    def __rich_console__(self, console, options):
        lines = self.text.wrap(console, options.max_width)
        yield from lines[-max(console.size.height - 2, 1) :]
        yield Text(self.status_line, style=STATUS)


class RichView:
    """Colours, a legend and a live status line, for a person at a terminal."""

    def __init__(self, show_rejected: bool, console: Console | None = None, errors: Console | None = None):
        self.show_rejected = show_rejected
        self.console = console or Console(highlight=False)
        self.errors = errors or Console(stderr=True, highlight=False)

    def welcome(self, line: str) -> None:
        self.console.print(Text(line, style=STATUS))
        self.console.print(legend(self.show_rejected))

    def info(self, text: str) -> None:
        self.console.print(Text(text, style=STATUS))

    def notice(self, text: str) -> None:
        self.errors.print(Text(text, style=NOTICE))

    def render(self, events, k: int, auto: bool = False, tally: Tally | None = None) -> Reply:
        text = Text()
        progress = Progress(k, auto)
        shown = 0.0
        with Live(
            console=self.console, auto_refresh=False, transient=True, redirect_stdout=False, redirect_stderr=False
        ) as live:

            def on_round(event: Round) -> None:
                nonlocal shown
                text.append_text(styled(event, self.show_rejected))
                progress.add(event)
                if time.perf_counter() - shown >= REFRESH_S:
                    live.update(_Tail(text, progress.line()), refresh=True)
                    shown = time.perf_counter()

            reply = drive(events, on_round, tally)
        self.console.print(text if text.plain else Text("(empty reply)", style=STATUS), soft_wrap=True)
        self.console.print(Text(final_status(reply), style=STATUS))
        return reply


class PlainView:
    """Only the reply's text on stdout (control characters shown as symbols on a terminal);
    the status line and notices on stderr."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None):
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.clean = visible if self.out.isatty() else str  # a pipe gets the text as generated

    def welcome(self, line: str) -> None:
        self.info(line)

    def info(self, text: str) -> None:
        self.err.write(text + "\n")
        self.err.flush()

    def notice(self, text: str) -> None:
        self.info(f"specgen: {text}")

    def render(self, events, k: int, auto: bool = False, tally: Tally | None = None) -> Reply:
        def on_round(event: Round) -> None:
            if event.text:
                self.out.write(self.clean(event.text))
                self.out.flush()

        reply = drive(events, on_round, tally)
        if not reply.text.endswith("\n"):
            self.out.write("\n")
        self.out.flush()
        self.info(final_status(reply))
        return reply


def wants_plain(plain: bool) -> bool:
    """Plain text for --plain, NO_COLOR, a dumb terminal, or when stdin or stdout is not a terminal."""
    if plain or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return True
    return not (sys.stdin.isatty() and sys.stdout.isatty())


def make_view(plain: bool, show_rejected: bool) -> RichView | PlainView:
    return PlainView() if wants_plain(plain) else RichView(show_rejected)
