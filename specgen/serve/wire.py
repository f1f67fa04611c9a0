"""The OpenAI wire format of `specgen serve`: check request bodies, shape replies and chunks.

Pure Python, no server and no model, so every rule about what a client may send and what it
gets back sits in one place. Nothing a client sends is ignored without a word: a field the
server does not honour is a 400 that names it (`unread_fields`), except OpenAI's hints (`user`,
`metadata`, ...) and fields sent at the value that asks for nothing (`frequency_penalty: 0`); a
known field of the wrong type or out of range is a 400 that names it; only one choice (n = 1) is
served. Replies carry `usage` and a `specgen` object with the speculative statistics.

llama-server's `/infill` body (what llama.vim and llama.vscode send) is checked here too, with
the same helpers, but strictly: a field it does not know is a 400 (its replies: serve.infill).
"""

from __future__ import annotations

import json
import math
import re
import uuid
from dataclasses import dataclass, replace

from specgen.decoding.drafters.prediction import PredictionReport
from specgen.decoding.events import Summary

MAX_STOPS = 4  # as OpenAI's API
MAX_STOP_CHARS = 256  # per stop string: the automaton that finds them stays small
MAX_LOGPROBS = 20  # top log-probabilities per token, as OpenAI's top_logprobs
ROLES = {"developer": "system"}  # OpenAI's newer name for the system role
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # OpenAI's rule for function names


class ApiError(Exception):
    """An error a client reads as OpenAI's JSON error body, with its HTTP status."""

    def __init__(self, status: int, message: str, *, kind: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind
        self.param, self.code, self.headers = param, code, headers or {}

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}


@dataclass(frozen=True)
class ResponseFormat:
    """What the reply must be: any JSON object, or JSON that fits `schema` (a grammar enforces it)."""

    kind: str  # "json_object" or "json_schema"
    schema: dict | None = None


@dataclass(frozen=True)
class Infill:
    """A fill-in-the-middle prompt: the text before the gap and after it, other files as
    (filename, text) for context, and llama-server's limits on the reply (0: none)."""

    prefix: str
    suffix: str
    extra: tuple[tuple[str, str], ...] = ()
    n_indent: int = 0  # end before a later line indented less than this
    t_max_predict_ms: int = 0  # end at the first line end past this time


@dataclass(frozen=True)
class GenRequest:
    """One generation asked for: a chat (`messages`) or a completion (`prompt`), and its settings.

    None means "the server's default" (the options `specgen serve` was started with).
    """

    kind: str  # "chat", "completion" or "infill" (llama-server's /infill)
    messages: tuple[tuple[str, str], ...] = ()
    prompt: str | tuple[int, ...] = ""
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    stream: bool = False
    include_usage: bool = False
    response_format: ResponseFormat | None = None
    # the messages as the model's own chat template reads them (role, content, tool_calls, tool_call_id)
    chat: tuple[dict, ...] = ()
    tools: tuple[dict, ...] = ()  # OpenAI's tool objects, as sent
    tool_choice: str = "none"  # "auto", "none", "required", or "function": the one named `forced_tool`
    forced_tool: str | None = None
    parallel_tool_calls: bool = True
    logprobs: int | None = None  # each token's log-probability, with this many top ones (None: not asked)
    infill: Infill | None = None  # fill the gap before this suffix (/infill, or `suffix` on a completion)
    prediction: str | None = None  # OpenAI's Predicted Outputs: the text the reply is expected to resemble

    @property
    def templated(self) -> bool:
        """Whether the prompt needs the model's own template: tools offered, or tool turns in the chat."""
        return bool(self.tools and self.tool_choice != "none") or any(
            "tool_calls" in m or m["role"] == "tool" for m in self.chat)


