"""The outermost layer of the server: which requests reach the endpoints at all (Host,
content type, API key), which user each is, the last guard against a traceback, and the
access-log line of every request."""

from __future__ import annotations

import hmac
import ipaddress
import os
import sys
import traceback

from starlette.requests import Request
from starlette.responses import JSONResponse

from specgen.serve.access_log import Record, access_line
from specgen.serve.wire import ApiError

LOG = "specgen.log"
USER = "specgen.user"  # in the ASGI scope: which key the request sent (0 on a server without keys)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def error_response(error: ApiError, request: Request | None = None) -> JSONResponse:
    """OpenAI's error body; the message also goes into the request's access-log line."""
    if request is not None and LOG in request.scope:
        request.scope[LOG].note = error.message
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers)


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
                await error_response(
                    ApiError(
                        401,
                        "a valid API key is needed: send 'Authorization: Bearer KEY'",
                        code="invalid_api_key",
                        headers={"WWW-Authenticate": "Bearer"},
                    )
                )(scope, receive, sending)
            else:
                scope[USER] = user
                await self.app(scope, receive, sending)
        except Exception as error:  # noqa: BLE001 - the access log notes any failure; the server serves on
            record.note = f"internal error: {type(error).__name__}: {error}"
            if os.environ.get("SPECGEN_DEBUG") == "1":
                traceback.print_exception(error)
        finally:
            print(access_line(scope, record), file=sys.stderr, flush=True)

    def _refused(self, scope) -> ApiError | None:
        headers = dict(scope["headers"])
        if self.hosts is not None and not _allowed_host(headers.get(b"host", b""), self.hosts):
            return ApiError(
                403,
                "this server answers only requests addressed to localhost (a web page or "
                "another name may not use it); add the name with --allow-host NAME",
                code="host_not_allowed",
            )
        kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
        if scope["method"] == "POST" and kind != b"application/json":
            return ApiError(
                415,
                "send the request body as JSON with 'Content-Type: application/json'",
                code="unsupported_media_type",
            )
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
    name = host[1 : host.index("]")] if host.startswith("[") and "]" in host else host.rsplit(":", 1)[0]
    return name in hosts or is_loopback(name)
