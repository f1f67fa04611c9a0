"""The OpenAI wire format of `specgen serve`: check request bodies, shape replies and chunks.

Pure Python, no server and no model, so every rule about what a client may send and what it
gets back sits in one place. As OpenAI's own server does, unknown fields are ignored; a known
field of the wrong type or out of range is a 400 that names it; only one choice (n = 1) is
served. Replies carry `usage` and a `specgen` object with the speculative statistics.

llama-server's `/infill` body (what llama.vim and llama.vscode send) is checked here too, with
the same helpers, but strictly: a field it does not know is a 400 (its replies: serve.infill).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from specgen.decoding.events import Summary

MAX_STOPS = 4  # as OpenAI's API
MAX_STOP_CHARS = 256  # per stop string: the automaton that finds them stays small
ROLES = {"developer": "system"}  # OpenAI's newer name for the system role


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
    infill: Infill | None = None  # fill the gap before this suffix (/infill, or `suffix` on a completion)


def parse_request(body: dict, kind: str, models: tuple[str, ...]) -> GenRequest:
    """Validate a /v1/chat/completions ("chat") or /v1/completions ("completion") body."""
    model = _typed(body, "model", str, "a string")
    if model is not None and model not in models:
        raise ApiError(404, f"The model '{model}' does not exist; this server serves '{models[0]}' (GET /v1/models)",
                       param="model", code="model_not_found")
    n = _integer(body, "n", 1, 2**31)
    if n not in (None, 1):
        raise ApiError(400, f"n must be 1, not {n}: specgen serves one choice per request", param="n")
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
        infill=infill,
    )


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
        role = _text(role, f"{where}.role")
        out.append((ROLES.get(role, role), _content(message.get("content"), f"{where}.content")))
    return tuple(out)


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
class Outcome:
    """How a generation ended, for the reply: why, and the loop's Summary with two timings."""

    finish_reason: str  # "stop" or "length"
    summary: Summary
    first_token_s: float | None  # from the start of this request's turn on the scheduler's thread
    queued_s: float
    prefill: object  # serve.scheduler.Prefill: the client's own cached tokens, tokens decoded, seconds
    truncated: bool = False  # a fill-in-the-middle prompt was cut to fit the context
    stop_word: str = ""  # the stop string that ended the reply


def finish_reason(stop_reason: str, stopped: bool) -> str:
    """OpenAI's finish_reason for the loop's stop reason: "stop" (end or stop string) or "length"."""
    return "stop" if stopped or stop_reason == "eog" else "length"


def usage(outcome: Outcome) -> dict:
    summary, cached = outcome.summary, outcome.prefill.own
    return {"prompt_tokens": summary.prompt_tokens, "completion_tokens": summary.tokens,
            "total_tokens": summary.prompt_tokens + summary.tokens,
            "prompt_tokens_details": {"cached_tokens": cached}}


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

    def body(self, text: str, outcome: Outcome) -> dict:
        """The whole reply of a request that did not stream."""
        if self.kind == "chat":
            choice = {"index": 0, "message": {"role": "assistant", "content": text}}
        else:
            choice = {"index": 0, "text": text}
        choice |= {"logprobs": None, "finish_reason": outcome.finish_reason}
        return {**self._head(self.obj), "choices": [choice], "usage": usage(outcome),
                "specgen": stats(outcome, self.draft_model)}

    def chunk(self, text: str | None, finish: str | None = None, role: bool = False) -> dict:
        """One streamed piece: text (None for none), a finish reason on the last, the role on the first."""
        if self.kind == "chat":
            delta = {"role": "assistant", "content": ""} if role else ({} if text is None else {"content": text})
            choice = {"index": 0, "delta": delta}
        else:
            choice = {"index": 0, "text": text or ""}
        choice |= {"logprobs": None, "finish_reason": finish}
        return {**self._head(self.obj + (".chunk" if self.kind == "chat" else "")), "choices": [choice]}

    def last_chunks(self, outcome: Outcome, include_usage: bool) -> list[dict]:
        """The chunk with the finish reason (carrying usage and stats), and OpenAI's usage-only chunk if asked."""
        last = self.chunk(None, outcome.finish_reason)
        extra = {"usage": usage(outcome), "specgen": stats(outcome, self.draft_model)}
        if not include_usage:
            return [last | extra]
        return [last, {**self._head(self.obj + (".chunk" if self.kind == "chat" else "")), "choices": [], **extra}]
