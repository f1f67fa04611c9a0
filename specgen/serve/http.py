"""`specgen serve`: an OpenAI-compatible HTTP server over one loaded target/draft pair (and
llama-server's `/infill`, for editors that fill the middle of a file).

Starlette routes read and check requests on uvicorn's event loop (its own thread, so that the
main thread keeps the signals: Ctrl-C drains, a second stops at once); generation runs on the
scheduler's single thread (serve.scheduler), whose events come back here and go out as
server-sent events or as one JSON body. A watcher per request notices a client that hangs up
and cancels its job.

Safe by default: loopback unless API keys guard the port, each key a separate user whose caches
no other key's requests see; a cap on body size, every error an OpenAI-style JSON body (never a
traceback), and one access-log line per request on stderr, with what the client chose escaped.

The app itself lives here: its routes, the endpoints and the reading of a body. What stands in
front of it (Host, key, access log) is serve.front, how replies go out serve.replies, how the
process runs serve.server.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from specgen.serve.access_log import Record
from specgen.serve.connections import ConnectionLimits
from specgen.serve.front import LOG, USER, Front, error_response, is_loopback
from specgen.serve.infill import InfillReply, settings
from specgen.serve.json_depth import MAX_DEPTH, too_deep
from specgen.serve.replies import EventStream, events, whole
from specgen.serve.scheduler import Failed, Gone, Job, Scheduler
from specgen.serve.wire import ApiError, GenRequest, Reply, parse_infill, parse_request


@dataclass(frozen=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8080
    api_keys: tuple[str, ...] = ()  # each a separate user; none: every client is one user
    queue: int = 8
    max_body: int = 2 * 1024 * 1024
    model_id: str = "specgen"
    max_prompt_tokens: int | None = None  # None: the context size
    max_tokens_limit: int = 4096  # the longest reply one request may ask for
    allowed_hosts: tuple[str, ...] = ()  # Host names accepted besides loopback ones, on a loopback bind
    cache_ram_mib: int = 512  # saved KV caches of other conversations (serve.states)
    connections: ConnectionLimits = field(default_factory=ConnectionLimits)  # how many, how long to send


# -- the application -------------------------------------------------------------------------


def build_app(scheduler: Scheduler, options: ServeOptions, draft_name: str | None):
    """The ASGI app: OpenAI routes, JSON errors for everything, the key check and the access log."""
    api = Api(scheduler, options, draft_name)
    routes = [
        Route("/health", api.health, methods=["GET"]),
        Route("/v1/models", api.models, methods=["GET"]),
        Route("/v1/models/{model:path}", api.model, methods=["GET"]),
        Route("/v1/chat/completions", api.chat, methods=["POST"]),
        Route("/v1/completions", api.completion, methods=["POST"]),
        Route("/infill", api.infill, methods=["POST"]),
    ]
    handlers: dict[Any, Any] = {ApiError: _api_error, HTTPException: _http_error, Exception: _internal_error}
    hosts = None if not is_loopback(options.host) else {"localhost", *options.allowed_hosts}
    return Front(Starlette(routes=routes, exception_handlers=handlers), options.api_keys, hosts)


class Api:
    """The endpoints, over one scheduler."""

    def __init__(self, scheduler: Scheduler, options: ServeOptions, draft_name: str | None):
        self.scheduler, self.options, self.draft_name = scheduler, options, draft_name
        self.created = int(time.time())

    def card(self) -> dict:
        return {"id": self.options.model_id, "object": "model", "created": self.created, "owned_by": "specgen"}

    async def health(self, request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "status": "ok",
                "model": self.options.model_id,
                "busy": self.scheduler.busy,
                "waiting": self.scheduler.waiting,
            }
        )

    async def models(self, request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [self.card()]})

    async def model(self, request: Request) -> JSONResponse:
        name = request.path_params["model"]
        if name != self.options.model_id:
            raise ApiError(
                404,
                f"The model '{name}' does not exist; this server serves '{self.options.model_id}'",
                param="model",
                code="model_not_found",
            )
        return JSONResponse(self.card())

    async def chat(self, request: Request):
        return await self._openai(request, "chat")

    async def completion(self, request: Request):
        return await self._openai(request, "completion")

    async def infill(self, request: Request):
        """llama-server's /infill, in its reply shape (serve.infill)."""
        body = await read_json(request, self.options.max_body, self.options.connections.receive_s)
        spec, fields = parse_infill(body)
        reply = InfillReply(
            self.options.model_id, self.draft_name, settings(spec, self.scheduler.config_for(spec)), fields
        )
        return await self._generate(request, spec, lambda: reply)

    async def _openai(self, request: Request, kind: str):
        body = await read_json(request, self.options.max_body, self.options.connections.receive_s)
        spec = parse_request(body, kind, (self.options.model_id,))
        prefix = "cmpl" if kind == "completion" else "chatcmpl"
        return await self._generate(
            request,
            spec,
            lambda: Reply(
                kind, f"{prefix}-{uuid.uuid4().hex[:24]}", int(time.time()), self.options.model_id, self.draft_name
            ),
        )

    async def _generate(self, request: Request, spec: GenRequest, make_reply):
        """Queue the generation and answer as it goes: streamed or one body, in the shape
        `make_reply()` gives once the generation has begun."""
        record: Record = request.scope[LOG]
        record.stream = spec.stream
        job = Job(spec, request.scope[USER])
        self.scheduler.submit(job)
        watcher = asyncio.create_task(self._watch(request.receive, job, record))
        streaming = False  # the stream cancels the watcher once it ends
        try:
            first = await job.next()
            if isinstance(first, Failed):
                raise first.error
            if isinstance(first, Gone):
                return JSONResponse({}, status_code=499)
            reply = make_reply()
            asked = spec.logprobs is not None
            if spec.stream:
                streaming = True
                return EventStream(events(job, reply, spec.include_usage, record, asked), watcher)
            return await whole(job, reply, record, asked)
        finally:
            if not streaming:
                watcher.cancel()

    async def _watch(self, receive, job: Job, record: Record) -> None:
        """Wait for the client to hang up, then cancel its job (unless it has already ended)."""
        while (await receive())["type"] != "http.disconnect":
            pass
        if not job.done:
            record.note = "client gone"
            self.scheduler.cancel(job)


