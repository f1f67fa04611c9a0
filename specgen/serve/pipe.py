"""What of the generated text goes to the client, and when.

The loop's rounds carry text (and, where asked, each token's log-probability); the client gets
the text cut at the first stop string, with tool calls held back until the reply ends
(`serve.tools`), and each token's log-probability once its text has gone out. A token whose text
a stop string cuts through still counts (its text began before the cut); tokens after the cut
were never sent and do not.
"""

from __future__ import annotations

from collections.abc import Callable

from specgen.decoding.sampling import TokenLogprob
from specgen.decoding.tokens import Utf8Stream
from specgen.llama.templates import ToolFormat
from specgen.serve.tools import CallStream, ToolCall
from specgen.serve.wire import Logprob


class ReplyPipe:
    """One reply's way out: `feed` each round's text and log-probabilities, `finish` at the end.

    `stops` is the request's StopMatcher; `fmt` the model's tool-call format where tools were
    offered; `piece` a token's bytes; `base` where the reply's text begins for text offsets."""

    def __init__(self, stops, fmt: ToolFormat | None, piece: Callable[[int], bytes], base: int = 0):
        self.stops = stops
        self.calls = CallStream(fmt) if fmt is not None else None
        self.piece, self.base = piece, base
        self.stopped = False  # a stop string ended the reply
        self._stream = Utf8Stream()
        self._written = 0  # characters of generated text so far
        self._passed = 0  # characters of it past the stop strings
        self._pending: list[tuple[Logprob, int]] = []  # log-probabilities not sent yet, with where their text ends

    def feed(self, text: str, logprobs: tuple[TokenLogprob, ...] = ()) -> tuple[str, tuple[Logprob, ...]]:
        """The content to send now, and the log-probabilities of the tokens whose text it completes."""
        for entry in logprobs:
            self._pending.append(self._describe(entry))
        passed, self.stopped = self.stops.feed(text)
        self._passed += len(passed)
        ready = self._release(lambda start, end: end <= self._passed)
        return (self.calls.feed(passed) if self.calls is not None else passed), ready

    def finish(self) -> tuple[str, tuple[Logprob, ...], list[ToolCall]]:
        """The text still held back, the log-probabilities of the tokens that began within what was
        sent, and the tool calls the reply made."""
        tail = self.stops.flush()
        self._passed += len(tail)
        ready = self._release(lambda start, end: start < self._passed or end <= self._passed)
        self._pending = []
        if self.calls is None:
            return tail, ready, []
        content = self.calls.feed(tail)
        rest, calls = self.calls.finish()
        return content + rest, ready, calls

    def _describe(self, entry: TokenLogprob) -> tuple[Logprob, int]:
        """The entry with its token's text and bytes, and where in the reply that text ends."""
        start = self._written
        self._written += len(self._stream.feed(self.piece(entry.token)))
        top = tuple(self._logprob(token, value, start) for token, value in entry.top)
        return self._logprob(entry.token, entry.logprob, start, top), self._written

    def _logprob(self, token: int, value: float, start: int, top: tuple[Logprob, ...] = ()) -> Logprob:
        data = self.piece(token)
        return Logprob(data.decode("utf-8", errors="replace"), data, value, top, self.base + start)

    def _release(self, ready: Callable[[int, int], bool]) -> tuple[Logprob, ...]:
        count = 0
        while count < len(self._pending) and ready(self._pending[count][0].offset - self.base, self._pending[count][1]):
            count += 1
        released, self._pending = self._pending[:count], self._pending[count:]
        return tuple(entry for entry, _ in released)
