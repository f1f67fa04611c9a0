"""A prediction as a copy source: the cursor follows the output through the prediction, finds its
place again after an inserted, replaced or deleted span (not moved by a stray match inside an
inserted line), learns a rename and carries it to the next occurrence; fixed K drafts from it
where it knows its place; OpenAI's accepted count is a longest common subsequence, checked
against a plain dynamic program."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from specgen.decoding.drafters.base import NO_DRAFT, Drafter, Source
from specgen.decoding.drafters.prediction import Prediction, PredictionDrafter, accepted_tokens, report
from specgen.decoding.events import SourceCount
from specgen.decoding.sampling import SamplingParams

PROMPT = [1, 2, 3]  # the prompt; the output starts after it


def lines(count: int, start: int = 100) -> list[list[int]]:
    """Lines of distinct tokens, each ending in the newline token 10."""
    return [[start + 10 * i + j for j in range(6)] + [10] for i in range(count)]


def flat(parts: list[list[int]]) -> list[int]:
    return [t for part in parts for t in part]


def offers_while_writing(prediction: Prediction, output: list[int], k: int = 8) -> list[list[int]]:
    """The prediction's offer before each output token (and after the last), one token a round."""
    prediction.prepare(PROMPT[:-1])
    history, offers = list(PROMPT), []
    for token in [*output, None]:
        offers.append(prediction.offer(history[:-1], history[-1], k).tokens)
        if token is not None:
            history.append(token)
    return offers


def test_from_the_first_round_it_offers_the_prediction_and_follows_the_output_through_it():
    text = flat(lines(4))
    prediction = Prediction(text)
    offers = offers_while_writing(prediction, text)
    assert offers[0] == text[:8] and offers[10] == text[10:18] and offers[-1] == []
    assert prediction.breaks == []


def test_after_an_inserted_line_it_waits_where_the_output_left_it():
    parts = lines(4)
    inserted = [900, 901, 902, 10]
    output = flat([parts[0], parts[1], inserted, parts[2], parts[3]])
    prediction = Prediction(flat(parts))
    offers = offers_while_writing(prediction, output)
    back = len(parts[0]) + len(parts[1]) + len(inserted)  # the output returns to line 2 here
    assert offers[back + 1] == flat(parts)[15:23]  # one token of line 2 written: the rest of it follows
    assert prediction.breaks == [len(parts[0]) + len(parts[1])]


def test_a_stray_match_inside_an_inserted_line_does_not_move_its_place():
    parts = lines(8)
    stray = [900, parts[6][2], parts[6][3], 901, 10]  # two tokens of a later line, then the insertion goes on
    output = flat([parts[0], parts[1], stray, *parts[2:]])
    offers = offers_while_writing(Prediction(flat(parts)), output)
    back = len(parts[0]) + len(parts[1]) + len(stray)
    assert offers[back + 1] == flat(parts)[15:23]


def test_where_the_output_returns_to_a_line_the_prediction_holds_twice_it_takes_the_nearest():
    parts = lines(4)
    twice = [parts[0], parts[1], parts[2], parts[1], parts[3]]  # line 1 again after line 2
    inserted = [900, 901]
    output = flat([parts[0], inserted, parts[1], parts[2], parts[1], parts[3]])
    offers = offers_while_writing(Prediction(flat(twice)), output)
    back = len(parts[0]) + len(inserted)
    assert offers[back + 2] == flat(twice)[9:17]  # the first line 1 goes on into line 2


def test_after_a_replaced_span_it_resumes_a_little_later():
    parts = lines(4)
    changed = [parts[1][0], 777, 778, *parts[1][3:]]  # tokens 1 and 2 of line 1 replaced
    output = flat([parts[0], changed, parts[2], parts[3]])
    offers = offers_while_writing(Prediction(flat(parts)), output)
    assert offers[len(parts[0]) + 4] == flat(parts)[11:19]  # after the first token past the change


def test_after_a_deleted_span_it_jumps_forward():
    parts = lines(6)
    output = flat([parts[0], parts[3], parts[4], parts[5]])  # lines 1 and 2 deleted
    offers = offers_while_writing(Prediction(flat(parts)), output)
    assert offers[len(parts[0]) + 2] == flat(parts)[23:31]  # two tokens of line 3 written