async def read_json(request: Request, limit: int, seconds: float) -> dict:
    """The body as a JSON object; 413 past `limit` bytes, 408 when it has not come within
    `seconds`, 400 when it is not a JSON object (or nests deeper than any request needs)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"the request body is over the {limit // 1024} KiB limit", code="body_too_large")
    try:
        data = await asyncio.wait_for(_body(request, limit), seconds)
    except ClientDisconnect:
        raise ApiError(400, "the client hung up before sending the whole body") from None
    except asyncio.TimeoutError:
        raise ApiError(
            408,
            f"the request's body did not arrive within {seconds:g} s; send it at once",
            code="request_timeout",
            headers={"Connection": "close"},
        ) from None
    if too_deep(data):
        raise ApiError(
            400,
            f"the body is not valid JSON for this server: it nests arrays and objects more than "
            f"{MAX_DEPTH} levels deep; send a flatter JSON object",
            code="invalid_json",
        )
    try:
        body = json.loads(data)
    except (ValueError, RecursionError) as error:
        raise ApiError(400, f"the body is not valid JSON ({error}); send a JSON object", code="invalid_json") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the body must be a JSON object", code="invalid_json")
    return body


async def _body(request: Request, limit: int) -> bytearray:
    data = bytearray()
    async for part in request.stream():
        data += part
        if len(data) > limit:
            raise ApiError(413, f"the request body is over the {limit // 1024} KiB limit", code="body_too_large")
    return data


async def _api_error(request: Request, error: ApiError) -> JSONResponse:
    return error_response(error, request)


async def _http_error(request: Request, error: HTTPException) -> JSONResponse:
    if error.status_code == 404:
        message = (
            f"no route {request.url.path}; this server has /v1/models, /v1/chat/completions, /v1/completions, "
            "/infill, /health"
        )
    else:
        message = f"{request.method} is not allowed on {request.url.path}" if error.status_code == 405 else error.detail
    return error_response(ApiError(error.status_code, message, headers=dict(error.headers or {})), request)


async def _internal_error(request: Request, error: Exception) -> JSONResponse:
    message = f"internal error: {type(error).__name__}: {error}"
    return error_response(ApiError(500, message, kind="server_error"), request)
