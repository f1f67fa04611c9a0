"""Fill-in-the-middle: the prompt that asks a code model for the text between a prefix and a
suffix, the limits editors put on that text, and llama-server's reply shape for `/infill`.

The prompt follows llama-server's `format_infill` (the repository-level layout of Qwen2.5-Coder's
training): other files first, each after the file-separator token and its name, then
`<fim_pre> prefix <fim_suf> suffix <fim_mid>`, from the control tokens the model's GGUF header
names. What does not fit is cut as llama-server cuts it: the start of the prefix, the end of the
suffix, the start of the other files, whose share depends on the context alone, so that the next
request from the same editor finds them in the KV cache however its prefix grew. It differs from
llama-server in three details: a BOS token (for models that take one) comes first, not after the
other files; the repository line comes only with other files; and the files' share is half the
room up to 2048 tokens kept for the prefix and suffix (llama-server keeps a whole batch, so in a
context of 2048 it sends no other files at all). All of it sits in the prompt, so the copy
drafter, which indexes the prompt, drafts from the other files, the prefix and the suffix alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from specgen.decoding.loop import GenerationConfig
from specgen.llama.model import FimTokens
from specgen.serve.wire import GenRequest, Outcome, stats

REPOSITORY = "myproject\n"  # llama-server's repository line after the repository token
CURRENT_FILE = "filename\n"  # and its name line for the file being edited
SNIPPET = "\n\n--- snippet ---\n\n"  # before each other file, for models without a file separator
LOCAL_TOKENS = 2048  # room kept for the prefix and suffix, at most half the prompt's (llama-server's batch)


@dataclass(frozen=True)
class FimPrompt:
    """The prompt's tokens, and whether any of the text was left out to fit."""

    tokens: list[int]
    truncated: bool


def files_tokens(fim: FimTokens, tokenize: Callable[[str], list[int]], files: tuple[tuple[str, str], ...]) -> list[int]:
    """Other files as context: `<fim_rep>myproject\\n`, each file as `<fim_sep>name\\n` and its
    text, then `<fim_sep>filename\\n` for the file being edited (a snippet line between files for a
    model without those tokens). Nothing without files."""
    if not files:
        return []
    tokens = [fim.rep, *tokenize(REPOSITORY)] if fim.rep is not None else []
    for name, text in files:
        tokens += [fim.sep, *tokenize(name + "\n")] if fim.sep is not None else tokenize(SNIPPET)
        tokens += tokenize(text)
    if fim.sep is not None:
        tokens += [fim.sep, *tokenize(CURRENT_FILE)]
    return tokens


