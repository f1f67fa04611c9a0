"""The access log: one line per request on stderr, with what the client chose escaped so that no
request can end, forge or garble a line."""

from __future__ import annotations

import time
import unicodedata
from dataclasses import dataclass, field

from specgen.serve.wire import Outcome


@dataclass
class Record:
    """What the access-log line says about one request; the handlers fill it in."""

    start: float = field(default_factory=time.perf_counter)
    status: int = 0
    stream: bool = False
    outcome: Outcome | None = None
    note: str = ""


def printable(text: str, spaces: bool = True) -> str:
    """`text` with each character that could end, forge or garble a log line escaped (as \\xNN,
    \\uNNNN or \\UNNNNNNNN), and spaces too unless `spaces` (where a space would split a field)."""
    return "".join(_escaped(char) if _unsafe(char, spaces) else char for char in text)


def _unsafe(char: str, spaces: bool) -> bool:
    """Control characters, line and paragraph separators, invisible and unassigned ones, other
    spaces, and the backslash itself, so that an escape in the log is never ambiguous."""
    if char == " ":
        return not spaces
    return char == "\\" or unicodedata.category(char)[0] in "CZ"


def _escaped(char: str) -> str:
    code = ord(char)
    if char == "\\":
        return "\\\\"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def access_line(scope, record: Record) -> str:
    """One line: who, what, status, time, and for a generation its tokens and speculative stats.
    What the client chose (the percent-decoded path, error notes that quote it) is escaped."""
    client = printable(str((scope.get("client") or ("-",))[0]), spaces=False)
    line = (
        f"specgen: {client} {printable(scope['method'], spaces=False)} {printable(scope['path'], spaces=False)} "
        f"{record.status or '-'} {time.perf_counter() - record.start:.2f}s"
    )
    outcome = record.outcome
    if outcome is not None:
        s = outcome.summary
        line += (
            f" {'stream' if record.stream else 'whole'}: prompt {s.prompt_tokens} "
            f"(cached {outcome.prefill.own}, prefilled {outcome.prefill.decoded}), "
            f"{s.tokens} tokens at {s.tokens_per_second:.1f} tok/s"
        )
        if s.draft_tokens:
            line += (
                f", {s.mode} accepted {s.accepted}/{s.drafted} ({s.acceptance_rate:.0%}), "
                f"{s.tokens_per_round:.2f} tokens/round"
            )
        if outcome.prediction is not None:
            p = outcome.prediction
            line += f", prediction {p.accepted_prediction_tokens}/{p.prediction_tokens} accepted"
        first = "-" if outcome.first_token_s is None else f"{outcome.first_token_s:.3f}s"
        line += (
            f", first token {first}, waited {outcome.queued_s:.2f}s, finish {outcome.finish_reason} ({s.stop_reason})"
        )
    if record.note:
        line += f" [{printable(record.note)}]"
    return line
