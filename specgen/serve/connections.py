"""Connections before they are requests: a cap on how many are open, and a deadline for each
request to arrive.

uvicorn accepts every connection and waits for its headers as long as the client likes, so a
client that opens connections and sends their headers a byte at a time holds a file descriptor
each, before any key is checked: about a thousand of them exhaust a default descriptor limit and
the server can accept no one. Here uvicorn's own h11 protocol gets three bounds:

- at most `max_connections` open at once, and at most a quarter of them from one client address;
  a connection past either is answered 503 and closed at once;
- a request's headers must arrive within `receive_s` of its first byte (or of the connection,
  or of the last response on a kept-alive one), and its body within `receive_s` more; a request
  that has not is answered 408 and its connection closed. A kept-alive connection that sends
  nothing is closed without a word, as uvicorn closes idle ones.

A refused connection is closed the way nginx's lingering close does it: the answer, then the
end of the stream, and what the client still sends is read and dropped for `LINGER_S` before the
socket closes. Closed at once, a socket with unread bytes (a client still sending its headers)
answers them with a reset, and a reset can reach the client before it has read the 503 or 408.

The app reads the body with its own deadline too (serve.http), so that a body that trickles
gets the same 408 as a JSON error.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

LINGER_S = 2.0  # how long a refused connection's further bytes are read and dropped before it closes


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = 256  # open at once, all clients together
    receive_s: float = 20.0  # for a request's headers, and again for its body

    @property
    def per_client(self) -> int:
        """Connections one client address may hold: a quarter of all, so one cannot take them all."""
        return max(self.max_connections // 4, 1)


def refusal(status: int, reason: str, message: str, code: str) -> bytes:
    """A whole HTTP/1.1 response with OpenAI's JSON error body that closes the connection."""
    body = json.dumps(
        {
            "error": {
                "message": message,
                "type": "invalid_request_error" if status < 500 else "server_error",
                "param": None,
                "code": code,
            }
        }
    ).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n" + ("retry-after: 1\r\n" if status == 503 else "") + "\r\n"
    )
    return head.encode() + body


def guarded_protocol(limits: ConnectionLimits) -> type[H11Protocol]:
    """uvicorn's h11 protocol with `limits` (pass it as uvicorn.Config's `http`)."""
    per_client: Counter[str] = Counter()  # open connections by client address, for this server

    class Guarded(H11Protocol):
        _timer: asyncio.TimerHandle | None = None
        _address: str | None = None
        _received = False  # bytes of a request came since the connection opened or the last response
        _refused = False  # answered 503 or 408: what comes now is dropped until the socket closes

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # uvicorn's own signature
            super().connection_made(transport)
            self._address = self.client[0] if self.client else "-"
            per_client[self._address] += 1
            if len(self.connections) > limits.max_connections or per_client[self._address] > limits.per_client:
                which = "this client's" if per_client[self._address] > limits.per_client else "the server's"
                self._refuse(
                    refusal(
                        503,
                        "Service Unavailable",
                        f"too many open connections ({which} limit); close some or retry shortly",
                        "too_many_connections",
                    )
                )
                return
            self._arm(limits.receive_s)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._address is not None:
                per_client[self._address] -= 1
                if per_client[self._address] <= 0:
                    del per_client[self._address]
                self._address = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            if not self._received and self.conn.their_state is h11.IDLE:
                self._received = True
                self._arm(limits.receive_s)  # the headers' time counts from their first byte
            before = self.conn.their_state
            super().data_received(data)
            after = self.conn.their_state
            if after is h11.SEND_BODY and before is not h11.SEND_BODY:
                # headers in: the body's own time begins; the app reading it answers 408 at the
                # deadline itself, and this closes one whose body nobody reads a second later
                self._arm(limits.receive_s + 1.0)
            elif after is not h11.IDLE and after is not h11.SEND_BODY:
                self._disarm()  # the whole request is in (or the connection is ending)

        def on_response_complete(self) -> None:
            self._received = False
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
                self._arm(limits.receive_s)  # kept alive: the next request (or a pipelined one's body)

        def _arm(self, seconds: float) -> None:
            self._disarm()
            self._timer = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _expired(self) -> None:
            self._timer = None
            state = self.conn.their_state
            if self.transport.is_closing() or state not in (h11.IDLE, h11.SEND_BODY):
                return
            if state is h11.IDLE and not self._received:  # an idle kept-alive connection
                self.transport.close()
                return
            part = "headers" if state is h11.IDLE else "body"
            message = f"the request's {part} did not arrive within {limits.receive_s:g} s; send it at once"
            if state is h11.SEND_BODY and self.cycle is not None and not self.cycle.response_started:
                self.cycle.disconnected = True  # the app reading the body sees the client gone
                self.cycle.message_event.set()
            if state is h11.IDLE or (self.cycle is not None and not self.cycle.response_started):
                self._refuse(refusal(408, "Request Timeout", message, "request_timeout"))
            else:
                self.transport.close()

        def _refuse(self, response: bytes) -> None:
            """Answer `response` and end the stream; close the socket `LINGER_S` later."""
            self._disarm()
            self._refused = True
            self.transport.write(response)
            if not self.transport.can_write_eof():
                self.transport.close()
                return
            self.transport.write_eof()
            self.loop.call_later(LINGER_S, self.transport.close)

    return Guarded