def fim_prompt(
    fim: FimTokens, bos: int | None, prefix: list[int], suffix: list[int], files: list[int], budget: int
) -> FimPrompt:
    """`[bos] files <fim_pre> prefix <fim_suf> suffix <fim_mid>` in at most `budget` tokens (at least
    the control tokens'). The files take their end, up to the room beyond what is kept for the
    prefix and suffix (`LOCAL_TOKENS`, or half the room where that is less); the prefix and suffix
    take the rest: the suffix its start, a quarter or more where the prefix is shorter, the prefix
    its end."""
    if fim.pre is None or fim.suf is None or fim.mid is None:
        raise ValueError("fim_prompt needs a model's <fim_pre>, <fim_suf> and <fim_mid> tokens")
    room = max(budget - 3 - (bos is not None), 0)
    files_take = min(len(files), room - min(LOCAL_TOKENS, room // 2))
    local = room - files_take
    suffix_take = min(len(suffix), max(local // 4, local - len(prefix)))
    prefix_take = min(len(prefix), local - suffix_take)
    tokens = [
        *([bos] if bos is not None else []),
        *files[len(files) - files_take :],
        fim.pre,
        *prefix[len(prefix) - prefix_take :],
        fim.suf,
        *suffix[:suffix_take],
        fim.mid,
    ]
    truncated = (prefix_take, suffix_take, files_take) != (len(prefix), len(suffix), len(files))
    return FimPrompt(tokens, truncated)


class EditorLimits:
    """llama-server's limits for editors. `n_indent`: the reply ends before the first character of
    a later line (after the first line break) that is indented by fewer spaces or tabs, keeping the
    indentation itself; an empty line ends it too. `t_max_predict_ms`: once the time since `start`
    has passed, the reply ends after the next line break."""

    def __init__(self, n_indent: int, t_max_predict_ms: int, start: float):
        self.n_indent = n_indent
        self.deadline = start + t_max_predict_ms / 1000 if t_max_predict_ms > 0 else None
        self._column: int | None = None  # spaces and tabs at the start of the current line so far

    def feed(self, text: str, now: float | None) -> tuple[str, str | None]:
        """The part of `text` to keep, and why the reply ends there ("indent", "time limit") or None.
        `now` None: no time limit (the reply's last piece)."""
        for position, char in enumerate(text):
            if self._column is not None and char in " \t":
                self._column += 1
                continue
            if self._column is not None:  # the line's first other character (an empty line's break too)
                if self._column < self.n_indent:
                    return text[:position], "indent"
                self._column = None
            if char == "\n":
                self._column = 0
        if now is not None and self.deadline is not None and now > self.deadline and "\n" in text:
            return text[: text.index("\n") + 1], "time limit"
        return text, None


STOP_TYPES = {"eog": "eos", "stop string": "word", "interrupted": "none"}  # the rest: "limit"


class InfillReply:
    """A /infill reply in llama-server's shape: one JSON body, or server-sent events of
    `{"content", "stop": false}` pieces and the final body (content empty) with `"stop": true`,
    without OpenAI's `[DONE]`. The final body is cut down to `fields` when the client named any
    (`response_fields`: paths such as "timings/prompt_ms", which become its keys)."""

    kind = "infill"

    def __init__(self, model: str, draft_model: str | None, settings: dict, fields: tuple[str, ...]):
        self.model, self.draft_model, self.settings, self.fields = model, draft_model, settings, fields
        self.new_line = False  # a streamed piece held a line break

    def body(self, text: str, outcome: Outcome, logprobs=None) -> dict:
        """The whole reply of a request that did not stream (/infill reads no `n_probs`: `logprobs`
        is always None)."""
        return self._final(text, outcome, "\n" in text)

    def chunk(self, text: str | None, finish: str | None = None, role: bool = False, logprobs=None) -> dict:
        self.new_line = self.new_line or "\n" in (text or "")
        return {"index": 0, "content": text or "", "tokens": [], "stop": False, "id_slot": 0}

    def last_chunks(self, outcome: Outcome, include_usage: bool) -> list[dict]:
        return [self._final("", outcome, self.new_line)]

    def _final(self, text: str, outcome: Outcome, new_line: bool) -> dict:
        s = outcome.summary
        body = {
            "index": 0,
            "content": text,
            "tokens": [],
            "id_slot": 0,
            "stop": True,
            "model": self.model,
            "tokens_predicted": s.tokens,
            "tokens_evaluated": s.prompt_tokens,
            "generation_settings": self.settings,
            "has_new_line": new_line,
            "truncated": outcome.truncated,
            "stop_type": STOP_TYPES.get(s.stop_reason, "limit"),
            "stopping_word": outcome.stop_word,
            "tokens_cached": max(s.prompt_tokens + s.tokens - 1, 0),
            "timings": timings(outcome),
            "specgen": stats(outcome, self.draft_model),
        }
        return picked(body, self.fields) if self.fields else body


def settings(request: GenRequest, config: GenerationConfig) -> dict:
    """llama-server's `generation_settings`: what this reply was generated with (`config`: the
    server's settings with the request's own)."""
    sampling, infill = config.sampling, request.infill
    return {
        "n_predict": config.max_tokens,
        "temperature": sampling.temperature,
        "top_k": sampling.top_k,
        "top_p": sampling.top_p,
        "seed": -1 if sampling.seed is None else sampling.seed,
        "stop": list(request.stop),
        "stream": request.stream,
        "samplers": ["top_k", "top_p", "temperature"],
        "n_indent": infill.n_indent if infill else 0,
        "t_max_predict_ms": infill.t_max_predict_ms if infill else 0,
    }


def timings(outcome: Outcome) -> dict:
    """llama-server's `timings`: prompt tokens reused (`cache_n`) and decoded (`prompt_n`) and the
    prefill's milliseconds, then the reply's tokens and milliseconds (the time to the first token
    is specgen's `first_token_s`)."""
    s = outcome.summary
    cache_n = max(s.prompt_tokens - outcome.prefill.decoded, 0)
    prompt_n, prompt_ms, predicted_ms = s.prompt_tokens - cache_n, outcome.prefill.seconds * 1000, s.decode_s * 1000
    out = {
        "cache_n": cache_n,
        "prompt_n": prompt_n,
        "prompt_ms": round(prompt_ms, 3),
        "prompt_per_token_ms": round(prompt_ms / prompt_n, 3) if prompt_n else 0.0,
        "prompt_per_second": round(prompt_n / prompt_ms * 1000, 2) if prompt_ms else 0.0,
        "predicted_n": s.tokens,
        "predicted_ms": round(predicted_ms, 3),
        "predicted_per_token_ms": round(predicted_ms / s.tokens, 3) if s.tokens else 0.0,
        "predicted_per_second": round(s.tokens / predicted_ms * 1000, 2) if predicted_ms else 0.0,
    }
    if s.drafted:
        out |= {"draft_n": s.drafted, "draft_n_accepted": s.accepted}
    return out


def picked(body: dict, fields: tuple[str, ...]) -> dict:
    """The values at `fields` ("a/b" reads body["a"]["b"]), keyed by the path; paths not found are left out."""
    out = {}
    for path in fields:
        value, found = body, True
        for key in path.split("/"):
            found = isinstance(value, dict) and key in value
            if not found:
                break
            value = value[key]
        if found:
            out[path] = value
    return out