def parse_request(body: dict, kind: str, models: tuple[str, ...]) -> GenRequest:
    """Validate a /v1/chat/completions ("chat") or /v1/completions ("completion") body."""
    unread_fields(body, kind)
    model = _typed(body, "model", str, "a string")
    if model is not None and model not in models:
        raise ApiError(404, f"The model '{model}' does not exist; this server serves '{models[0]}' (GET /v1/models)",
                       param="model", code="model_not_found")
    n = _integer(body, "n", 1, 2**31)
    if n not in (None, 1):
        raise ApiError(400, f"n must be 1, not {n}: specgen serves one choice per request", param="n",
                       code="unsupported_parameter")
    stream_options = _typed(body, "stream_options", dict, "an object") or {}
    max_tokens = _integer(body, "max_tokens", 1, 2**31)
    if kind == "chat":
        max_tokens = _integer(body, "max_completion_tokens", 1, 2**31) or max_tokens
    infill = _suffixed(body) if kind == "completion" else None
    return GenRequest(
        kind=kind,
        messages=_messages(body.get("messages")) if kind == "chat" else (),
        prompt=_prompt(body.get("prompt", "")) if kind == "completion" and infill is None else "",
        max_tokens=max_tokens,
        temperature=_number(body, "temperature", 0.0, 2.0),
        top_p=_number(body, "top_p", 0.0, 1.0),
        top_k=_integer(body, "top_k", 0, 2**31),
        seed=_seed(_integer(body, "seed", -(2**63), 2**64 - 1)),
        stop=_stops(body.get("stop")),
        stream=bool(_typed(body, "stream", bool, "true or false")),
        include_usage=bool(_typed(stream_options, "include_usage", bool, "true or false", "stream_options.")),
        response_format=response_format(body.get("response_format")),
        logprobs=_logprobs(body, kind),
        **(_tool_fields(body) if kind == "chat" else {}),
        infill=infill,
        prediction=_prediction(body.get("prediction")),
    )


# -- fields: what each endpoint reads, and what it refuses ----------------------------------------

_SAMPLING = {"model", "max_tokens", "temperature", "top_p", "top_k", "seed", "stop", "n", "stream", "stream_options",
             "logprobs"}
READ = {  # honoured by this server (top_k: an extension llama.cpp's server also takes)
    "chat": _SAMPLING | {"messages", "max_completion_tokens", "prediction", "response_format", "tools", "tool_choice",
                         "parallel_tool_calls", "top_logprobs"},
    "completion": _SAMPLING | {"prompt", "suffix", "prediction"},
    "infill": _SAMPLING,  # the sampling fields of an /infill body (parse_infill checks the rest)
}
# OpenAI documents these as hints about the caller or the account, not about the reply: accepted, not used
HINTS = {"user", "metadata", "store", "service_tier", "prompt_cache_key", "safety_identifier"}
# fields sent at the value that asks for nothing (some clients always send them): accepted
NO_OPS = {"frequency_penalty": 0, "presence_penalty": 0, "logit_bias": {}, "echo": False, "best_of": 1,
          "modalities": ["text"]}
# why a field is refused, where there is more to say than that it is not read
WHY = {
    "frequency_penalty": "specgen samples the target model's own distribution, which a penalty would change",
    "presence_penalty": "specgen samples the target model's own distribution, which a penalty would change",
    "logit_bias": "specgen samples the target model's own distribution, which a bias would change",
    "functions": "send tools instead",
    "function_call": "send tool_choice instead",
    "echo": "the reply holds the generated text only",
    "best_of": "specgen generates one completion per request",
    "modalities": "specgen generates text only",
    "audio": "specgen generates text only",
}
_STREAM_OPTIONS = {"include_usage", "include_obfuscation"}  # include_obfuscation: no padding is sent either way


def unread_fields(body: dict, kind: str) -> None:
    """A 400 naming the first field this endpoint would not honour (null counts as not sent)."""
    for name, value in body.items():
        if value is None or name in READ[kind] or name in HINTS or _same(value, NO_OPS.get(name, ...)):
            continue
        reason = WHY.get(name, "this server does not read it")
        raise ApiError(400, f"{name} is not supported by specgen serve ({reason}); remove it from the request",
                       param=name, code="unsupported_parameter")
    options = body.get("stream_options")
    for name in options if isinstance(options, dict) else ():
        if name not in _STREAM_OPTIONS and options[name] is not None:
            raise ApiError(400, f"stream_options.{name} is not supported by specgen serve; remove it",
                           param=f"stream_options.{name}", code="unsupported_parameter")


