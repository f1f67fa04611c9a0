"""Read `specgen bench` prompts from files: one prompt, several split by `---` lines, or JSONL.

A benchmark is only as honest as its prompts, so they live in plain files a user can read and
keep under version control. A file is JSONL when it ends in .jsonl or its first non-blank line
is a JSON object with a "prompt" string, or a "messages" list (a conversation, as the OpenAI API
writes it, ending with the user's turn: the reply to that turn is what is timed), and optional
"name" and "kind" strings, a "json_schema" object (the reply must be JSON that fits it, as with
`run --json-schema`), "tools" (OpenAI's function tools, rendered by the model's own chat template
as `serve` renders them; the messages may then hold OpenAI's tool round trip, an assistant's
"tool_calls" and "tool" results, and end with a result) and a prediction: "prediction", the text
the reply is expected to resemble, or "prediction_file", a file holding it (relative to the
prompt file's folder); otherwise
it is text holding one prompt, or several separated by lines of `---`. A prompt's kind (results are
also grouped by kind) is the file's stem unless its JSONL line names one. Every mistake in a
file becomes one line naming the file, the line and the fix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from specgen.errors import UsageError

SEPARATOR = "---"


class PromptFileError(UsageError):
    """A prompt file cannot be read or holds no usable prompt."""


@dataclass(frozen=True)
class BenchPrompt:
    """One prompt; `messages`: the conversation (role, content) it ends, where it is a chat turn."""

    name: str
    kind: str
    text: str
    messages: tuple[tuple[str, str], ...] = ()
    prediction: str | None = None  # the text the reply is expected to resemble (`run --predict`)
    json_schema: dict | None = None  # the reply must be JSON that fits this schema
    tools: tuple[dict, ...] = ()  # OpenAI's function tools the reply may call
    chat: tuple[dict, ...] = ()  # with tools: the conversation as OpenAI's message objects


def read_prompt_files(sources: list[str], stdin: TextIO | None) -> list[BenchPrompt]:
    """Every prompt of every source, in order; '-' is stdin (once)."""
    if sources.count("-") > 1:
        raise PromptFileError("stdin ('-') can be read only once; name it once among the prompt files")
    prompts: list[BenchPrompt] = []
    for source in sources:
        label, kind, text = _read_source(source, stdin)
        folder = Path(source).parent if source != "-" else Path()
        prompts += parse_prompts(text, label, kind, jsonl=source.endswith(".jsonl"), folder=folder)
    names = [p.name for p in prompts]
    for name in names:
        if names.count(name) > 1:
            raise PromptFileError(f"two prompts are named '{name}'; give them distinct names (or files distinct stems)")
    return prompts


def _read_source(source: str, stdin: TextIO | None) -> tuple[str, str, str]:
    """(label for messages, default kind, text) of a file or of stdin."""
    if source == "-":
        if stdin is None or stdin.isatty():
            raise PromptFileError("no prompts on stdin: pipe a prompt file in, or name the file instead of '-'")
        return "stdin", "stdin", stdin.read()
    path = Path(source)
    try:
        return source, path.stem, path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise PromptFileError(f"prompt file {source} is not UTF-8 text") from None
    except IsADirectoryError:
        raise PromptFileError(f"{source} is a folder; name the prompt files inside it") from None
    except OSError as error:
        raise PromptFileError(f"cannot read prompt file {source}: {error.strerror or error}") from None


def parse_prompts(text: str, label: str, kind: str, jsonl: bool = False, folder: Path = Path()) -> list[BenchPrompt]:
    """The prompts in one file's text (see the module docstring for the formats); `folder`: where
    a "prediction_file" is found."""
    if not text.strip():
        raise PromptFileError(f"prompt file {label} is empty; put a prompt in it")
    if jsonl or _looks_like_jsonl(text):
        return _jsonl(text, label, kind, folder)
    return _separated(text, label, kind)


def _looks_like_jsonl(text: str) -> bool:
    first = next(line for line in text.splitlines() if line.strip())
    try:
        record = json.loads(first)
    except ValueError:
        return False
    return isinstance(record, dict) and ("prompt" in record or "messages" in record)


def _jsonl(text: str, label: str, kind: str, folder: Path) -> list[BenchPrompt]:
    prompts: list[BenchPrompt] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{label} line {number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise PromptFileError(f"{where} is not valid JSON ({error.msg}); write one JSON object per line") from None
        if not isinstance(record, dict):
            raise PromptFileError(f'{where} is not an object; write {{"prompt": "..."}}')
        tools = _tools(record, where)
        chat = _tool_chat(record, where) if tools and "messages" in record else ()
        messages = _messages(record, where) if "messages" in record and not chat else ()
        prompt = messages[-1][1] if messages else chat[-1]["content"] if chat else record.get("prompt")
        if not isinstance(prompt, str):
            raise PromptFileError(f'{where} has no "prompt" string; write {{"prompt": "..."}}')
        if not prompt.strip():
            raise PromptFileError(f'{where} has an empty "prompt"')
        for key in ("name", "kind"):
            if key in record and not isinstance(record[key], str):
                raise PromptFileError(f'{where}: "{key}" must be a string')
        schema = record.get("json_schema")
        if schema is not None and not isinstance(schema, dict):
            raise PromptFileError(f'{where}: "json_schema" must be a JSON schema object, such as {{"type": "object"}}')
        name = record.get("name") or f"{kind}:{len(prompts) + 1}"
        if tools and not chat:
            chat = ({"role": "user", "content": prompt},)
        prompts.append(
            BenchPrompt(
                name,
                record.get("kind") or kind,
                prompt,
                messages,
                prediction=_prediction(record, where, folder),
                json_schema=schema,
                tools=tools,
                chat=chat,
            )
        )
    return prompts


def _prediction(record: dict, where: str, folder: Path) -> str | None:
    """A line's prediction: its "prediction" text, or the text of its "prediction_file"."""
    if "prediction" in record and "prediction_file" in record:
        raise PromptFileError(f'{where} has both "prediction" and "prediction_file"; keep one')
    if "prediction" in record:
        if not isinstance(record["prediction"], str):
            raise PromptFileError(f'{where}: "prediction" must be a string, the text the reply is expected to resemble')
        return record["prediction"]
    if "prediction_file" not in record:
        return None
    name = record["prediction_file"]
    if not isinstance(name, str) or not name:
        raise PromptFileError(f'{where}: "prediction_file" must be a file name')
    path = folder / name
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise PromptFileError(f'{where}: "prediction_file" {path} is not UTF-8 text') from None
    except OSError as error:
        raise PromptFileError(f'{where}: cannot read "prediction_file" {path}: {error.strerror or error}') from None


