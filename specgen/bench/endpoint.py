"""One more row for `specgen bench`: the same prompts against any OpenAI-compatible server.

A user who moves to llama-server (with -md), vLLM, Ollama or LM Studio, or runs `specgen
serve`, wants to see beside specgen's own rows whether the move paid. Each run streams one
completion (chat-templated prompts through /v1/chat/completions, --raw ones through
/v1/completions) with the bench's sampling, and is timed from the client's side: the time to
the first streamed token stands where the local rows have prefill, and decoding runs from the
first token to the last. The token count is the server's `usage` (asked for with
stream_options.include_usage), else the streamed chunks with text. A `specgen serve` endpoint
also says what its drafters did (its `specgen` object): the tokens drafted and kept, in all and
by drafter, which the row then reports as the local rows do theirs.

Only the standard library speaks HTTP here, so the bench needs no client package.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse
from dataclasses import dataclass, replace

from specgen.decoding.drafters.base import Source
from specgen.decoding.drafters.prediction import PredictionReport
from specgen.decoding.events import SourceCount, Summary
from specgen.decoding.sampling import SamplingParams
from specgen.errors import SpecgenError, UsageError

TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Endpoint:
    """A server's /v1 base URL, the model to ask for, and its API key (never written to results)."""

    url: str
    model: str
    key: str | None = None


