"""Plain-text front end for `specgen run`: stream the answer to stdout, the summary to stderr."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TextIO

from specgen.decoding.drafters.prediction import PredictionReport
from specgen.decoding.events import Round, Summary

# C0 controls and DEL as their Unicode pictures; C1 controls (U+0080 to U+009F: CSI, OSC, ... in
# 8-bit form, which some terminals obey) have no pictures, so they are written as \x escapes
_CONTROL: dict[int, int | str] = (
    {c: 0x2400 + c for c in range(32) if chr(c) not in "\n\t"}
    | {0x7F: 0x2421}
    | {c: f"\\x{c:02x}" for c in range(0x80, 0xA0)}
)


def visible(text: str) -> str:
    """Control characters as visible symbols, so model output cannot drive the terminal."""
    return text.translate(_CONTROL)


def streamer(out: TextIO | None) -> Callable[[Round], None]:
    """An on_round that writes each round's text to `out` at once (or nothing, for None); on a
    terminal its control characters are shown as symbols (a pipe gets the text as generated)."""
    clean = visible if out is not None and out.isatty() else str

    def write(event: Round) -> None:
        if out is not None and event.text:
            out.write(clean(event.text))
            out.flush()

    return write


def summary_line(summary: Summary, placement: str = "", prediction: PredictionReport | None = None) -> str:
    """One line for stderr: speed, acceptance, what became of a prediction, where the time went
    (and where the models ran)."""
    if summary.draft_tokens > 0:
        spec = (
            f", {summary.mode} K={summary.draft_tokens}, accepted {summary.accepted}/{summary.drafted} "
            f"({summary.acceptance_rate:.0%}), {summary.tokens_per_round:.2f} tokens/round"
        )
        spec += "".join(f", {note}" for note in copy_notes(summary))
    else:
        spec = ", target only"
    if prediction is not None:
        spec += (
            f", prediction {prediction.prediction_tokens} tokens: {prediction.accepted_prediction_tokens} "
            f"accepted, {prediction.rejected_prediction_tokens} rejected"
        )
    if summary.constraint_s and summary.rounds:
        spec += f", grammar {summary.constraint_s / summary.rounds * 1000:.1f} ms/round"
    split = _split(summary)
    return (
        f"specgen: {summary.tokens} tokens at {summary.tokens_per_second:.1f} tok/s{spec}; "
        f"prefill {summary.prefill_s:.2f}s ({summary.prefilled_tokens} tokens), {split}; "
        f"stop: {summary.stop_reason}{'; ' + placement if placement else ''}"
    )


def copy_notes(summary: Summary) -> list[str]:
    """What each kind of drafter drafted and the target kept, how many copy rounds the target
    refused at their first token, and how many copies carried a learnt rewrite or followed the
    output's record pattern (chat's status line says it the same way)."""
    notes = [drafted_line(summary)] if summary.by_source else []
    if summary.missed_copy_rounds:
        notes.append(f"{summary.missed_copy_rounds} copy rounds missed at their first token")
    notes += [f"{summary.rewrite_rounds} copies carried learnt rewrites"] if summary.rewrite_rounds else []
    if summary.pattern_rounds:
        notes.append(f"{summary.pattern_rounds} copies followed the output's record pattern")
    return notes


def drafted_line(summary: Summary) -> str:
    """ "copy kept 40/52, pattern 12/14": by kind of drafter, the tokens kept of those drafted."""
    parts = (f"{name} kept {count.kept}/{count.drafted}" for name, count in summary.by_source.items())
    return "drafted by " + ", ".join(parts)


def _split(summary: Summary) -> str:
    total = summary.decode_s or 1.0
    return (
        f"draft {summary.draft_s / total:.0%} / verify {summary.verify_s / total:.0%} / "
        f"other {summary.other_s / total:.0%} of {summary.decode_s:.2f}s"
    )


def prediction_fields(prediction: PredictionReport | None) -> dict:
    """`--json`'s prediction fields: OpenAI's counts and what drafting from it did (zeros without one)."""
    return (prediction or PredictionReport(0, 0, 0)).to_dict()


def json_record(text: str, summary: Summary, extra: dict) -> str:
    return json.dumps({"text": text, **summary.to_dict(), **extra}, ensure_ascii=False)
