"""llama-server's `/infill` body, as llama.vim and llama.vscode send it: checked with the same
helpers as the OpenAI endpoints, but strictly (a field it does not know is a 400; its replies:
serve.infill)."""

from __future__ import annotations

from dataclasses import replace

from specgen.serve.wire.fields import ApiError, checked_text, integer, shown, typed
from specgen.serve.wire.prompts import Infill
from specgen.serve.wire.request import GenRequest, parse_request

# What llama.vim and llama.vscode send. Honoured: the gap, the sampling fields, `stop`, `stream`,
# `n_indent`, `t_max_predict_ms` and `response_fields`. Accepted and ignored, as hints that change
# nothing here: `cache_prompt` (prompts are always cached), `t_max_prompt_ms` (llama-server ignores
# it too), `samplers` (specgen applies top-k, top-p, temperature), `id_slot` (one slot), `n_cmpl`
# (one completion is served), an empty `lora` list, and `model`: like llama-server, /infill serves
# its one model whatever the name (llama.vscode sends its chat model's name, "google/gemini-2.5-flash"
# unless set).
INFILL_FIELDS = frozenset(
    {
        "input_prefix",
        "input_suffix",
        "input_extra",
        "prompt",
        "model",
        "n_predict",
        "max_tokens",
        "temperature",
        "top_k",
        "top_p",
        "seed",
        "stop",
        "stream",
        "n_indent",
        "t_max_predict_ms",
        "response_fields",
        "cache_prompt",
        "t_max_prompt_ms",
        "samplers",
        "id_slot",
        "n_cmpl",
        "lora",
    }
)
SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "seed", "stop", "stream")  # read as the OpenAI endpoints read them
CHUNK_FIELDS = frozenset({"text", "filename", "time"})  # an input_extra chunk; `time` (llama.vim's) is ignored


def parse_infill(body: dict) -> tuple[GenRequest, tuple[str, ...]]:
    """Validate a /infill body: the request, and the `response_fields` its reply is cut down to."""
    unknown = sorted(set(body) - INFILL_FIELDS)
    if unknown:
        raise ApiError(
            400, f"/infill does not take {unknown[0]!r}; it reads {', '.join(sorted(INFILL_FIELDS))}", param=unknown[0]
        )
    _infill_hints(body)
    common = parse_request({name: body[name] for name in SAMPLING_FIELDS if name in body}, "infill", ())
    n_predict = integer(body, "n_predict", -1, 2**31)
    max_tokens = integer(body, "max_tokens", -1, 2**31) if n_predict is None else n_predict
    spec = replace(common, max_tokens=None if max_tokens == -1 else max_tokens, infill=_gap(body))
    fields = typed(body, "response_fields", list, "an array of strings") or []
    if not all(isinstance(field, str) for field in fields):
        raise ApiError(
            400, 'response_fields must be an array of strings such as "timings/prompt_ms"', param="response_fields"
        )
    return spec, tuple(fields)


def _gap(body: dict) -> Infill:
    """The gap and its limits; the text at the cursor (`prompt`) continues the prefix, as
    llama-server reads it."""
    prefix = _required_text(body, "input_prefix") + checked_text(typed(body, "prompt", str, "a string") or "", "prompt")
    return Infill(
        prefix,
        _required_text(body, "input_suffix"),
        _extra(body.get("input_extra")),
        integer(body, "n_indent", 0, 2**31) or 0,
        integer(body, "t_max_predict_ms", 0, 2**31) or 0,
    )


def _infill_hints(body: dict) -> None:
    """Check the fields that are accepted but change nothing, so a wrong type is still a 400."""
    typed(body, "model", str, "a string")
    typed(body, "cache_prompt", bool, "true or false")
    integer(body, "t_max_prompt_ms", -1, 2**31)
    integer(body, "id_slot", -1, 2**31)
    integer(body, "n_cmpl", 1, 2**31)
    samplers = body.get("samplers")
    if (
        samplers is not None
        and not isinstance(samplers, str)
        and not (isinstance(samplers, list) and all(isinstance(name, str) for name in samplers))
    ):
        raise ApiError(400, "samplers must be an array of sampler names", param="samplers")
    if typed(body, "lora", list, "an array"):
        raise ApiError(400, "this server loads no LoRA adapters; leave lora out", param="lora")


def _required_text(body: dict, name: str) -> str:
    if not isinstance(body.get(name), str):
        raise ApiError(400, f"{name} must be a string (it may be empty), not {shown(body.get(name))}", param=name)
    return checked_text(body[name], name)


def _extra(value) -> tuple[tuple[str, str], ...]:
    """input_extra: an array of {"filename": str, "text": str} chunks (filename optional)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ApiError(
            400, f"input_extra must be an array of {{filename, text}} objects, not {shown(value)}", param="input_extra"
        )
    chunks = []
    for i, chunk in enumerate(value):
        where = f"input_extra[{i}]"
        if not isinstance(chunk, dict) or not isinstance(chunk.get("text"), str):
            raise ApiError(
                400, f"{where} must be an object with a text string (and a filename), not {shown(chunk)}", param=where
            )
        unknown = sorted(set(chunk) - CHUNK_FIELDS)
        if unknown:
            raise ApiError(400, f"{where} has {unknown[0]!r}; a chunk holds filename and text", param=where)
        filename = typed(chunk, "filename", str, "a string", where + ".")
        chunks.append(
            (
                checked_text("tmp" if filename is None else filename, where + ".filename"),
                checked_text(chunk["text"], where + ".text"),
            )
        )
    return tuple(chunks)
