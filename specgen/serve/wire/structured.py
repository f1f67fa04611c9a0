"""What shapes the reply: `response_format` (any JSON, or JSON fitting a schema) and the
`tools` the model may call, with `tool_choice` and `parallel_tool_calls`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from specgen.llama.grammar import GrammarError, check_schema
from specgen.serve.wire.fields import ApiError, shown, typed
from specgen.serve.wire.messages import template_messages

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # OpenAI's rule for function names


@dataclass(frozen=True)
class ResponseFormat:
    """What the reply must be: any JSON object, or JSON that fits `schema` (a grammar enforces it)."""

    kind: str  # "json_object" or "json_schema"
    schema: dict | None = None


def response_format(value) -> ResponseFormat | None:
    """`response_format`: text (nothing to enforce), any JSON object, or JSON that fits a schema."""
    param = "response_format"
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return ResponseFormat(kind)
    if kind != "json_schema":
        sent = f"type {shown(kind)}" if isinstance(value, dict) else shown(value)
        raise ApiError(
            400,
            f"{param} must be {{type: text}}, {{type: json_object}} or {{type: json_schema, "
            f"json_schema: {{name, schema}}}}, not {sent}",
            param=f"{param}.type" if isinstance(value, dict) else param,
        )
    spec = typed(value, "json_schema", dict, "an object with name and schema", param + ".") or {}
    typed(spec, "name", str, "a string", param + ".json_schema.")
    typed(spec, "description", str, "a string", param + ".json_schema.")
    typed(spec, "strict", bool, "true or false", param + ".json_schema.")
    schema = typed(spec, "schema", dict, "a JSON schema object", param + ".json_schema.")
    _bounded(schema, param + ".json_schema.schema")
    return ResponseFormat(kind, schema if schema is not None else {})


def tool_fields(body: dict) -> dict:
    """The chat's messages for the model's template (checked already: parse_messages), and `tools`,
    `tool_choice`, `parallel_tool_calls`."""
    tools = _tools(body.get("tools"))
    choice, forced = _tool_choice(body.get("tool_choice"), tools)
    parallel = typed(body, "parallel_tool_calls", bool, "true or false")
    return {
        "chat": template_messages(body["messages"]),
        "tools": tools,
        "tool_choice": choice,
        "forced_tool": forced,
        "parallel_tool_calls": parallel is not False,
    }


def _tools(value) -> tuple[dict, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ApiError(400, f"tools must be an array of function tools, not {shown(value)}", param="tools")
    out = []
    for i, tool in enumerate(value):
        where = f"tools[{i}]"
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(tool.get("function"), dict):
            raise ApiError(
                400,
                f"{where} must be {{type: function, function: {{name, parameters}}}}; this server calls functions only",
                param=where,
            )
        function = tool["function"]
        name = function.get("name")
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            raise ApiError(
                400, f"{where}.function.name must be 1 to 64 letters, digits, _ or -", param=f"{where}.function.name"
            )
        typed(function, "description", str, "a string", f"{where}.function.")
        _bounded(
            typed(function, "parameters", dict, "a JSON schema object", f"{where}.function."),
            f"{where}.function.parameters",
        )
        typed(function, "strict", bool, "true or false", f"{where}.function.")
        out.append({"type": "function", "function": {k: v for k, v in function.items() if v is not None}})
    return tuple(out)


def _bounded(schema: dict | None, param: str) -> None:
    """A schema past the converter's bounds (`grammar.check_schema`) is refused while the request is
    read, before it waits for the generation thread."""
    if schema is not None:
        try:
            check_schema(schema, param)
        except GrammarError as error:
            raise ApiError(400, str(error), param=param) from None


def _tool_choice(value, tools: tuple[dict, ...]) -> tuple[str, str | None]:
    """("auto" | "none" | "required" | "function", the forced function's name)."""
    if value is None:
        return ("auto" if tools else "none"), None
    if value in ("auto", "none", "required"):
        choice, name = value, None
    elif (
        isinstance(value, dict)
        and value.get("type") == "function"
        and isinstance(value.get("function"), dict)
        and isinstance(value["function"].get("name"), str)
    ):
        choice, name = "function", value["function"]["name"]
    else:
        raise ApiError(
            400, "tool_choice must be auto, none, required or {type: function, function: {name}}", param="tool_choice"
        )
    if choice in ("required", "function") and not tools:
        raise ApiError(400, f"tool_choice {value if choice == 'required' else name!r} needs tools", param="tool_choice")
    if name is not None and name not in [t["function"]["name"] for t in tools]:
        raise ApiError(400, f"tool_choice names {name!r}, which is not among the tools", param="tool_choice")
    return choice, name