def _same(value, quiet) -> bool:
    """Whether `value` is the value that asks for nothing (true is not 1, nor 0 false)."""
    return type(value) is type(quiet) and value == quiet or (
        isinstance(quiet, int) and not isinstance(quiet, bool) and isinstance(value, float) and value == quiet)


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
        sent = f"type {_show(kind)}" if isinstance(value, dict) else _show(value)
        raise ApiError(400, f"{param} must be {{type: text}}, {{type: json_object}} or {{type: json_schema, "
                       f"json_schema: {{name, schema}}}}, not {sent}",
                       param=f"{param}.type" if isinstance(value, dict) else param)
    spec = _typed(value, "json_schema", dict, "an object with name and schema", param + ".") or {}
    _typed(spec, "name", str, "a string", param + ".json_schema.")
    _typed(spec, "description", str, "a string", param + ".json_schema.")
    _typed(spec, "strict", bool, "true or false", param + ".json_schema.")
    schema = _typed(spec, "schema", dict, "a JSON schema object", param + ".json_schema.")
    return ResponseFormat(kind, schema if schema is not None else {})


def _logprobs(body: dict, kind: str) -> int | None:
    """How many top log-probabilities per token (None: none asked): chat's `logprobs: true` with
    `top_logprobs`, or a completion's `logprobs: N`."""
    if kind == "completion":
        return _integer(body, "logprobs", 0, MAX_LOGPROBS)
    top = _integer(body, "top_logprobs", 0, MAX_LOGPROBS)
    if not _typed(body, "logprobs", bool, "true or false"):
        if top is not None:
            raise ApiError(400, "top_logprobs needs logprobs: true", param="top_logprobs")
        return None
    return top or 0


def _tool_fields(body: dict) -> dict:
    """The chat's messages for the model's template, and `tools`, `tool_choice`, `parallel_tool_calls`."""
    tools = _tools(body.get("tools"))
    choice, forced = _tool_choice(body.get("tool_choice"), tools)
    parallel = _typed(body, "parallel_tool_calls", bool, "true or false")
    return {"chat": _chat(body.get("messages")), "tools": tools, "tool_choice": choice, "forced_tool": forced,
            "parallel_tool_calls": parallel is not False}


def _tools(value) -> tuple[dict, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ApiError(400, f"tools must be an array of function tools, not {_show(value)}", param="tools")
    out = []
    for i, tool in enumerate(value):
        where = f"tools[{i}]"
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(tool.get("function"), dict):
            raise ApiError(400, f"{where} must be {{type: function, function: {{name, parameters}}}}; this server "
                           "calls functions only", param=where)
        function = tool["function"]
        name = function.get("name")
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            raise ApiError(400, f"{where}.function.name must be 1 to 64 letters, digits, _ or -", param=f"{where}.function.name")
        _typed(function, "description", str, "a string", f"{where}.function.")
        _typed(function, "parameters", dict, "a JSON schema object", f"{where}.function.")
        _typed(function, "strict", bool, "true or false", f"{where}.function.")
        out.append({"type": "function", "function": {k: v for k, v in function.items() if v is not None}})
    return tuple(out)


def _tool_choice(value, tools: tuple[dict, ...]) -> tuple[str, str | None]:
    """("auto" | "none" | "required" | "function", the forced function's name)."""
    if value is None:
        return ("auto" if tools else "none"), None
    if value in ("auto", "none", "required"):
        choice, name = value, None
    elif isinstance(value, dict) and value.get("type") == "function" and isinstance(value.get("function"), dict) \
            and isinstance(value["function"].get("name"), str):
        choice, name = "function", value["function"]["name"]
    else:
        raise ApiError(400, "tool_choice must be auto, none, required or {type: function, function: {name}}",
                       param="tool_choice")
    if choice in ("required", "function") and not tools:
        raise ApiError(400, f"tool_choice {value if choice == 'required' else name!r} needs tools", param="tool_choice")
    if name is not None and name not in [t["function"]["name"] for t in tools]:
        raise ApiError(400, f"tool_choice names {name!r}, which is not among the tools", param="tool_choice")
    return choice, name


def _chat(messages: list) -> tuple[dict, ...]:
    """The messages as a model's template reads them: arguments of earlier calls as objects."""
    out = []
    for i, message in enumerate(messages):
        entry = {"role": ROLES.get(message["role"], message["role"]),
                 "content": _content(message.get("content"), f"messages[{i}].content")}
        if message.get("tool_calls") is not None:
            entry["tool_calls"] = _earlier_calls(message["tool_calls"], f"messages[{i}].tool_calls")
        if message.get("tool_call_id") is not None:
            entry["tool_call_id"] = _typed(message, "tool_call_id", str, "a string", f"messages[{i}].")
        out.append(entry)
    return tuple(out)


def _earlier_calls(value, where: str) -> list[dict]:
    if not isinstance(value, list):
        raise ApiError(400, f"{where} must be an array of tool calls", param=where)
    calls = []
    for i, call in enumerate(value):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) \
                or not isinstance(function.get("arguments"), str):
            raise ApiError(400, f"{where}[{i}] must be {{id, type: function, function: {{name, arguments}}}} with "
                           "arguments a JSON string", param=f"{where}[{i}]")
        try:
            arguments = json.loads(function["arguments"])
        except ValueError:
            raise ApiError(400, f"{where}[{i}].function.arguments is not JSON", param=f"{where}[{i}].function.arguments")
        calls.append({"id": call.get("id"), "type": "function",
                      "function": {"name": function["name"], "arguments": arguments}})
    return calls


