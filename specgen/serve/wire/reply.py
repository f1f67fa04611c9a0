"""The shapes of a reply: OpenAI's bodies and stream chunks, `usage`, log-probabilities, and the
`specgen` object with the speculative statistics; and the Outcome the scheduler hands back."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specgen.decoding.drafters.prediction import PredictionReport
from specgen.decoding.events import Summary
from specgen.serve.tools import ToolCall

if TYPE_CHECKING:
    from specgen.serve.scheduler import Prefill


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
    return {
        "tokens": [e.token for e in entries],
        "token_logprobs": [e.logprob for e in entries],
        "top_logprobs": [{t.token: t.logprob for t in e.top} for e in entries],
        "text_offset": [e.offset for e in entries],
    }


@dataclass(frozen=True)
class Outcome:
    """How a generation ended, for the reply: why, and the loop's Summary with two timings."""

    finish_reason: str  # "stop" or "length"
    summary: Summary
    first_token_s: float | None  # from the start of this request's turn on the scheduler's thread
    queued_s: float
    prefill: Prefill  # the client's own cached tokens, tokens decoded, seconds
    prediction: PredictionReport | None = None  # what became of the request's prediction, if it sent one
    tool_calls: tuple[ToolCall, ...] = ()  # the calls the reply made
    truncated: bool = False  # a fill-in-the-middle prompt was cut to fit the context
    stop_word: str = ""  # the stop string that ended the reply


def finish_reason(stop_reason: str, stopped: bool) -> str:
    """OpenAI's finish_reason for the loop's stop reason: "stop" (end or stop string) or "length"."""
    return "stop" if stopped or stop_reason == "eog" else "length"


def usage(outcome: Outcome) -> dict:
    summary, cached = outcome.summary, outcome.prefill.own
    return {
        "prompt_tokens": summary.prompt_tokens,
        "completion_tokens": summary.tokens,
        "total_tokens": summary.prompt_tokens + summary.tokens,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": prediction_usage(outcome.prediction),
    }


def prediction_usage(prediction: PredictionReport | None) -> dict:
    """OpenAI's counts of a prediction: its tokens that appear in the completion, in order (a
    longest common subsequence of the two), and the rest; zeros without a prediction."""
    if prediction is None:
        return {"accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
    return {
        "accepted_prediction_tokens": prediction.accepted_prediction_tokens,
        "rejected_prediction_tokens": prediction.rejected_prediction_tokens,
    }


def prediction_stats(prediction: PredictionReport | None) -> dict | None:
    """The `specgen` object's view of a prediction: its tokens, those drafted from it and kept,
    and the output positions where the output left it (None without a prediction)."""
    if prediction is None:
        return None
    return {
        "tokens": prediction.prediction_tokens,
        "drafted": prediction.prediction_drafted,
        "kept": prediction.prediction_kept,
        "breaks": list(prediction.prediction_breaks),
    }


def stats(outcome: Outcome, draft_model: str | None) -> dict:
    """The `specgen` object: what the draft model contributed and how fast the reply came, and
    what each drafter drafted and the target kept (`sources`)."""
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
        "sources": {str(source): {"drafted": n.drafted, "kept": n.kept} for source, n in s.by_source.items()},
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
        return {
            "id": self.ident,
            "object": obj,
            "created": self.created,
            "model": self.model,
            "system_fingerprint": None,
        }

    def logprobs(self, entries) -> dict | None:
        """choices[].logprobs for these entries (None where none were asked for)."""
        if entries is None:
            return None
        return chat_logprobs(entries) if self.kind == "chat" else completion_logprobs(entries)

    def body(self, text: str, outcome: Outcome, logprobs: list[Logprob] | None = None) -> dict:
        """The whole reply of a request that did not stream; `logprobs` where they were asked for."""
        if self.kind == "chat":
            content = text if text or not outcome.tool_calls else None
            message: dict[str, object] = {"role": "assistant", "content": content}
            if outcome.tool_calls:
                message["tool_calls"] = tool_calls(outcome.tool_calls)
            choice: dict[str, object] = {"index": 0, "message": message}
        else:
            choice = {"index": 0, "text": text}
        choice |= {"logprobs": self.logprobs(logprobs), "finish_reason": outcome.finish_reason}
        return {
            **self._head(self.obj),
            "choices": [choice],
            "usage": usage(outcome),
            "specgen": stats(outcome, self.draft_model),
        }

    def chunk(
        self,
        text: str | None,
        finish: str | None = None,
        role: bool = False,
        logprobs: tuple[Logprob, ...] | None = None,
    ) -> dict:
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
            call["choices"][0]["delta"] = {
                "tool_calls": [{"index": i, **c} for i, c in enumerate(tool_calls(outcome.tool_calls))]
            }
            calls.append(call)
        last = self.chunk(None, outcome.finish_reason)
        extra = {"usage": usage(outcome), "specgen": stats(outcome, self.draft_model)}
        if not include_usage:
            return [*calls, last | extra]
        return [
            *calls,
            last,
            {**self._head(self.obj + (".chunk" if self.kind == "chat" else "")), "choices": [], **extra},
        ]


def tool_calls(calls: tuple[ToolCall, ...]) -> list[dict]:
    """OpenAI's tool_calls for serve.tools.ToolCall values, each with a fresh id."""
    return [
        {
            "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments},
        }
        for call in calls
    ]
