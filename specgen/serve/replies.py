"""A generation's events sent to its client: one JSON body once it ends, or server-sent events
as its text comes."""

from __future__ import annotations

import asyncio
import json
from typing import ClassVar

from starlette.responses import JSONResponse

from specgen.serve.access_log import Record
from specgen.serve.infill import InfillReply
from specgen.serve.scheduler import Delta, Failed, Finished, Gone, Job
from specgen.serve.wire import Logprob, Reply


async def whole(job: Job, reply: Reply | InfillReply, record: Record, logprobs: bool) -> JSONResponse:
    """Wait for the whole generation and answer with one body (with the tokens' log-probabilities
    where `logprobs`)."""
    texts: list[str] = []
    entries: list[Logprob] = []
    while True:
        event = await job.next()
        if isinstance(event, Delta):
            texts.append(event.text)
            entries += event.logprobs
        elif isinstance(event, Finished):
            record.outcome = event.outcome
            return JSONResponse(reply.body("".join(texts), event.outcome, entries if logprobs else None))
        elif isinstance(event, Failed):
            raise event.error
        elif isinstance(event, Gone):
            return JSONResponse({}, status_code=499)


async def events(job: Job, reply: Reply | InfillReply, include_usage: bool, record: Record, logprobs: bool):
    """Server-sent events: the reply's chunks as the scheduler sends text (with its tokens'
    log-probabilities where `logprobs`), then (OpenAI's) `data: [DONE]`."""
    if reply.kind == "chat":
        yield sse_event(reply.chunk(None, role=True))
    while True:
        event = await job.next()
        if isinstance(event, Delta):
            yield sse_event(reply.chunk(event.text, logprobs=event.logprobs if logprobs else None))
        elif isinstance(event, Finished):
            record.outcome = event.outcome
            for chunk in reply.last_chunks(event.outcome, include_usage):
                yield sse_event(chunk)
            if reply.kind != "infill":  # llama-server's own stream ends with its last body
                yield b"data: [DONE]\n\n"
            return
        elif isinstance(event, Failed):
            record.note = event.error.message
            yield sse_event(event.error.body())
            return
        elif isinstance(event, Gone):
            return


# Line breaks that JSON leaves as they are but many line readers split on (str.splitlines, httpx's
# iter_lines): a reply holding one would cut its event in two there.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def sse_event(payload: dict) -> bytes:
    """One server-sent event: the payload as JSON on one line, whatever line reader the client has."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).translate(_LINE_BREAKS)
    return b"data: " + text.encode() + b"\n\n"


class EventStream:
    """A text/event-stream response from an async iterator of chunks; cancels the watcher at the end."""

    headers: ClassVar[list[tuple[bytes, bytes]]] = [
        (b"content-type", b"text/event-stream; charset=utf-8"),
        (b"cache-control", b"no-cache"),
        (b"x-accel-buffering", b"no"),
    ]

    def __init__(self, chunks, watcher: asyncio.Task):
        self.chunks, self.watcher = chunks, watcher

    async def __call__(self, scope, receive, send) -> None:
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.headers})
            async for chunk in self.chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:  # the client hung up while we wrote
            pass
        finally:
            self.watcher.cancel()
            await self.chunks.aclose()