def _suffixed(body: dict) -> Infill | None:
    """A completion with OpenAI's `suffix`: the prompt is the text before the gap, the suffix the
    text after it (an empty or missing suffix: a plain completion)."""
    suffix = _typed(body, "suffix", str, "a string")
    if not suffix:
        return None
    prompt = body.get("prompt", "")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise ApiError(400, "with a suffix the prompt must be the text before the gap (a string), "
                       f"not {_show(prompt)}", param="prompt")
    return Infill(_text(prompt, "prompt"), _text(suffix, "suffix"))


def _prediction(value) -> str | None:
    """OpenAI's `prediction`: {"type": "content", "content": text or an array of text parts}; the
    parts are joined as they are (a prediction is one text cut into pieces)."""
    if value is None:
        return None
    shape = 'prediction must be {"type": "content", "content": "the text the reply is expected to resemble"}'
    if not isinstance(value, dict):
        raise ApiError(400, f"{shape}, not {_show(value)}", param="prediction")
    if value.get("type") != "content":
        raise ApiError(400, f"{shape}; its type must be 'content', not {_show(value.get('type'))}",
                       param="prediction.type")
    unknown = sorted(set(value) - {"type", "content"})
    if unknown:
        raise ApiError(400, f"prediction.{unknown[0]} is not part of a prediction; {shape}", param=f"prediction.{unknown[0]}")
    content = value.get("content")
    if isinstance(content, str):
        return _text(content, "prediction.content")
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            where = f"prediction.content[{i}]"
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise ApiError(400, f"{where} must be a text part ({{type: text, text: ...}}), not {_show(part)}",
                               param=where)
            parts.append(_text(part["text"], f"{where}.text"))
        return "".join(parts)
    raise ApiError(400, f"{shape}; its content must be a string or an array of text parts, not {_show(content)}",
                   param="prediction.content")


def _typed(body: dict, name: str, kind: type, what: str, prefix: str = ""):
    value = body.get(name)
    if value is not None and (not isinstance(value, kind) or (kind is not bool and isinstance(value, bool))):
        raise ApiError(400, f"{prefix}{name} must be {what}, not {_show(value)}", param=prefix + name)
    return value


