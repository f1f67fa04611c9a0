"""The lines that tell what the drafter did: `run`'s summary on stderr, chat's status lines."""

from __future__ import annotations

from dataclasses import replace

from specgen.decoding.events import Summary
from specgen.terminal.run_view import summary_line

SUMMARY = Summary("prompt-lookup", 8, 10, 10, 40, 12, 30, 28, 0.93, 3.3, 30.0, 0.1, 1.3, 0.0, 1.2, 0.1,
                  "length", lookup_rounds=12)


def test_the_summary_line_tells_when_copies_carried_learnt_rewrites():
    assert "rewrites" not in summary_line(SUMMARY)
    assert ", 5 copies carried learnt rewrites;" in summary_line(replace(SUMMARY, rewrite_rounds=5))


def test_chat_status_lines_tell_when_copies_carried_learnt_rewrites():
    from specgen.decoding.drafters.base import LOOKUP
    from specgen.decoding.events import Round
    from specgen.terminal.live import Reply, drafting, final_status

    copied = Round((5, 6, 7), 3, 8, "abc", "d", "", LOOKUP)
    assert drafting(copied) == "lookup K 3"
    assert drafting(replace(copied, rewrites=1)) == "lookup K 3 with a learnt rewrite"
    assert "rewrites" not in final_status(Reply("x", (1,), SUMMARY, 0.1))
    assert "· 5 copies carried learnt rewrites ·" in final_status(Reply("x", (1,), replace(SUMMARY, rewrite_rounds=5), 0.1))


def test_the_summary_line_tells_when_copies_followed_the_record_pattern():
    assert "pattern" not in summary_line(SUMMARY)
    line = summary_line(replace(SUMMARY, rewrite_rounds=2, pattern_rounds=7))
    assert ", 2 copies carried learnt rewrites, 7 copies followed the output's record pattern;" in line


def test_chat_status_lines_tell_when_copies_followed_the_record_pattern():
    from specgen.decoding.drafters.base import COPIED_PATTERN, COPIED_QUOTED, COPIED_STRUCTURE, LOOKUP
    from specgen.decoding.events import Round
    from specgen.terminal.live import Reply, drafting, final_status

    copied = Round((5, 6, 7), 3, 8, "abc", "d", "", LOOKUP, copied_from=COPIED_PATTERN)
    assert drafting(copied) == "lookup K 3 by the record pattern"
    assert drafting(replace(copied, copied_from=COPIED_QUOTED)) == "lookup K 3 from the prompt as JSON"
    assert drafting(replace(copied, copied_from=COPIED_STRUCTURE)) == "lookup K 3 from an earlier record by its keys"
    assert "pattern" not in final_status(Reply("x", (1,), SUMMARY, 0.1))
    status = final_status(Reply("x", (1,), replace(SUMMARY, pattern_rounds=4), 0.1))
    assert "· 4 copies followed the output's record pattern ·" in status
