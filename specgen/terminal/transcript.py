"""A chat saved as JSONL that `specgen bench` reads as chat prompts, and that /load reads back.

One line per user turn: {"messages": [...], "reply": "..."}. "messages" is the conversation up
to that turn, in OpenAI's {"role", "content"} shape, with the system prompt first when there is
one, ending with the user's message: bench generates and times the reply to it, so a saved chat
of five turns is a benchmark of five prompts, each with the history the chat had. "reply" is
the answer the chat gave (bench ignores it). The last line holds the whole conversation, and
/load restores it: its messages and, when present, its reply. A file without "reply" (any
bench chat prompt) loads too; its last message is then the user's, waiting for an answer.
"""

from __future__ import annotations

import json

from specgen.errors import UsageError

ROLES = ("system", "user", "assistant")


def to_jsonl(messages: list[tuple[str, str]]) -> str:
    """One line per user message: the messages up to it, and the assistant's reply after it."""
    lines = []
    for end, (role, _) in enumerate(messages):
        if role != "user":
            continue
        record: dict[str, list[dict[str, str]] | str] = {
            "messages": [{"role": r, "content": c} for r, c in messages[: end + 1]]
        }
        if end + 1 < len(messages):
            record["reply"] = messages[end + 1][1]
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    return "".join(lines)


def from_jsonl(text: str, label: str) -> list[tuple[str, str]]:
    """The conversation on the last non-blank line of `text`, checked; UsageError (one line) if it is not one."""
    numbered = [(number, line) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not numbered:
        raise UsageError(f"cannot load {label}: it is empty")
    number, line = numbered[-1]
    where = f"cannot load {label}: line {number}"
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise UsageError(f"{where} is not valid JSON ({error.msg})") from None
    if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
        raise UsageError(f'{where} has no "messages" list; /load reads the files /save writes')
    messages = [_message(item, where) for item in record["messages"]]
    if "reply" in record:
        if not isinstance(record["reply"], str):
            raise UsageError(f'{where}: "reply" must be a string')
        messages.append(("assistant", record["reply"]))
    _check_turns(messages, where)
    return messages


def _message(item, where: str) -> tuple[str, str]:
    role = item.get("role") if isinstance(item, dict) else None
    content = item.get("content") if isinstance(item, dict) else None
    if role not in ROLES or not isinstance(content, str):
        raise UsageError(f'{where}: each message needs a "role" (system, user or assistant) and a "content" string')
    return role, content


def _check_turns(messages: list[tuple[str, str]], where: str) -> None:
    """An optional system message, then user and assistant taking turns, the user first."""
    turns = messages[1:] if messages and messages[0][0] == "system" else messages
    if not turns:
        raise UsageError(f"{where} holds no user message")
    for position, (role, _) in enumerate(turns):
        expected = ("user", "assistant")[position % 2]
        if role != expected:
            raise UsageError(
                f"{where}: message {position + 1 + len(messages) - len(turns)} is the {role}'s "
                f"where the {expected}'s belongs (an optional system message first, then user "
                "and assistant taking turns)"
            )