def _number(body: dict, name: str, low: float, high: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ApiError(400, f"{name} must be a number, not {_show(value)}", param=name)
    if not low <= value <= high:
        raise ApiError(400, f"{name} must be from {low:g} to {high:g}, not {value}", param=name)
    return float(value)


def _integer(body: dict, name: str, low: int, high: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, f"{name} must be a whole number, not {_show(value)}", param=name)
    if not low <= value <= high:
        raise ApiError(400, f"{name} must be at least {low}, not {value}" if value < low
                       else f"{name} must be at most {high}, not {value}", param=name)
    return value


def _seed(value: int | None) -> int | None:
    """-1 asks for a random seed (llama.cpp's convention); other negative seeds wrap to 64 bits."""
    if value is None or value == -1:
        return None
    return value % 2**64


def _stops(value) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        raise ApiError(400, f"stop must be a string or an array of strings, not {_show(value)}", param="stop")
    if len(items) > MAX_STOPS:
        raise ApiError(400, f"stop takes at most {MAX_STOPS} strings, not {len(items)}", param="stop")
    longest = max((len(s) for s in items), default=0)
    if longest > MAX_STOP_CHARS:
        raise ApiError(400, f"a stop string may be at most {MAX_STOP_CHARS} characters, not {longest}", param="stop")
    return tuple(_text(s, "stop") for s in items if s)


def _messages(value) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list) or not value:
        raise ApiError(400, "messages must be a non-empty array of {role, content} objects", param="messages")
    out = []
    for i, message in enumerate(value):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise ApiError(400, f"{where} must be an object with role and content, not {_show(message)}", param=where)
        role = message.get("role")
        if not isinstance(role, str) or not role:
            raise ApiError(400, f"{where}.role must be a string such as 'user'", param=f"{where}.role")
        if role not in MESSAGE_ROLES:
            raise ApiError(400, f"{where}.role must be one of {', '.join(MESSAGE_ROLES)}, not {_show(role)}",
                           param=f"{where}.role")
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
        raise ApiError(400, f"{where} (tool) needs the tool_call_id of the call it answers",
                       param=f"{where}.tool_call_id")


# name: accepted as OpenAI's hint, not shown to the model; tool_calls and tool_call_id: read by the template
MESSAGE_FIELDS = {"role", "content", "name", "tool_calls", "tool_call_id"}


def _unread_message_fields(message: dict, where: str) -> None:
    for name, value in message.items():
        if name not in MESSAGE_FIELDS and value is not None:
            raise ApiError(400, f"{where}.{name} is not supported by specgen serve; remove it",
                           param=f"{where}.{name}", code="unsupported_parameter")


def _content(value, where: str) -> str:
    """A message's text: a string, or an array of text parts (joined by newlines)."""
    if value is None or isinstance(value, str):
        return _text(value or "", where)
    if isinstance(value, list):
        texts = []
        for i, part in enumerate(value):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                kind = part.get("type") if isinstance(part, dict) else None
                raise ApiError(400, f"{where}[{i}] must be a text part ({{type: text, text: ...}}); "
                               f"this server reads text only, not {kind or _show(part)}", param=f"{where}[{i}]")
            texts.append(_text(part["text"], f"{where}[{i}].text"))
        return "\n".join(texts)
    raise ApiError(400, f"{where} must be a string or an array of text parts, not {_show(value)}", param=where)


