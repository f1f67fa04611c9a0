"""The lines that tell what the drafter did: `run`'s summary on stderr, chat's status lines."""

from __future__ import annotations

from dataclasses import replace

from specgen.decoding.drafters.base import Source
from specgen.decoding.events import SourceCount, Summary
from specgen.terminal.run_view import summary_line

SUMMARY = Summary(
    mode="prompt-lookup",
    draft_tokens=8,
    prompt_tokens=10,
    prefilled_tokens=10,
    tokens=40,
    rounds=12,
    drafted=30,
    accepted=28,
    tokens_per_second=30.0,
    prefill_s=0.1,
    decode_s=1.3,
    draft_s=0.0,
    verify_s=1.2,
    other_s=0.1,
    stop_reason="length",
    by_source={Source.TEXT: SourceCount(drafted=30, kept=28, rounds=12)},
)


def copies(rewrite_rounds: int = 0, pattern_rounds: int = 0) -> Summary:
    """SUMMARY where `rewrite_rounds` of its copies carried a learnt rewrite and `pattern_rounds`
    more followed the record pattern (by_source counts them; the summary reads them from it)."""
    by_source = {Source.TEXT: SourceCount(drafted=30, kept=28, rounds=12, rewritten=rewrite_rounds)}
    if pattern_rounds:
        by_source[Source.PATTERN] = SourceCount(drafted=pattern_rounds, kept=pattern_rounds, rounds=pattern_rounds)
    return replace(SUMMARY, by_source=by_source)


def test_the_summary_line_tells_when_copies_carried_learnt_rewrites():
    assert "rewrites" not in summary_line(SUMMARY)
    assert ", 5 copies carried learnt rewrites;" in summary_line(copies(rewrite_rounds=5))


def test_chat_status_lines_tell_when_copies_carried_learnt_rewrites():
    from specgen.decoding.events import Round
    from specgen.terminal.live import Reply, drafting, final_status

    copied = Round((5, 6, 7), 3, 8, "abc", "d", "", Source.TEXT)
    assert drafting(copied) == "lookup K 3"
    assert drafting(replace(copied, rewrites=1)) == "lookup K 3 with a learnt rewrite"
    assert "rewrites" not in final_status(Reply("x", (1,), SUMMARY, 0.1))
    assert "· 5 copies carried learnt rewrites ·" in final_status(Reply("x", (1,), copies(rewrite_rounds=5), 0.1))


def test_the_summary_line_tells_when_copies_followed_the_record_pattern():
    assert "pattern" not in summary_line(SUMMARY)
    line = summary_line(copies(rewrite_rounds=2, pattern_rounds=7))
    assert ", 2 copies carried learnt rewrites, 7 copies followed the output's record pattern;" in line


def test_chat_status_lines_tell_when_copies_followed_the_record_pattern():
    from specgen.decoding.events import Round
    from specgen.terminal.live import Reply, drafting, final_status

    copied = Round((5, 6, 7), 3, 8, "abc", "d", "", Source.PATTERN)
    assert drafting(copied) == "lookup K 3 by the record pattern"
    assert drafting(replace(copied, source=Source.QUOTED)) == "lookup K 3 from the prompt as JSON"
    assert drafting(replace(copied, source=Source.STRUCTURE)) == "lookup K 3 from an earlier record by its keys"
    assert "pattern" not in final_status(Reply("x", (1,), SUMMARY, 0.1))
    status = final_status(Reply("x", (1,), copies(pattern_rounds=4), 0.1))
    assert "· 4 copies followed the output's record pattern ·" in status
