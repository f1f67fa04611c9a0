"""A chat's `messages`: each checked as OpenAI defines it, and read two ways: as (role, text)
pairs for the plain chat path, and as the model's own template reads them (tool calls and tool
results kept)."""

from __future__ import annotations

import json

from specgen.llama.model import MAX_MESSAGES
from specgen.serve.json_depth import MAX_DEPTH, too_deep
from specgen.serve.wire.fields import ApiError, checked_text, shown, typed

ROLES = {"developer": "system"}  # OpenAI's newer name for the system role


def parse_messages(value) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list) or not value:
        raise ApiError(400, "messages must be a non-empty array of {role, content} objects", param="messages")
    if len(value) > MAX_MESSAGES:
        raise ApiError(
            400,
            f"messages holds {len(value)} messages; this server takes at most {MAX_MESSAGES} in one "
            "request: send the newest ones",
            param="messages",
        )
    out = []
    for i, message in enumerate(value):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise ApiError(400, f"{where} must be an object with role and content, not {shown(message)}", param=where)
        role = message.get("role")
        if not isinstance(role, str) or not role:
            raise ApiError(400, f"{where}.role must be a string such as 'user'", param=f"{where}.role")
        if role not in MESSAGE_ROLES:
            raise ApiError(
                400, f"{where}.role must be one of {', '.join(MESSAGE_ROLES)}, not {shown(role)}", param=f"{where}.role"
            )
        _unread_message_fields(message, where)
        _required_message_fields(message, role, where)
        out.append((ROLES.get(role, role), _content(message.get("content"), f"{where}.content")))
    return tuple(out)


MESSAGE_ROLES = ("system", "developer", "user", "assistant", "tool")


def _required_message_fields(message: dict, role: str, where: str) -> None:
    """What OpenAI requires of a message: its content (an assistant's may give way to tool
    calls), and a tool result's `tool_call_id`."""
    if message.get("content") is None and not (role == "assistant" and message.get("tool_calls")):
        needs = "content or tool_calls" if role == "assistant" else "content"
        raise ApiError(400, f"{where} ({role}) needs {needs}", param=f"{where}.content")
    if role == "tool" and message.get("tool_call_id") is None:
        raise ApiError(
            400, f"{where} (tool) needs the tool_call_id of the call it answers", param=f"{where}.tool_call_id"
        )


# name: accepted as OpenAI's hint, not shown to the model; tool_calls and tool_call_id: read by the template
MESSAGE_FIELDS = {"role", "content", "name", "tool_calls", "tool_call_id"}


def _unread_message_fields(message: dict, where: str) -> None:
    for name, value in message.items():
        if name not in MESSAGE_FIELDS and value is not None:
            raise ApiError(
                400,
                f"{where}.{name} is not supported by specgen serve; remove it",
                param=f"{where}.{name}",
                code="unsupported_parameter",
            )


def _content(value, where: str) -> str:
    """A message's text: a string, or an array of text parts (joined by newlines)."""
    if value is None or isinstance(value, str):
        return checked_text(value or "", where)
    if isinstance(value, list):
        texts = []
        for i, part in enumerate(value):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                kind = part.get("type") if isinstance(part, dict) else None
                raise ApiError(
                    400,
                    f"{where}[{i}] must be a text part ({{type: text, text: ...}}); "
                    f"this server reads text only, not {kind or shown(part)}",
                    param=f"{where}[{i}]",
                )
            texts.append(checked_text(part["text"], f"{where}[{i}].text"))
        return "\n".join(texts)
    raise ApiError(400, f"{where} must be a string or an array of text parts, not {shown(value)}", param=where)


def template_messages(messages: list) -> tuple[dict, ...]:
    """The messages as a model's template reads them: arguments of earlier calls as objects."""
    out = []
    for i, message in enumerate(messages):
        entry = {
            "role": ROLES.get(message["role"], message["role"]),
            "content": _content(message.get("content"), f"messages[{i}].content"),
        }
        if message.get("tool_calls") is not None:
            entry["tool_calls"] = _earlier_calls(message["tool_calls"], f"messages[{i}].tool_calls")
        if message.get("tool_call_id") is not None:
            entry["tool_call_id"] = typed(message, "tool_call_id", str, "a string", f"messages[{i}].")
        out.append(entry)
    return tuple(out)


def _earlier_calls(value, where: str) -> list[dict]:
    if not isinstance(value, list):
        raise ApiError(400, f"{where} must be an array of tool calls", param=where)
    calls = []
    for i, call in enumerate(value):
        function = call.get("function") if isinstance(call, dict) else None
        if (
            not isinstance(function, dict)
            or not isinstance(function.get("name"), str)
            or not isinstance(function.get("arguments"), str)
        ):
            raise ApiError(
                400,
                f"{where}[{i}] must be {{id, type: function, function: {{name, arguments}}}} with "
                "arguments a JSON string",
                param=f"{where}[{i}]",
            )
        param = f"{where}[{i}].function.arguments"
        if too_deep(function["arguments"]):
            raise ApiError(400, f"{param} nests more than {MAX_DEPTH} levels deep; send flatter arguments", param=param)
        try:
            arguments = json.loads(function["arguments"])
        except ValueError:
            raise ApiError(400, f"{param} is not JSON", param=param) from None
        calls.append(
            {"id": call.get("id"), "type": "function", "function": {"name": function["name"], "arguments": arguments}}
        )
    return calls
