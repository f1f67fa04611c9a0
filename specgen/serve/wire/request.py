"""A /v1/chat/completions or /v1/completions body, whole: which fields each endpoint reads,
which it refuses with a word, and the GenRequest the scheduler runs.

Nothing a client sends is ignored without a word: a field the server does not honour is a 400
that names it (`unread_fields`), except OpenAI's hints (`user`, `metadata`, ...) and fields sent
at the value that asks for nothing (`frequency_penalty: 0`); a known field of the wrong type or
out of range is a 400 that names it; only one choice (n = 1) is served.
"""

from __future__ import annotations

from dataclasses import dataclass

from specgen.serve.wire.fields import ApiError, integer, number, typed
from specgen.serve.wire.messages import parse_messages
from specgen.serve.wire.prompts import Infill, parse_prediction, parse_prompt, suffixed
from specgen.serve.wire.sampling import parse_logprobs, parse_seed, parse_stops
from specgen.serve.wire.structured import ResponseFormat, response_format, tool_fields


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
            "tool_calls" in m or m["role"] == "tool" for m in self.chat
        )


def parse_request(body: dict, kind: str, models: tuple[str, ...]) -> GenRequest:
    """Validate a /v1/chat/completions ("chat") or /v1/completions ("completion") body."""
    unread_fields(body, kind)
    model = typed(body, "model", str, "a string")
    if model is not None and model not in models:
        raise ApiError(
            404,
            f"The model '{model}' does not exist; this server serves '{models[0]}' (GET /v1/models)",
            param="model",
            code="model_not_found",
        )
    n = integer(body, "n", 1, 2**31)
    if n not in (None, 1):
        raise ApiError(
            400, f"n must be 1, not {n}: specgen serves one choice per request", param="n", code="unsupported_parameter"
        )
    stream_options = typed(body, "stream_options", dict, "an object") or {}
    max_tokens = integer(body, "max_tokens", 1, 2**31)
    if kind == "chat":
        max_tokens = integer(body, "max_completion_tokens", 1, 2**31) or max_tokens
    infill = suffixed(body) if kind == "completion" else None
    return GenRequest(
        kind=kind,
        messages=parse_messages(body.get("messages")) if kind == "chat" else (),
        prompt=parse_prompt(body.get("prompt", "")) if kind == "completion" and infill is None else "",
        max_tokens=max_tokens,
        temperature=number(body, "temperature", 0.0, 2.0),
        top_p=number(body, "top_p", 0.0, 1.0),
        top_k=integer(body, "top_k", 0, 2**31),
        seed=parse_seed(integer(body, "seed", -(2**63), 2**64 - 1)),
        stop=parse_stops(body.get("stop")),
        stream=bool(typed(body, "stream", bool, "true or false")),
        include_usage=bool(typed(stream_options, "include_usage", bool, "true or false", "stream_options.")),
        response_format=response_format(body.get("response_format")),
        logprobs=parse_logprobs(body, kind),
        **(tool_fields(body) if kind == "chat" else {}),
        infill=infill,
        prediction=parse_prediction(body.get("prediction")),
    )


# -- fields: what each endpoint reads, and what it refuses ----------------------------------------

_SAMPLING = {
    "model",
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "seed",
    "stop",
    "n",
    "stream",
    "stream_options",
    "logprobs",
}
READ = {  # honoured by this server (top_k: an extension llama.cpp's server also takes)
    "chat": _SAMPLING
    | {
        "messages",
        "max_completion_tokens",
        "prediction",
        "response_format",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "top_logprobs",
    },
    "completion": _SAMPLING | {"prompt", "suffix", "prediction"},
    "infill": _SAMPLING,  # the sampling fields of an /infill body (parse_infill checks the rest)
}
# OpenAI documents these as hints about the caller or the account, not about the reply: accepted, not used
HINTS = {"user", "metadata", "store", "service_tier", "prompt_cache_key", "safety_identifier"}
# fields sent at the value that asks for nothing (some clients always send them): accepted
NO_OPS = {
    "frequency_penalty": 0,
    "presence_penalty": 0,
    "logit_bias": {},
    "echo": False,
    "best_of": 1,
    "modalities": ["text"],
}
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
        raise ApiError(
            400,
            f"{name} is not supported by specgen serve ({reason}); remove it from the request",
            param=name,
            code="unsupported_parameter",
        )
    options = body.get("stream_options")
    for name, value in options.items() if isinstance(options, dict) else ():
        if name not in _STREAM_OPTIONS and value is not None:
            raise ApiError(
                400,
                f"stream_options.{name} is not supported by specgen serve; remove it",
                param=f"stream_options.{name}",
                code="unsupported_parameter",
            )


def _same(value, quiet) -> bool:
    """Whether `value` is the value that asks for nothing (true is not 1, nor 0 false)."""
    return (type(value) is type(quiet) and value == quiet) or (
        isinstance(quiet, int) and not isinstance(quiet, bool) and isinstance(value, float) and value == quiet
    )
