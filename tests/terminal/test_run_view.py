"""The one-line summary `run` prints on stderr."""

from __future__ import annotations

from dataclasses import replace

from specgen.decoding.events import Summary
from specgen.terminal.run_view import summary_line

SUMMARY = Summary("prompt-lookup", 8, 10, 10, 40, 12, 30, 28, 0.93, 3.3, 30.0, 0.1, 1.3, 0.0, 1.2, 0.1,
                  "length", lookup_rounds=12)


def test_the_summary_line_tells_when_copies_carried_learnt_rewrites():
    assert "rewrites" not in summary_line(SUMMARY)
    assert ", 5 copies carried learnt rewrites;" in summary_line(replace(SUMMARY, rewrite_rounds=5))
