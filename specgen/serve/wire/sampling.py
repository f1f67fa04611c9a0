"""The sampling fields every endpoint reads alike: stop strings, the seed and log-probabilities."""

from __future__ import annotations

from specgen.serve.wire.fields import ApiError, checked_text, integer, shown, typed

MAX_STOPS = 4  # as OpenAI's API
MAX_STOP_CHARS = 256  # per stop string: the automaton that finds them stays small
MAX_LOGPROBS = 20  # top log-probabilities per token, as OpenAI's top_logprobs


def parse_seed(value: int | None) -> int | None:
    """-1 asks for a random seed (llama.cpp's convention); other negative seeds wrap to 64 bits."""
    if value is None or value == -1:
        return None
    return value % 2**64


def parse_stops(value) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        raise ApiError(400, f"stop must be a string or an array of strings, not {shown(value)}", param="stop")
    if len(items) > MAX_STOPS:
        raise ApiError(400, f"stop takes at most {MAX_STOPS} strings, not {len(items)}", param="stop")
    longest = max((len(s) for s in items), default=0)
    if longest > MAX_STOP_CHARS:
        raise ApiError(400, f"a stop string may be at most {MAX_STOP_CHARS} characters, not {longest}", param="stop")
    return tuple(checked_text(s, "stop") for s in items if s)


def parse_logprobs(body: dict, kind: str) -> int | None:
    """How many top log-probabilities per token (None: none asked): chat's `logprobs: true` with
    `top_logprobs`, or a completion's `logprobs: N`."""
    if kind == "completion":
        return integer(body, "logprobs", 0, MAX_LOGPROBS)
    top = integer(body, "top_logprobs", 0, MAX_LOGPROBS)
    if not typed(body, "logprobs", bool, "true or false"):
        if top is not None:
            raise ApiError(400, "top_logprobs needs logprobs: true", param="top_logprobs")
        return None
    return top or 0
