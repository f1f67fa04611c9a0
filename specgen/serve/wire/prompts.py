"""A completion's text fields: the prompt (text or token ids), OpenAI's `suffix` (the gap a
fill-in-the-middle completion fills) and `prediction` (the text the reply is expected to resemble)."""

from __future__ import annotations

from dataclasses import dataclass

from specgen.serve.wire.fields import ApiError, checked_text, shown, typed


@dataclass(frozen=True)
class Infill:
    """A fill-in-the-middle prompt: the text before the gap and after it, other files as
    (filename, text) for context, and llama-server's limits on the reply (0: none)."""

    prefix: str
    suffix: str
    extra: tuple[tuple[str, str], ...] = ()
    n_indent: int = 0  # end before a later line indented less than this
    t_max_predict_ms: int = 0  # end at the first line end past this time


def parse_prompt(value) -> str | tuple[int, ...]:
    """A completion prompt: a string, token ids, or a one-element array of either."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], (str, list)):
        value = value[0]
    if value == "":
        raise ApiError(400, "the prompt is empty; send some text", param="prompt")
    if isinstance(value, str):
        return checked_text(value, "prompt")
    if isinstance(value, list) and value and all(isinstance(t, int) and not isinstance(t, bool) for t in value):
        return tuple(value)
    if isinstance(value, list) and len(value) > 1 and all(isinstance(p, (str, list)) for p in value):
        raise ApiError(400, f"prompt holds {len(value)} prompts; send one per request", param="prompt")
    raise ApiError(
        400, f"prompt must be a string or a non-empty array of token ids, not {shown(value)}", param="prompt"
    )


def suffixed(body: dict) -> Infill | None:
    """A completion with OpenAI's `suffix`: the prompt is the text before the gap, the suffix the
    text after it (an empty or missing suffix: a plain completion)."""
    suffix = typed(body, "suffix", str, "a string")
    if not suffix:
        return None
    prompt = body.get("prompt", "")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise ApiError(
            400,
            f"with a suffix the prompt must be the text before the gap (a string), not {shown(prompt)}",
            param="prompt",
        )
    return Infill(checked_text(prompt, "prompt"), checked_text(suffix, "suffix"))


def parse_prediction(value) -> str | None:
    """OpenAI's `prediction`: {"type": "content", "content": text or an array of text parts}; the
    parts are joined as they are (a prediction is one text cut into pieces)."""
    if value is None:
        return None
    shape = 'prediction must be {"type": "content", "content": "the text the reply is expected to resemble"}'
    if not isinstance(value, dict):
        raise ApiError(400, f"{shape}, not {shown(value)}", param="prediction")
    if value.get("type") != "content":
        raise ApiError(
            400, f"{shape}; its type must be 'content', not {shown(value.get('type'))}", param="prediction.type"
        )
    unknown = sorted(set(value) - {"type", "content"})
    if unknown:
        raise ApiError(
            400, f"prediction.{unknown[0]} is not part of a prediction; {shape}", param=f"prediction.{unknown[0]}"
        )
    content = value.get("content")
    if isinstance(content, str):
        return checked_text(content, "prediction.content")
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            where = f"prediction.content[{i}]"
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise ApiError(
                    400, f"{where} must be a text part ({{type: text, text: ...}}), not {shown(part)}", param=where
                )
            parts.append(checked_text(part["text"], f"{where}.text"))
        return "".join(parts)
    raise ApiError(
        400,
        f"{shape}; its content must be a string or an array of text parts, not {shown(content)}",
        param="prediction.content",
    )