def test_a_rename_learnt_at_its_first_occurrence_is_carried_by_the_next_offer():
    old, new = 500, (600, 601)
    parts = [[100 + 10 * i, 101 + 10 * i, old, 102 + 10 * i, 103 + 10 * i, 104 + 10 * i, 10] for i in range(4)]
    output = [t for part in parts for x in part for t in (new if x == old else (x,))]
    offers = offers_while_writing(Prediction(flat(parts)), output)
    second = len(parts[0]) + 1 + 2  # line 0 (one token longer), then two tokens of line 1
    assert offers[second][:5] == [*new, *parts[1][3:6]]


def test_beyond_the_window_a_long_match_finds_the_place():
    parts = lines(120)  # 840 tokens, more than the window after the first line
    output = flat([parts[0], *parts[100:103]])
    offers = offers_while_writing(Prediction(flat(parts)), output)
    at = len(parts[0]) + 10  # ten tokens of line 100 written
    assert offers[at] == flat(parts)[7 * 100 + 10 : 7 * 100 + 18]


def test_a_rewound_history_starts_the_prediction_over():
    text = flat(lines(3))
    prediction = Prediction(text)
    prediction.prepare(PROMPT[:-1])
    prediction.offer([*PROMPT, *text[:9]], text[9], 4)
    assert prediction.offer(PROMPT[:-1], PROMPT[-1], 4).tokens == text[:4]


class Scripted(Drafter):
    """A fallback that drafts a fixed token and counts its calls."""

    name = "scripted"

    def __init__(self):
        self.calls = 0

    def propose(self, history, last, k, params, draws, keep=None):
        self.calls += 1
        return NO_DRAFT


def test_a_fixed_k_drafts_k_tokens_of_the_prediction_where_it_knows_its_place_else_the_fallback():
    text = flat(lines(3))
    fallback = Scripted()
    drafter = PredictionDrafter(Prediction(text), fallback)
    drafter.prepare(PROMPT[:-1])
    draft = drafter.propose(PROMPT[:-1], PROMPT[-1], 4, SamplingParams(), None)
    assert draft.tokens == text[:4] and draft.source == Source.PREDICTION and fallback.calls == 0
    lost = drafter.propose([*PROMPT, 950], 951, 4, SamplingParams(), None)  # the output left it: no place
    assert lost is NO_DRAFT and fallback.calls == 1
    assert drafter.name == "scripted + prediction"


def lcs_by_table(a: list[int], b: list[int]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a)):
        for j in range(len(b)):
            table[i + 1][j + 1] = table[i][j] + 1 if a[i] == b[j] else max(table[i][j + 1], table[i + 1][j])
    return table[-1][-1]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=40), st.lists(st.integers(0, 6), max_size=40))
def test_accepted_tokens_is_the_longest_common_subsequence(prediction, completion):
    assert accepted_tokens(prediction, completion) == lcs_by_table(prediction, completion)


def test_the_report_counts_the_prediction_with_openais_meanings():
    parts = lines(3)
    prediction = Prediction(flat(parts))
    output = flat([parts[0], [900, 901], parts[2]])  # line 1 replaced by two other tokens
    offers_while_writing(prediction, output)
    fate = report(prediction, output, SourceCount(drafted=12, kept=9, rounds=3))
    assert (fate.prediction_tokens, fate.accepted_prediction_tokens, fate.rejected_prediction_tokens) == (21, 14, 7)
    assert (fate.prediction_drafted, fate.prediction_kept) == (12, 9)
    assert fate.prediction_breaks == (7,)  # where the output left it: line 1's first token


def test_only_the_tokens_of_a_run_beyond_its_first_eight_count_as_reprinted():
    """`followed` counts every token written at the cursor; `reprinted` only those past the first
    REPRINTED_AFTER (8) of their run, which an answer quoting a few names never reaches."""
    text = flat(lines(4))  # 28 tokens
    whole = Prediction(text)
    offers_while_writing(whole, text)
    assert (whole.followed, whole.reprinted) == (28, 28 - 8)
    left = Prediction(text)
    offers_while_writing(left, [*text[:5], 900, 901, 902])
    assert (left.followed, left.reprinted) == (5, 0)
    # a run of 10, a departure, then the rest of the text from where it left: its first token is
    # written while the place is lost (not followed), and re-finds it (its run counts it)
    twice = Prediction(text)
    offers_while_writing(twice, [*text[:10], 900, *text[10:]])
    assert (twice.followed, twice.reprinted) == (10 + 17, (10 - 8) + (18 - 8))