def base_url(url: str) -> str:
    """'http://host:8080' -> 'http://host:8080/v1'; a URL with a path keeps it (e.g. '.../api/v1')."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"--endpoint takes an http(s) URL such as http://127.0.0.1:8080/v1, not {url!r}")
    path = parts.path.rstrip("/") or "/v1"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def resolve(url: str, model: str | None, key: str | None) -> Endpoint:
    """The endpoint with its model: as given, else the first that GET /models lists."""
    base = base_url(url)
    if model:
        return Endpoint(base, model, key)
    status, body = _request("GET", f"{base}/models", None, key)
    try:
        return Endpoint(base, json.loads(body)["data"][0]["id"], key)
    except (ValueError, KeyError, IndexError, TypeError):
        raise SpecgenError(f"{base}/models (HTTP {status}) lists no model; name one with --endpoint-model") from None


def stream(
    endpoint: Endpoint,
    text: str,
    raw: bool,
    max_tokens: int,
    sampling: SamplingParams,
    conversation: tuple[tuple[str, str], ...] = (),
    schema: dict | None = None,
    prediction: str | None = None,
) -> tuple[str, Summary, PredictionReport | None]:
    """Stream one completion of `text` (or of the chat `conversation` it ends, as (role, content)
    pairs), as JSON that fits `schema` where given (OpenAI's `response_format`), with OpenAI's
    `prediction` where given; its text, a Summary timed as the bench times its runs, and the
    prediction's counts as the server reports them in its usage (None without a prediction)."""
    messages = [{"role": role, "content": content} for role, content in conversation]
    body = {
        "model": endpoint.model,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": max_tokens,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        **({"top_k": sampling.top_k} if sampling.top_k else {}),
        **({"seed": sampling.seed} if sampling.seed is not None else {}),
        **({"prediction": {"type": "content", "content": prediction}} if prediction is not None else {}),
        **({"prompt": text} if raw else {"messages": messages or [{"role": "user", "content": text}]}),
        **(
            {"response_format": {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}}
            if schema is not None
            else {}
        ),
    }
    path = "/completions" if raw else "/chat/completions"
    start = time.perf_counter()
    parts, arrivals, usage, finish, drafting = [], [], None, "", None
    for event in _events(f"{endpoint.url}{path}", body, endpoint.key):
        choice = (event.get("choices") or [{}])[0]
        piece = choice.get("text") if raw else (choice.get("delta") or {}).get("content")
        if piece:
            parts.append(piece)
            arrivals.append(time.perf_counter())
        finish = choice.get("finish_reason") or finish
        usage = event.get("usage") or usage
        drafting = event.get("specgen") or drafting
    tokens = (usage or {}).get("completion_tokens") or len(arrivals)
    if tokens < 2 or len(arrivals) < 2:
        raise SpecgenError(
            f"{endpoint.url} streamed {tokens} token(s) in {len(arrivals)} chunk(s) for a prompt: "
            "a rate needs two or more; raise -n, or check the server"
        )
    prompt_tokens = (usage or {}).get("prompt_tokens", 0)
    summary = _summary(tokens, len(arrivals), arrivals[0] - start, arrivals[-1] - arrivals[0], prompt_tokens, finish)
    if isinstance(drafting, dict):
        summary = _with_drafting(summary, drafting)
    return "".join(parts), summary, _prediction(usage) if prediction is not None else None


def _with_drafting(summary: Summary, drafting: dict) -> Summary:
    """The run with what a `specgen serve` endpoint's drafters did, from its `specgen` object:
    tokens drafted and kept, and by drafter (`sources`, where it gives them; names this version
    does not know are left out)."""
    known = {source.value for source in Source}
    listed = drafting.get("sources")
    sources: dict = listed if isinstance(listed, dict) else {}
    by_source = {
        Source(name): SourceCount(int(count.get("drafted") or 0), int(count.get("kept") or 0))
        for name, count in sources.items()
        if name in known and isinstance(count, dict)
    }
    drafted, accepted = int(drafting.get("drafted") or 0), int(drafting.get("accepted") or 0)
    return replace(summary, drafted=drafted, accepted=accepted, by_source=by_source)


def _prediction(usage: dict | None) -> PredictionReport:
    """OpenAI's prediction counts from a reply's usage (zeros where the server gives none)."""
    details = (usage or {}).get("completion_tokens_details") or {}
    accepted = int(details.get("accepted_prediction_tokens") or 0)
    rejected = int(details.get("rejected_prediction_tokens") or 0)
    return PredictionReport(accepted + rejected, accepted, rejected)


def _summary(tokens: int, chunks: int, first_s: float, between_s: float, prompt_tokens: int, finish: str) -> Summary:
    """The run as the bench's rows report theirs. Decode time is the mean time per token after the
    first (first to last token), times the tokens: the rate of tokens 2..n, the local rows' measure."""
    decode_s = between_s * tokens / (tokens - 1)
    return Summary(
        mode="endpoint",
        draft_tokens=0,
        prompt_tokens=prompt_tokens,
        prefilled_tokens=prompt_tokens,
        tokens=tokens,
        rounds=chunks,
        drafted=0,
        accepted=0,
        tokens_per_second=tokens / decode_s,
        prefill_s=first_s,
        decode_s=decode_s,
        draft_s=0.0,
        verify_s=0.0,
        other_s=decode_s,
        stop_reason=finish or "?",
    )


def _events(url: str, body: dict, key: str | None):
    """The server-sent events of a streamed reply, as dicts; a server refusing stream_options gets
    the request again without it."""
    status, response = _open("POST", url, body, key)
    if status == 400 and "stream_options" in body:
        response.close()
        body = {name: value for name, value in body.items() if name != "stream_options"}
        status, response = _open("POST", url, body, key)
    if status != 200:
        raise SpecgenError(f"{url} answered HTTP {status}: {response.read(300).decode('utf-8', 'replace').strip()}")
    with response:
        for line in iter(response.readline, b""):
            data = line.decode("utf-8", "replace").strip()
            if data.startswith("data:") and data[5:].strip() != "[DONE]":
                try:
                    yield json.loads(data[5:])
                except ValueError:
                    raise SpecgenError(f"{url} streamed an event that is not JSON: {data[:80]!r}") from None


def _request(method: str, url: str, body: dict | None, key: str | None) -> tuple[int, bytes]:
    status, response = _open(method, url, body, key)
    with response:
        return status, response.read()


def _open(method: str, url: str, body: dict | None, key: str | None):
    parts = urllib.parse.urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.netloc, timeout=TIMEOUT_S)
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    try:
        connection.request(method, parts.path, json.dumps(body) if body is not None else None, headers)
        response = connection.getresponse()
    except OSError as error:
        raise SpecgenError(f"cannot reach {url}: {error.strerror or error}; is the server running?") from None
    return response.status, response
