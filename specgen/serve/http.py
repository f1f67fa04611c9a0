"""`specgen serve`: an OpenAI-compatible HTTP server over one loaded target/draft pair (and
llama-server's `/infill`, for editors that fill the middle of a file).

Starlette routes read and check requests on uvicorn's event loop (its own thread, so that the
main thread keeps the signals: Ctrl-C drains, a second stops at once); generation runs on the
scheduler's single thread (serve.scheduler), whose events come back here and go out as
server-sent events or as one JSON body. A watcher per request notices a client that hangs up and cancels
its job.

Safe by default: loopback unless API keys guard the port, each key a separate user whose caches
no other key's requests see; a cap on body size, every error an OpenAI-style JSON body (never a
traceback), and one access-log line per request on stderr, with what the client chose escaped.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import os
import signal
import socket
import sys
import threading
import time
import traceback
import unicodedata
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from specgen.decoding.loop import GenerationConfig
from specgen.errors import SpecgenError, UsageError
from specgen.llama.model import LoadOptions
from specgen.models.paths import ModelPaths
from specgen.serve.infill import InfillReply, settings
from specgen.serve.wire import ApiError, GenRequest, Outcome, Reply, parse_infill, parse_request
from specgen.serve.scheduler import Delta, Failed, Finished, Gone, Job, Limits, Scheduler

LOG = "specgen.log"
USER = "specgen.user"  # in the ASGI scope: which key the request sent (0 on a server without keys)


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


@dataclass
class Record:
    """What the access-log line says about one request; the handlers fill it in."""

    start: float = field(default_factory=time.perf_counter)
    status: int = 0
    stream: bool = False
    outcome: Outcome | None = None
    note: str = ""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_binding(host: str, api_keys: tuple[str, ...]) -> None:
    """Refuse to listen beyond this machine without an API key."""
    if not is_loopback(host) and not api_keys:
        raise UsageError(
            f"--host {host} lets other machines reach the models; pass --api-key KEY (or set SPECGEN_API_KEY) "
            "so that only clients with the key are served, or keep the default --host 127.0.0.1"
        )


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound now so that a taken port is one clear error (port 0: any free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1" if host == "localhost" else host, port))
    except OSError as error:
        sock.close()
        raise SpecgenError(f"cannot listen on {host}:{port}: {error.strerror or error}; pick another --port or --host")
    sock.listen(128)
    return sock


def url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


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
    handlers = {ApiError: _api_error, HTTPException: _http_error, Exception: _internal_error}
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
        return JSONResponse({"status": "ok", "model": self.options.model_id, "busy": self.scheduler.busy,
                             "waiting": self.scheduler.waiting})

    async def models(self, request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [self.card()]})

    async def model(self, request: Request) -> JSONResponse:
        name = request.path_params["model"]
        if name != self.options.model_id:
            raise ApiError(404, f"The model '{name}' does not exist; this server serves '{self.options.model_id}'",
                           param="model", code="model_not_found")
        return JSONResponse(self.card())

    async def chat(self, request: Request):
        return await self._openai(request, "chat")

    async def completion(self, request: Request):
        return await self._openai(request, "completion")

    async def infill(self, request: Request):
        """llama-server's /infill, in its reply shape (serve.infill)."""
        body = await read_json(request, self.options.max_body)
        spec, fields = parse_infill(body)
        reply = InfillReply(self.options.model_id, self.draft_name, settings(spec, self.scheduler.config_for(spec)),
                            fields)
        return await self._generate(request, spec, lambda: reply)

    async def _openai(self, request: Request, kind: str):
        body = await read_json(request, self.options.max_body)
        spec = parse_request(body, kind, (self.options.model_id,))
        prefix = "cmpl" if kind == "completion" else "chatcmpl"
        return await self._generate(request, spec, lambda: Reply(
            kind, f"{prefix}-{uuid.uuid4().hex[:24]}", int(time.time()), self.options.model_id, self.draft_name))

    async def _generate(self, request: Request, spec: GenRequest, make_reply):
        """Queue the generation and answer as it goes: streamed or one body, in the shape
        `make_reply()` gives once the generation has begun."""
        record: Record = request.scope[LOG]
        record.stream = spec.stream
        job = Job(spec, request.scope[USER])
        self.scheduler.submit(job)
        watcher = asyncio.create_task(self._watch(request.receive, job, record))
        try:
            first = await job.next()
            if isinstance(first, Failed):
                raise first.error
            if isinstance(first, Gone):
                return JSONResponse({}, status_code=499)
            reply = make_reply()
            asked = spec.logprobs is not None
            if spec.stream:
                stream = EventStream(_events(job, reply, spec.include_usage, record, asked), watcher)
                watcher = None
                return stream
            return await _whole(job, reply, record, asked)
        finally:
            if watcher is not None:
                watcher.cancel()

    async def _watch(self, receive, job: Job, record: Record) -> None:
        """Wait for the client to hang up, then cancel its job (unless it has already ended)."""
        while (await receive())["type"] != "http.disconnect":
            pass
        if not job.done:
            record.note = "client gone"
            self.scheduler.cancel(job)