def _messages(record: dict, where: str) -> tuple[tuple[str, str], ...]:
    """A "messages" list as (role, content) pairs, ending with the user's turn."""
    messages = record["messages"]
    fix = 'write "messages": [{"role": "user", "content": "..."}, {"role": "assistant", ...}, {"role": "user", ...}]'
    if not isinstance(messages, list) or not messages:
        raise PromptFileError(f'{where}: "messages" must be a list of messages; {fix}')
    pairs = []
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if role not in ("system", "user", "assistant") or not isinstance(content, str):
            raise PromptFileError(
                f'{where}: each message needs a "role" (system, user or assistant) and a "content" string; {fix}'
            )
        pairs.append((role, content))
    if pairs[-1][0] != "user":
        raise PromptFileError(f"{where}: the conversation must end with the user's turn; {fix}")
    return tuple(pairs)


def _tools(record: dict, where: str) -> tuple[dict, ...]:
    """A line's "tools": OpenAI's function tools, as the model's chat template reads them."""
    tools = record.get("tools", [])
    fix = 'write "tools": [{"type": "function", "function": {"name": "...", "parameters": {...}}}]'
    if not isinstance(tools, list):
        raise PromptFileError(f'{where}: "tools" must be a list of function tools; {fix}')
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if (
            not isinstance(function, dict)
            or tool.get("type") != "function"
            or not isinstance(function.get("name"), str)
            or not isinstance(function.get("parameters", {}), dict)
        ):
            raise PromptFileError(f'{where}: each of "tools" must be a function tool; {fix}')
    return tuple(tools)


def _tool_chat(record: dict, where: str) -> tuple[dict, ...]:
    """The "messages" of a line with tools, as OpenAI's message objects: a turn of the system,
    the user, the assistant (text, or "tool_calls" with arguments as JSON text) or a tool's
    result ("tool", with the "tool_call_id" it answers); the last is the user's or a result."""
    messages = record["messages"]
    fix = (
        'write "messages": [{"role": "user", "content": "..."}, {"role": "assistant", "tool_calls": '
        '[{"id": "1", "type": "function", "function": {"name": "...", "arguments": "{...}"}}]}, '
        '{"role": "tool", "tool_call_id": "1", "content": "..."}]'
    )
    if not isinstance(messages, list) or not messages:
        raise PromptFileError(f'{where}: "messages" must be a list of messages; {fix}')
    if not all(_well_formed_message(message) for message in messages):
        raise PromptFileError(
            f'{where}: each message needs a "role" (system, user, assistant or tool) and a "content" string; {fix}'
        )
    if messages[-1]["role"] not in ("user", "tool"):
        raise PromptFileError(f"{where}: the conversation must end with the user's turn or a tool's result; {fix}")
    return tuple(messages)


def _well_formed_message(message) -> bool:
    """A turn of the system, the user, the assistant or a tool, with text content; an assistant's
    turn may hold well-formed "tool_calls" instead, and a tool's names the call it answers."""
    if not isinstance(message, dict) or message.get("role") not in ("system", "user", "assistant", "tool"):
        return False
    content = message.get("content")
    if message["role"] == "assistant" and message.get("tool_calls") is not None:
        return _well_formed_calls(message["tool_calls"]) and (content is None or isinstance(content, str))
    if message["role"] == "tool" and not isinstance(message.get("tool_call_id"), str):
        return False
    return isinstance(content, str)


def _well_formed_calls(calls) -> bool:
    """OpenAI's tool_calls: a list of {type: function, function: {name, arguments: JSON text}}."""
    if not isinstance(calls, list) or not calls:
        return False
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if (
            not isinstance(function, dict)
            or not isinstance(function.get("name"), str)
            or not isinstance(function.get("arguments"), str)
        ):
            return False
        try:
            json.loads(function["arguments"])
        except ValueError:
            return False
    return True


def _separated(text: str, label: str, kind: str) -> list[BenchPrompt]:
    """Prompts between `---` lines; blank lines around each prompt are dropped."""
    prompts: list[BenchPrompt] = []
    lines, start = [], 1
    for number, line in enumerate([*text.splitlines(), SEPARATOR], start=1):
        if line.strip() != SEPARATOR:
            lines.append(line)
            continue
        body = "\n".join(lines).strip("\n")
        if not body.strip():
            raise PromptFileError(
                f"{label}: prompt {len(prompts) + 1} (line {start}) is empty; remove the extra '{SEPARATOR}'"
            )
        prompts.append(BenchPrompt(f"{kind}:{len(prompts) + 1}", kind, body))
        lines, start = [], number + 1
    return prompts
