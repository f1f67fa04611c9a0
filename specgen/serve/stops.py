"""Where a streamed reply's text ends before the loop ends it: at the first stop string (which
may span tokens), or for a fill-in-the-middle request where an editor's limits say."""

from __future__ import annotations

import time

from specgen.serve.infill import EditorLimits
from specgen.serve.wire import GenRequest


class StopMatcher:
    """Cuts streamed text at the first stop string, holding back text that may begin one.

    An Aho-Corasick automaton over the stop strings reads each character once, so the cost is
    linear in the reply, however many and however long the stop strings (a hostile request
    cannot stall the one generating thread), and the state's depth is exactly the text to hold
    back: the longest end of the text that begins some stop string.
    """

    def __init__(self, stops: tuple[str, ...]):
        self.stops = stops
        self._next: list[dict[str, int]] = [{}]
        self._depth, self._fail, self._ends = [0], [0], [0]  # per state; _ends: longest stop ending here
        for stop in stops:
            self._add(stop)
        self._link()
        self._state = 0
        self.pending = ""
        self.found = ""  # the stop string that ended the text

    def _add(self, stop: str) -> None:
        state = 0
        for char in stop:
            if char not in self._next[state]:
                self._next.append({})
                self._depth.append(self._depth[state] + 1)
                self._fail.append(0)
                self._ends.append(0)
                self._next[state][char] = len(self._next) - 1
            state = self._next[state][char]
        self._ends[state] = len(stop)

    def _link(self) -> None:
        """Failure links, breadth first: each state's longest proper suffix that is also a state."""
        queue = list(self._next[0].values())
        for state in queue:
            for char, child in self._next[state].items():
                fail = self._fail[state]
                while fail and char not in self._next[fail]:
                    fail = self._fail[fail]
                self._fail[child] = self._next[fail].get(char, 0) if self._next[fail].get(char) != child else 0
                self._ends[child] = max(self._ends[child], self._ends[self._fail[child]])
                queue.append(child)

    def feed(self, text: str) -> tuple[str, bool]:
        """The text safe to send now, and whether a stop string was found (text ends before it)."""
        held, state = self.pending, self._state
        for position, char in enumerate(text):
            while state and char not in self._next[state]:
                state = self._fail[state]
            state = self._next[state].get(char, 0)
            if self._ends[state]:
                cut = len(held) + position + 1 - self._ends[state]
                self.pending, self._state = "", 0
                self.found = (held + text)[cut : cut + self._ends[state]]
                return (held + text)[:cut], True
        self._state = state
        whole = held + text
        keep = self._depth[state]
        self.pending = whole[len(whole) - keep :] if keep else ""
        return whole[: len(whole) - keep], False

    def flush(self) -> str:
        out, self.pending, self._state = self.pending, "", 0
        return out


class ReplyCut:
    """Where the text sent ends before the loop ends the reply: at the first stop string, or for
    a fill-in-the-middle request where an editor's limits say (serve.infill.EditorLimits). `ended`
    says why ("stop string", "indent", "time limit"), None while the text goes on. It is the
    `stops` of a serve.pipe.ReplyPipe."""

    def __init__(self, request: GenRequest, start: float):
        self.stops = StopMatcher(request.stop)
        infill = request.infill
        self.limits = EditorLimits(infill.n_indent, infill.t_max_predict_ms, start) if infill else None
        self.ended: str | None = None

    def feed(self, text: str) -> tuple[str, bool]:
        """The part of a round's text to send now, and whether the reply has ended."""
        text, stopped = self.stops.feed(text)
        text = self._limited(text, "stop string" if stopped else None, time.perf_counter())
        return text, self.ended is not None

    def flush(self) -> str:
        """What was held back, once the loop has ended the reply."""
        return "" if self.ended else self._limited(self.stops.flush(), None, None)

    def _limited(self, text: str, reason: str | None, now: float | None) -> str:
        if self.limits is not None:
            text, limited = self.limits.feed(text, now)
            reason = limited or reason
        self.ended = reason
        return text