async def read_json(request: Request, limit: int) -> dict:
    """The body as a JSON object; 413 past `limit` bytes, 400 when it is not a JSON object."""
    declared = request.headers.get("content-length", "")
    too_big = ApiError(413, f"the request body is over the {limit // 1024} KiB limit", code="body_too_large")
    if declared.isdigit() and int(declared) > limit:
        raise too_big
    data = bytearray()
    try:
        async for part in request.stream():
            data += part
            if len(data) > limit:
                raise too_big
    except ClientDisconnect:
        raise ApiError(400, "the client hung up before sending the whole body") from None
    try:
        body = json.loads(data)
    except (ValueError, RecursionError) as error:
        raise ApiError(400, f"the body is not valid JSON ({error}); send a JSON object", code="invalid_json")
    if not isinstance(body, dict):
        raise ApiError(400, "the body must be a JSON object", code="invalid_json")
    return body


async def _whole(job: Job, reply: Reply | InfillReply, record: Record, logprobs: bool) -> JSONResponse:
    """Wait for the whole generation and answer with one body (with the tokens' log-probabilities
    where `logprobs`)."""
    texts, entries = [], []
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


async def _events(job: Job, reply: Reply | InfillReply, include_usage: bool, record: Record, logprobs: bool):
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

    headers = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache"),
               (b"x-accel-buffering", b"no")]

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


# -- errors, the key check and the access log ------------------------------------------------


def error_response(error: ApiError, request: Request | None = None) -> JSONResponse:
    """OpenAI's error body; the message also goes into the request's access-log line."""
    if request is not None and LOG in request.scope:
        request.scope[LOG].note = error.message
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers)


async def _api_error(request: Request, error: ApiError) -> JSONResponse:
    return error_response(error, request)


async def _http_error(request: Request, error: HTTPException) -> JSONResponse:
    if error.status_code == 404:
        message = (f"no route {request.url.path}; this server has /v1/models, /v1/chat/completions, /v1/completions, "
                   "/infill, /health")
    else:
        message = f"{request.method} is not allowed on {request.url.path}" if error.status_code == 405 else error.detail
    return error_response(ApiError(error.status_code, message, headers=dict(error.headers or {})), request)


async def _internal_error(request: Request, error: Exception) -> JSONResponse:
    return error_response(ApiError(500, f"internal error: {type(error).__name__}: {error}", kind="server_error"), request)


