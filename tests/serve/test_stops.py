"""Stop strings in `specgen serve`: found where they end first, even across chunks, in time
linear in the reply; and capped in count and length at the door, as OpenAI does."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specgen.serve.wire import MAX_STOP_CHARS, MAX_STOPS, ApiError, parse_request
from specgen.serve.scheduler import StopMatcher


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
@given(st.lists(st.text("abc", min_size=1, max_size=5), min_size=1, max_size=4),
       st.lists(st.text("abcd", max_size=6), min_size=1, max_size=8))
def test_streamed_matching_equals_a_brute_force_search(stops, chunks):
    assert streamed(tuple(stops), chunks) == reference(tuple(stops), "".join(chunks))


def test_long_overlapping_stop_strings_cost_time_linear_in_the_reply():
    stops = tuple("a" * (MAX_STOP_CHARS - 1) + c for c in "bcde")  # every 'a' may begin each of them
    matcher = StopMatcher(stops)
    started = time.perf_counter()
    for _ in range(2000):
        assert not matcher.feed("aaaa")[1]
    assert time.perf_counter() - started < 1.0  # 8,000 characters; the old matcher took minutes


@pytest.mark.parametrize("stop, fragment", [
    (["x"] * (MAX_STOPS + 1), f"at most {MAX_STOPS} strings"),
    (["y" * (MAX_STOP_CHARS + 1)], f"at most {MAX_STOP_CHARS} characters"),
])
def test_too_many_or_too_long_stop_strings_are_a_400(stop, fragment):
    with pytest.raises(ApiError) as error:
        parse_request({"prompt": "x", "stop": stop}, "completion", ("m",))
    assert error.value.status == 400 and error.value.param == "stop" and fragment in error.value.message


def test_a_server_sent_event_stays_one_line_for_every_line_reader():
    """U+0085, U+2028 and U+2029 pass through JSON as they are, but str.splitlines and httpx's
    iter_lines split there: an event holding one would reach the client in two pieces."""
    import json

    from specgen.serve.http import sse_event

    text = "a\x85b\u2028c\u2029d\ne"
    event = sse_event({"text": text}).decode()
    assert event.endswith("\n\n") and len(event[:-2].splitlines()) == 1
    assert json.loads(event[len("data: "):])["text"] == text