def _prompt(value) -> str | tuple[int, ...]:
    """A completion prompt: a string, token ids, or a one-element array of either."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], (str, list)):
        value = value[0]
    if value == "":
        raise ApiError(400, "the prompt is empty; send some text", param="prompt")
    if isinstance(value, str):
        return _text(value, "prompt")
    if isinstance(value, list) and value and all(isinstance(t, int) and not isinstance(t, bool) for t in value):
        return tuple(value)
    if isinstance(value, list) and len(value) > 1 and all(isinstance(p, (str, list)) for p in value):
        raise ApiError(400, f"prompt holds {len(value)} prompts; send one per request", param="prompt")
    raise ApiError(400, f"prompt must be a string or a non-empty array of token ids, not {_show(value)}",
                   param="prompt")


def _text(value: str, param: str) -> str:
    """A text field as sent, unless it holds a NUL: llama.cpp reads messages and prompts as C strings,
    which a NUL would silently end. Stop strings are held to the same rule, so that a NUL is one
    clear error in whichever text it is sent."""
    if "\0" in value:
        raise ApiError(400, f"{param} holds a NUL character (\\u0000), which the model cannot read; remove it",
                       param=param)
    return value


def _show(value) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return repr(value)[:60]


# -- llama-server's /infill ---------------------------------------------------------------------

# What llama.vim and llama.vscode send. Honoured: the gap, the sampling fields, `stop`, `stream`,
# `n_indent`, `t_max_predict_ms` and `response_fields`. Accepted and ignored, as hints that change
# nothing here: `cache_prompt` (prompts are always cached), `t_max_prompt_ms` (llama-server ignores
# it too), `samplers` (specgen applies top-k, top-p, temperature), `id_slot` (one slot), `n_cmpl`
# (one completion is served), an empty `lora` list, and `model`: like llama-server, /infill serves
# its one model whatever the name (llama.vscode sends its chat model's name, "google/gemini-2.5-flash"
# unless set).
INFILL_FIELDS = frozenset({
    "input_prefix", "input_suffix", "input_extra", "prompt", "model", "n_predict", "max_tokens",
    "temperature", "top_k", "top_p", "seed", "stop", "stream", "n_indent", "t_max_predict_ms",
    "response_fields", "cache_prompt", "t_max_prompt_ms", "samplers", "id_slot", "n_cmpl", "lora",
})
SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "seed", "stop", "stream")  # read as the OpenAI endpoints read them
CHUNK_FIELDS = frozenset({"text", "filename", "time"})  # an input_extra chunk; `time` (llama.vim's) is ignored


def parse_infill(body: dict) -> tuple[GenRequest, tuple[str, ...]]:
    """Validate a /infill body: the request, and the `response_fields` its reply is cut down to."""
    unknown = sorted(set(body) - INFILL_FIELDS)
    if unknown:
        raise ApiError(400, f"/infill does not take {unknown[0]!r}; it reads {', '.join(sorted(INFILL_FIELDS))}",
                       param=unknown[0])
    _infill_hints(body)
    common = parse_request({name: body[name] for name in SAMPLING_FIELDS if name in body}, "infill", ())
    n_predict = _integer(body, "n_predict", -1, 2**31)
    max_tokens = _integer(body, "max_tokens", -1, 2**31) if n_predict is None else n_predict
    spec = replace(common, max_tokens=None if max_tokens == -1 else max_tokens, infill=_gap(body))
    fields = _typed(body, "response_fields", list, "an array of strings") or []
    if not all(isinstance(field, str) for field in fields):
        raise ApiError(400, "response_fields must be an array of strings such as \"timings/prompt_ms\"",
                       param="response_fields")
    return spec, tuple(fields)


def _gap(body: dict) -> Infill:
    """The gap and its limits; the text at the cursor (`prompt`) continues the prefix, as
    llama-server reads it."""
    prefix = _required_text(body, "input_prefix") + _text(_typed(body, "prompt", str, "a string") or "", "prompt")
    return Infill(prefix, _required_text(body, "input_suffix"), _extra(body.get("input_extra")),
                  _integer(body, "n_indent", 0, 2**31) or 0, _integer(body, "t_max_predict_ms", 0, 2**31) or 0)


def _infill_hints(body: dict) -> None:
    """Check the fields that are accepted but change nothing, so a wrong type is still a 400."""
    _typed(body, "model", str, "a string")
    _typed(body, "cache_prompt", bool, "true or false")
    _integer(body, "t_max_prompt_ms", -1, 2**31)
    _integer(body, "id_slot", -1, 2**31)
    _integer(body, "n_cmpl", 1, 2**31)
    samplers = body.get("samplers")
    if samplers is not None and not isinstance(samplers, str) and not (
            isinstance(samplers, list) and all(isinstance(name, str) for name in samplers)):
        raise ApiError(400, "samplers must be an array of sampler names", param="samplers")
    if _typed(body, "lora", list, "an array"):
        raise ApiError(400, "this server loads no LoRA adapters; leave lora out", param="lora")


def _required_text(body: dict, name: str) -> str:
    if not isinstance(body.get(name), str):
        raise ApiError(400, f"{name} must be a string (it may be empty), not {_show(body.get(name))}", param=name)
    return _text(body[name], name)


def _extra(value) -> tuple[tuple[str, str], ...]:
    """input_extra: an array of {"filename": str, "text": str} chunks (filename optional)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ApiError(400, f"input_extra must be an array of {{filename, text}} objects, not {_show(value)}",
                       param="input_extra")
    chunks = []
    for i, chunk in enumerate(value):
        where = f"input_extra[{i}]"
        if not isinstance(chunk, dict) or not isinstance(chunk.get("text"), str):
            raise ApiError(400, f"{where} must be an object with a text string (and a filename), "
                           f"not {_show(chunk)}", param=where)
        unknown = sorted(set(chunk) - CHUNK_FIELDS)
        if unknown:
            raise ApiError(400, f"{where} has {unknown[0]!r}; a chunk holds filename and text", param=where)
        filename = _typed(chunk, "filename", str, "a string", where + ".")
        chunks.append((_text("tmp" if filename is None else filename, where + ".filename"),
                       _text(chunk["text"], where + ".text")))
    return tuple(chunks)