class Front:
    """Outermost ASGI layer: the Host and content-type checks, the Bearer key check (which also says
    which user a request is: its key's place in the list), the last guard against tracebacks, the
    access log.

    A server on loopback trusts whatever can reach it, so it must not be reachable from a web
    page: a browser lets any page send a "simple" POST (text/plain, no preflight) to 127.0.0.1,
    and DNS rebinding lets a page's own name point there. So on a loopback bind only loopback
    Host names (and those the user allowed) are served, and every POST must be JSON.
    """

    def __init__(self, app, api_keys: tuple[str, ...], hosts: set[str] | None = None):
        self.app = app
        self.keys = [key.encode() for key in api_keys]
        self.hosts = hosts  # None: any Host (a bind beyond loopback, where the key protects)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        record = Record()
        scope[LOG] = record

        async def sending(message) -> None:
            if message["type"] == "http.response.start":
                record.status = message["status"]
            await send(message)

        try:
            refused = self._refused(scope)
            if refused is not None:
                record.note = refused.message
                await error_response(refused)(scope, receive, sending)
            elif (user := self._user(scope)) is None:
                record.note = "no valid API key"
                await error_response(ApiError(401, "a valid API key is needed: send 'Authorization: Bearer KEY'",
                                              code="invalid_api_key", headers={"WWW-Authenticate": "Bearer"}))(
                    scope, receive, sending)
            else:
                scope[USER] = user
                await self.app(scope, receive, sending)
        except Exception as error:  # noqa: BLE001 - logged in one line; the response was already sent
            record.note = f"internal error: {type(error).__name__}: {error}"
            if os.environ.get("SPECGEN_DEBUG") == "1":
                traceback.print_exception(error)
        finally:
            print(access_line(scope, record), file=sys.stderr, flush=True)

    def _refused(self, scope) -> ApiError | None:
        headers = dict(scope["headers"])
        if self.hosts is not None and not _allowed_host(headers.get(b"host", b""), self.hosts):
            return ApiError(403, "this server answers only requests addressed to localhost (a web page or "
                            "another name may not use it); add the name with --allow-host NAME", code="host_not_allowed")
        kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
        if scope["method"] == "POST" and kind != b"application/json":
            return ApiError(415, "send the request body as JSON with 'Content-Type: application/json'",
                            code="unsupported_media_type")
        return None

    def _user(self, scope) -> int | None:
        """The place of the key the request sends in the list (None: no valid key; 0: no keys
        needed). Every key is compared, each in constant time."""
        if not self.keys:
            return 0
        given = dict(scope["headers"]).get(b"authorization", b"")
        scheme, _, token = given.partition(b" ")
        matches = [hmac.compare_digest(token.strip(), key) for key in self.keys]
        return matches.index(True) if scheme.lower() == b"bearer" and True in matches else None


def _allowed_host(header: bytes, hosts: set[str]) -> bool:
    """Whether a Host header names loopback (any port) or one of `hosts`."""
    host = header.decode("latin-1").strip().lower()
    name = host[1:host.index("]")] if host.startswith("[") and "]" in host else host.rsplit(":", 1)[0]
    return name in hosts or is_loopback(name)


def printable(text: str, spaces: bool = True) -> str:
    """`text` with each character that could end, forge or garble a log line escaped (as \\xNN,
    \\uNNNN or \\UNNNNNNNN), and spaces too unless `spaces` (where a space would split a field)."""
    return "".join(_escaped(char) if _unsafe(char, spaces) else char for char in text)


def _unsafe(char: str, spaces: bool) -> bool:
    """Control characters, line and paragraph separators, invisible and unassigned ones, other
    spaces, and the backslash itself, so that an escape in the log is never ambiguous."""
    if char == " ":
        return not spaces
    return char == "\\" or unicodedata.category(char)[0] in "CZ"


