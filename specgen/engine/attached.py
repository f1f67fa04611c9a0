"""The text a prompt attached for the reply to work on: what `auto` follows as a prediction
where the request gives none.

A rewrite's reply reprints the text it was given, edited: the file piped into `run` with
"add type hints", the file attached with `--file` or chat's `/file`, the code a client pasted
into a message between fences. Copying from the prompt finds that text too, but a prediction
is followed with a cursor that finds its place again after each edit, and the loss budget
lets a reply that follows it copy long stretches early (`decoding.budgets`). So a request that
gives no prediction follows the text it attached (`Source.ATTACHED`), with the share any reply
may lose, counted on what the reply has reprinted of it. A reply that does not reprint it (an
explanation, an answer about the file) follows it for a few tokens at a time, earns nothing by
that, and drafts as a reply with nothing attached does. The output stays the target's whatever the text holds.

What counts as attached: the contents of each fenced code block (``` or ~~~, CommonMark's
rules: a closing fence of the same character at least as long, or the end of the text), and
what a front end knows to be attached (`run`'s files and piped text). Pure Python.
"""

from __future__ import annotations

import re

# an opening fence: up to three spaces, then three or more backticks or tildes (a backtick fence's
# info string holds no backtick)
_OPENING = re.compile(r"^ {0,3}(`{3,}(?=[^`]*$)|~{3,})")


def fenced_blocks(text: str) -> list[str]:
    """The contents of the fenced code blocks in `text`, in order; a block left open runs to
    the end of the text."""
    blocks: list[str] = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        opening = _OPENING.match(lines[i])
        i += 1
        if opening is None:
            continue
        fence = opening.group(1)
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        start = i
        while i < len(lines) and not closing.match(lines[i].rstrip("\r\n")):
            i += 1
        blocks.append("".join(lines[start:i]))
        i += 1  # past the closing fence
    return blocks


def attached_text(message: str, attached: tuple[str, ...] = ()) -> str:
    """What a prompt attached: `attached` (texts a front end knows were given as data), then the
    fenced blocks of `message` (the user's text), a blank line apart; "" where there is none."""
    parts = [text for text in (*attached, *fenced_blocks(message)) if text.strip()]
    return "\n\n".join(parts)


def last_user_text(messages: tuple[tuple[str, str], ...]) -> str:
    """The content of a conversation's last user message ("" where there is none): the text a
    reply answers, whose fenced blocks it may rework."""
    return next((content for role, content in reversed(messages) if role == "user"), "")
