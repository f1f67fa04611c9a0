"""Stop strings in `specgen serve`: found where they end first, even across chunks, in steps
linear in the reply (counted); and capped in count and length at the door, as OpenAI does."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specgen.serve.stops import StopMatcher
from specgen.serve.wire import ApiError, parse_request
from specgen.serve.wire.sampling import MAX_STOP_CHARS, MAX_STOPS


def reference(stops: tuple[str, ...], text: str) -> tuple[str, bool]:
    """The text before the first stop string to end (the longest of those ending there), by brute force."""
    for end in range(1, len(text) + 1):
        ending = [len(s) for s in stops if s and text[:end].endswith(s)]
        if ending:
            return text[: end - max(ending)], True
    return text, False


def streamed(stops: tuple[str, ...], chunks: list[str]) -> tuple[str, bool]:
    matcher, out = StopMatcher(stops), []
    for chunk in chunks:
        text, stopped = matcher.feed(chunk)
        out.append(text)
        if stopped:
            return "".join(out), True
    return "".join(out) + matcher.flush(), False


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.text("abc", min_size=1, max_size=5), min_size=1, max_size=4),
    st.lists(st.text("abcd", max_size=6), min_size=1, max_size=8),
)
def test_streamed_matching_equals_a_brute_force_search(stops, chunks):
    assert streamed(tuple(stops), chunks) == reference(tuple(stops), "".join(chunks))


class CountedTable(list):
    """A list that counts its reads: the matcher's transition and failure-link tables, wrapped,
    count each step the automaton takes."""

    def __init__(self, items, steps: list[int]):
        super().__init__(items)
        self.steps = steps

    def __getitem__(self, index):
        self.steps[0] += 1
        return super().__getitem__(index)


def matcher_steps(stops: tuple[str, ...], chunks: int) -> int:
    """Table reads while `chunks` pieces of "aaaa" are fed to a matcher of `stops`."""
    matcher, steps = StopMatcher(stops), [0]
    matcher._next, matcher._fail = CountedTable(matcher._next, steps), CountedTable(matcher._fail, steps)
    for _ in range(chunks):
        assert not matcher.feed("aaaa")[1]
    return steps[0]


def test_long_overlapping_stop_strings_cost_steps_linear_in_the_reply():
    """Counted, not timed: every 'a' may begin each stop string, yet doubling the reply at most
    doubles the automaton's steps, and each character costs a few steps (at least one: the
    characters go through the automaton), however long the stops."""
    stops = tuple("a" * (MAX_STOP_CHARS - 1) + c for c in "bcde")
    steps = {n: matcher_steps(stops, n) for n in (1000, 2000)}
    assert steps[2000] <= 2.05 * steps[1000], steps
    assert 4 * 2000 <= steps[2000] <= 6 * 4 * 2000, steps  # one to six steps a character


@pytest.mark.parametrize(
    "stop, fragment",
    [
        (["x"] * (MAX_STOPS + 1), f"at most {MAX_STOPS} strings"),
        (["y" * (MAX_STOP_CHARS + 1)], f"at most {MAX_STOP_CHARS} characters"),
    ],
)
def test_too_many_or_too_long_stop_strings_are_a_400(stop, fragment):
    with pytest.raises(ApiError) as error:
        parse_request({"prompt": "x", "stop": stop}, "completion", ("m",))
    assert error.value.status == 400 and error.value.param == "stop" and fragment in error.value.message


def test_a_server_sent_event_stays_one_line_for_every_line_reader():
    """U+0085, U+2028 and U+2029 pass through JSON as they are, but str.splitlines and httpx's
    iter_lines split there: an event holding one would reach the client in two pieces."""
    import json

    from specgen.serve.replies import sse_event

    text = "a\x85b\u2028c\u2029d\ne"
    event = sse_event({"text": text}).decode()
    assert event.endswith("\n\n") and len(event[:-2].splitlines()) == 1
    assert json.loads(event[len("data: ") :])["text"] == text
