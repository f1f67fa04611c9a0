"""The predictions `tests/copyreplay.py` replays outputs beside (`--predict KIND`), and the text a
prompt attached, which auto follows where no prediction is given (`engine.attached`): an output's
own tokens, an edit of them, another output, or the prompt's fenced blocks."""

from __future__ import annotations

import re
from collections import Counter

from specgen.decoding.drafters.base import Source, Vocabulary
from specgen.decoding.drafters.prediction import Prediction
from specgen.engine.attached import attached_text

EDITS = ("deleted", "inserted", "renamed")
SPAN = 12  # tokens of a span that `edited` leaves out or puts in, every fifth span


def edited(output: list[int], kind: str) -> list[int]:
    """A prediction of `output` that an edit would leave behind: "deleted" lacks every fifth span
    of SPAN tokens (the output inserts them), "inserted" holds SPAN foreign tokens after every
    fifth span (the output deletes them), "renamed" holds two foreign tokens wherever the output
    has its commonest token among those it writes 3 to 12 times (the output renames it)."""
    foreign = max(output, default=0) + 1
    spans = [output[i : i + SPAN] for i in range(0, len(output), SPAN)]
    if kind == "deleted":
        return [t for i, span in enumerate(spans) if i % 5 != 2 for t in span]
    if kind == "inserted":
        return [
            t for i, span in enumerate(spans) for t in (*span, *(range(foreign, foreign + SPAN) if i % 5 == 2 else ()))
        ]
    counts = Counter(output)
    renamed = max((t for t, n in counts.items() if 3 <= n <= 12), key=lambda t: (counts[t], -t), default=None)
    return [x for t in output for x in ((foreign, foreign + 1) if t == renamed else (t,))]


def file_prediction(prompt: list[int], vocabulary: Vocabulary) -> list[int] | None:
    """The first fenced block of the prompt's text (the file an edit reprints), in tokens as a
    continuation; None when the prompt has none."""
    block = re.search(r"```[^\n]*\n(.*?)```", _text(prompt, vocabulary), re.S)
    return vocabulary.tokenize(block.group(1)) if block else None


def attached_of(prompt: list[int], vocabulary: Vocabulary | None) -> Prediction | None:
    """What auto follows where no prediction is given: the text the prompt attached, the fenced
    blocks of its last user message (`engine.attached`), given the vocabulary."""
    text = attached_text(last_user_message(prompt, vocabulary)) if vocabulary is not None else ""
    return Prediction(vocabulary.tokenize(text), vocabulary, Source.ATTACHED) if vocabulary and text else None


def last_user_message(prompt: list[int], vocabulary: Vocabulary) -> str:
    """The text of a ChatML prompt's last user turn (the recorded prompts' template: control
    tokens, which have no text, open each turn with its role and a newline); a prompt with no
    such turn, all of it."""
    turns, turn = [], bytearray()
    for token in prompt:
        piece = vocabulary.piece(token)
        if not piece:
            turns.append(bytes(turn))
            turn = bytearray()
        turn += piece
    turns.append(bytes(turn))
    users = [t[len(b"user\n") :] for t in turns if t.startswith(b"user\n")]
    return (users[-1] if users else b"".join(turns)).decode("utf-8", errors="replace")


def _text(prompt: list[int], vocabulary: Vocabulary) -> str:
    return b"".join(vocabulary.piece(t) for t in prompt).decode("utf-8", errors="replace")


PREDICTION_KINDS = ("self", "file", "deleted", "inserted", "renamed", "wrong")  # `--predict`'s (see the docstring)


def prediction_of(kind: str, record: dict, others: list[dict], vocabulary: Vocabulary | None) -> list[int] | None:
    """The prediction of a recorded output of the given kind (see the module docstring)."""
    if kind == "self":
        return record["output"]
    if kind == "file":
        return file_prediction(record["prompt"], vocabulary)
    if kind == "wrong":
        return next((o["output"] for o in others if o["output"] != record["output"]), None)
    return edited(record["output"], kind)