def _escaped(char: str) -> str:
    code = ord(char)
    if char == "\\":
        return "\\\\"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def access_line(scope, record: Record) -> str:
    """One line: who, what, status, time, and for a generation its tokens and speculative stats.
    What the client chose (the percent-decoded path, error notes that quote it) is escaped."""
    client = printable(str((scope.get("client") or ("-",))[0]), spaces=False)
    line = f"specgen: {client} {printable(scope['method'], spaces=False)} {printable(scope['path'], spaces=False)} " \
           f"{record.status or '-'} {time.perf_counter() - record.start:.2f}s"
    outcome = record.outcome
    if outcome is not None:
        s = outcome.summary
        line += f" {'stream' if record.stream else 'whole'}: prompt {s.prompt_tokens} " \
                f"(cached {outcome.prefill.own}, prefilled {outcome.prefill.decoded}), " \
                f"{s.tokens} tokens at {s.tokens_per_second:.1f} tok/s"
        if s.draft_tokens:
            line += f", {s.mode} accepted {s.accepted}/{s.drafted} ({s.acceptance_rate:.0%}), " \
                    f"{s.tokens_per_round:.2f} tokens/round"
        if outcome.prediction is not None:
            p = outcome.prediction
            line += f", prediction {p.accepted_prediction_tokens}/{p.prediction_tokens} accepted"
        first = "-" if outcome.first_token_s is None else f"{outcome.first_token_s:.3f}s"
        line += f", first token {first}, waited {outcome.queued_s:.2f}s, finish {outcome.finish_reason}" \
                f" ({s.stop_reason})"
    if record.note:
        line += f" [{printable(record.note)}]"
    return line


# -- running ---------------------------------------------------------------------------------


def serve(paths: ModelPaths, load: LoadOptions, config: GenerationConfig, auto: bool, options: ServeOptions) -> None:
    """Bind, load the pair once, and serve until Ctrl-C (or SIGTERM); one scheduler thread generates,
    with the auto policy choosing each round where `auto`."""
    from specgen.engine.drafting import base_drafter
    from specgen.llama.pair import open_models
    from specgen.llama.rpc import placement

    check_binding(options.host, options.api_keys)
    sock = bind(options.host, options.port)
    with open_models(paths, load) as (target, draft):
        drafter = base_drafter(draft)
        limits = Limits(options.queue, options.max_prompt_tokens or target.n_ctx, options.max_tokens_limit,
                        options.cache_ram_mib * 2**20, max(len(options.api_keys), 1))
        scheduler = Scheduler(target, drafter, config, auto, limits)
        app = build_app(scheduler, options, paths.draft.name if paths.draft else None)
        settings = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False)
        server = uvicorn.Server(settings)
        if load.rpc:
            print(f"specgen: {placement(target.layers, draft.layers if draft else None)}", file=sys.stderr)
        print(f"specgen: serving {options.model_id} at {url(sock)}/v1 (OpenAI API; Ctrl-C stops)",
              file=sys.stderr, flush=True)
        with scheduler:
            _run_until_stopped(server, sock, scheduler)
    print("specgen: stopped", file=sys.stderr, flush=True)


def _run_until_stopped(server: uvicorn.Server, sock: socket.socket, scheduler: Scheduler) -> None:
    """Run uvicorn on a thread and keep signals here: the first Ctrl-C (or SIGTERM) stops accepting
    and lets running and waiting requests finish; the second stops the running one after its round.

    The handler only counts signals, and the loop acts on them between waits: a signal that raised
    wherever the main thread happened to be could cut the first stop short and hang the exit."""
    done = threading.Event()
    received: list[int] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        finally:
            done.set()

    thread = threading.Thread(target=run, name="specgen-http", daemon=True)  # never outlives an error here
    previous = {sig: signal.signal(sig, lambda number, frame: received.append(number))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        thread.start()
        handled = 0
        while not done.wait(0.1):
            for _ in range(handled, len(received)):
                _stop(server, scheduler)
                handled += 1
        thread.join()
    finally:
        server.should_exit = True
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stop(server: uvicorn.Server, scheduler: Scheduler) -> None:
    if server.should_exit:
        server.force_exit = True
        scheduler.cancel_all()
        print("specgen: stopping now", file=sys.stderr, flush=True)
        return
    server.should_exit = True
    busy = scheduler.busy + scheduler.waiting
    print(f"specgen: finishing {busy} request(s), then exiting (Ctrl-C again stops at once)" if busy
          else "specgen: exiting", file=sys.stderr, flush=True)


def model_id(pair: str | None, target: Path | None) -> str:
    """The name clients ask for: the pair's, or the target file's stem."""
    if target is not None:
        return target.stem
    from specgen.models.registry import load_registry

    return pair or load_registry().default