# -- replies -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Logprob:
    """A token's log-probability as the client reads it: its text, bytes, value, the most likely
    tokens there, and where its text begins (in the prompt and reply, for completions)."""

    token: str
    data: bytes
    logprob: float
    top: tuple[Logprob, ...] = ()
    offset: int = 0


def chat_logprobs(entries: tuple[Logprob, ...] | list[Logprob]) -> dict:
    """OpenAI's choices[].logprobs of a chat reply (or chunk)."""
    def item(entry: Logprob) -> dict:
        return {"token": entry.token, "logprob": entry.logprob, "bytes": list(entry.data)}

    return {"content": [item(e) | {"top_logprobs": [item(t) for t in e.top]} for e in entries], "refusal": None}


def completion_logprobs(entries: tuple[Logprob, ...] | list[Logprob]) -> dict:
    """OpenAI's choices[].logprobs of a completion (or chunk): parallel lists."""
    return {"tokens": [e.token for e in entries], "token_logprobs": [e.logprob for e in entries],
            "top_logprobs": [{t.token: t.logprob for t in e.top} for e in entries],
            "text_offset": [e.offset for e in entries]}


@dataclass(frozen=True)
class Outcome:
    """How a generation ended, for the reply: why, and the loop's Summary with two timings."""

    finish_reason: str  # "stop" or "length"
    summary: Summary
    first_token_s: float | None  # from the start of this request's turn on the scheduler's thread
    queued_s: float
    prefill: object  # serve.scheduler.Prefill: the client's own cached tokens, tokens decoded, seconds
    prediction: PredictionReport | None = None  # what became of the request's prediction, if it sent one
    tool_calls: tuple = ()  # serve.tools.ToolCall: the calls the reply made
    truncated: bool = False  # a fill-in-the-middle prompt was cut to fit the context
    stop_word: str = ""  # the stop string that ended the reply


def finish_reason(stop_reason: str, stopped: bool) -> str:
    """OpenAI's finish_reason for the loop's stop reason: "stop" (end or stop string) or "length"."""
    return "stop" if stopped or stop_reason == "eog" else "length"


