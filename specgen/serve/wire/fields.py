"""What every parser of a request body shares: the error a client reads (ApiError) and the
readers of one typed field, each a 400 naming the field when the value is of the wrong type or
out of range."""

from __future__ import annotations

import math


class ApiError(Exception):
    """An error a client reads as OpenAI's JSON error body, with its HTTP status."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        kind: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind
        self.param, self.code, self.headers = param, code, headers or {}

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}


def typed(body: dict, name: str, kind: type, what: str, prefix: str = ""):
    value = body.get(name)
    if value is not None and (not isinstance(value, kind) or (kind is not bool and isinstance(value, bool))):
        raise ApiError(400, f"{prefix}{name} must be {what}, not {shown(value)}", param=prefix + name)
    return value


def number(body: dict, name: str, low: float, high: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ApiError(400, f"{name} must be a number, not {shown(value)}", param=name)
    if not low <= value <= high:
        raise ApiError(400, f"{name} must be from {low:g} to {high:g}, not {value}", param=name)
    return float(value)


def integer(body: dict, name: str, low: int, high: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, f"{name} must be a whole number, not {shown(value)}", param=name)
    if not low <= value <= high:
        raise ApiError(
            400,
            f"{name} must be at least {low}, not {value}"
            if value < low
            else f"{name} must be at most {high}, not {value}",
            param=name,
        )
    return value


def checked_text(value: str, param: str) -> str:
    """A text field as sent, unless it holds a NUL: llama.cpp reads messages and prompts as C strings,
    which a NUL would silently end. Stop strings are held to the same rule, so that a NUL is one
    clear error in whichever text it is sent."""
    if "\0" in value:
        raise ApiError(
            400, f"{param} holds a NUL character (\\u0000), which the model cannot read; remove it", param=param
        )
    return value


def shown(value) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return repr(value)[:60]