def usage(outcome: Outcome) -> dict:
    summary, cached = outcome.summary, outcome.prefill.own
    return {"prompt_tokens": summary.prompt_tokens, "completion_tokens": summary.tokens,
            "total_tokens": summary.prompt_tokens + summary.tokens,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": prediction_usage(outcome.prediction)}


def prediction_usage(prediction: PredictionReport | None) -> dict:
    """OpenAI's counts of a prediction: its tokens that appear in the completion, in order (a
    longest common subsequence of the two), and the rest; zeros without a prediction."""
    if prediction is None:
        return {"accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
    return {"accepted_prediction_tokens": prediction.accepted_prediction_tokens,
            "rejected_prediction_tokens": prediction.rejected_prediction_tokens}


def prediction_stats(prediction: PredictionReport | None) -> dict | None:
    """The `specgen` object's view of a prediction: its tokens, those drafted from it and kept,
    and the output positions where the output left it (None without a prediction)."""
    if prediction is None:
        return None
    return {"tokens": prediction.prediction_tokens, "drafted": prediction.prediction_drafted,
            "kept": prediction.prediction_kept, "breaks": list(prediction.prediction_breaks)}


def stats(outcome: Outcome, draft_model: str | None) -> dict:
    """The `specgen` object: what the draft model contributed and how fast the reply came."""
    s = outcome.summary
    return {
        "drafter": s.mode,
        "draft_model": draft_model if s.draft_tokens else None,
        "draft_tokens": s.draft_tokens,
        "drafted": s.drafted,
        "accepted": s.accepted,
        "acceptance": round(s.acceptance_rate, 4),
        "tokens_per_round": round(s.tokens_per_round, 3),
        "decode_tokens_per_second": round(s.tokens_per_second, 2),
        "rounds": s.rounds,
        "prefilled_tokens": outcome.prefill.decoded,
        "prefill_s": round(outcome.prefill.seconds, 4),
        "decode_s": round(s.decode_s, 4),
        "first_token_s": None if outcome.first_token_s is None else round(outcome.first_token_s, 4),
        "queued_s": round(outcome.queued_s, 4),
        "stop_reason": s.stop_reason,
        "prediction": prediction_stats(outcome.prediction),
    }


@dataclass(frozen=True)
class Reply:
    """What every body and chunk of one reply share."""

    kind: str  # "chat" or "completion"
    ident: str
    created: int
    model: str
    draft_model: str | None

    @property
    def obj(self) -> str:
        return "chat.completion" if self.kind == "chat" else "text_completion"

    def _head(self, obj: str) -> dict:
        return {"id": self.ident, "object": obj, "created": self.created, "model": self.model,
                "system_fingerprint": None}

    def logprobs(self, entries) -> dict | None:
        """choices[].logprobs for these entries (None where none were asked for)."""
        if entries is None:
            return None
        return chat_logprobs(entries) if self.kind == "chat" else completion_logprobs(entries)

    def body(self, text: str, outcome: Outcome, logprobs: list[Logprob] | None = None) -> dict:
        """The whole reply of a request that did not stream; `logprobs` where they were asked for."""
        if self.kind == "chat":
            message = {"role": "assistant", "content": text if text or not outcome.tool_calls else None}
            if outcome.tool_calls:
                message["tool_calls"] = tool_calls(outcome.tool_calls)
            choice = {"index": 0, "message": message}
        else:
            choice = {"index": 0, "text": text}
        choice |= {"logprobs": self.logprobs(logprobs), "finish_reason": outcome.finish_reason}
        return {**self._head(self.obj), "choices": [choice], "usage": usage(outcome),
                "specgen": stats(outcome, self.draft_model)}

    def chunk(self, text: str | None, finish: str | None = None, role: bool = False,
              logprobs: tuple[Logprob, ...] | None = None) -> dict:
        """One streamed piece: text (None for none), a finish reason on the last, the role on the
        first, the log-probabilities of its tokens where they were asked for."""
        if self.kind == "chat":
            delta = {"role": "assistant", "content": ""} if role else ({} if text is None else {"content": text})
            choice = {"index": 0, "delta": delta}
        else:
            choice = {"index": 0, "text": text or ""}
        choice |= {"logprobs": self.logprobs(logprobs), "finish_reason": finish}
        return {**self._head(self.obj + (".chunk" if self.kind == "chat" else "")), "choices": [choice]}

    def last_chunks(self, outcome: Outcome, include_usage: bool) -> list[dict]:
        """The chunk with the finish reason (carrying usage and stats), and OpenAI's usage-only chunk if asked."""
        calls = []
        if outcome.tool_calls:
            call = self.chunk(None)
            call["choices"][0]["delta"] = {"tool_calls": [{"index": i, **c}
                                                          for i, c in enumerate(tool_calls(outcome.tool_calls))]}
            calls.append(call)
        last = self.chunk(None, outcome.finish_reason)
        extra = {"usage": usage(outcome), "specgen": stats(outcome, self.draft_model)}
        if not include_usage:
            return [*calls, last | extra]
        return [*calls, last, {**self._head(self.obj + (".chunk" if self.kind == "chat" else "")), "choices": [],
                               **extra}]


def tool_calls(calls) -> list[dict]:
    """OpenAI's tool_calls for serve.tools.ToolCall values, each with a fresh id."""
    return [{"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
             "function": {"name": call.name, "arguments": call.arguments}} for call in calls]
