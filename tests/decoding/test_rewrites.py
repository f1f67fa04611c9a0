"""Edits learnt from the output: the copier learns a rename at its first occurrence and carries it
in later copies, keeps copying from the source through it, stops applying a rule the output does
not follow, and never trusts a change that the output already left undone elsewhere; given the
target's vocabulary, a renamed word (whole words only) is carried into contexts that tokenize it
differently, by the copier and by a prediction."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from specgen.decoding.drafters.base import Vocabulary
from specgen.decoding.drafters.lookup import Copier
from specgen.decoding.drafters.prediction import Prediction
from specgen.decoding.drafters.rewrites import RULES_MAX, Rewrites, Rewritten

OLD, NEW = 500, (600, 601)  # a one-token name the output writes as two tokens


def source_lines(count: int) -> list[list[int]]:
    """Lines of distinct tokens, each with the name OLD after its second token."""
    return [[100 + 10 * i, 101 + 10 * i, OLD, *range(102 + 10 * i, 108 + 10 * i)] for i in range(count)]


def offers_while_writing(source: list[int], output: list[int], words: Vocabulary | None = None) -> list[list[int]]:
    """The copier's offer (8 tokens) before each output token, written one token a round
    (`words`: the vocabulary that makes word rules)."""
    copier = Copier(words=words)
    history = [*source, 1]
    copier.reset(history)
    offers = []
    for token in output:
        offers.append(copier.offer(history[:-1], history[-1], 8).tokens)
        history.append(token)
    return offers


def renamed(lines: list[list[int]], which: set[int]) -> list[int]:
    return [t for i, line in enumerate(lines) for x in line for t in (NEW if x == OLD and i in which else (x,))]


def test_a_rename_learnt_at_its_first_occurrence_is_carried_by_the_next_copy():
    lines = source_lines(4)
    output = renamed(lines, {0, 1, 2, 3})
    offers = offers_while_writing([t for line in lines for t in line], output)
    before_second = len(lines[0]) + 1 + 2  # line 0 (one token longer), then two tokens of line 1
    assert offers[before_second] == [*NEW, *lines[1][3:9]]
    # through the rewritten name the copy goes on from its place in the source
    assert offers[before_second + 2] == lines[1][3:9] + lines[2][:2]


def offers_at(source: list[int], output: list[int], positions: set[int]) -> dict[int, list[int]]:
    """The copier's offers (16 tokens) at the given output positions only, as auto asks it: once a
    round, and a round may keep a long copy whole."""
    copier = Copier()
    history = [*source, 1]
    copier.reset(history)
    offers = {}
    for at, token in enumerate(output):
        if at in positions:
            offers[at] = copier.offer(history[:-1], history[-1], 16).tokens
        history.append(token)
    return offers


def test_a_rename_is_learnt_where_no_offer_was_made_at_the_place_the_output_rejoined_its_source():
    lines = source_lines(4)
    output = renamed(lines, {0, 1, 2, 3})
    # rounds as auto makes them: a copy from position 1 breaks at the first rename; the output
    # rejoins its source one token after it, where the copy made at 5 (from a one-token match)
    # runs on to the second rename; a round at 13 and at 15, then the third rename's place
    offers = offers_at([t for line in lines for t in line], output, {1, 5, 13, 15, 22})
    assert offers[15][7:10] == [*NEW, 122]
    assert offers[22][:3] == [*NEW, 122]


def test_a_rule_the_output_does_not_follow_stops_being_applied():
    lines = source_lines(4)
    output = renamed(lines, {0})  # only the first occurrence is renamed
    offers = offers_while_writing([t for line in lines for t in line], output)
    second, third = len(lines[0]) + 1 + 2, 2 * len(lines[0]) + 1 + 2
    assert offers[second][:2] == list(NEW)  # tried once
    assert offers[third][0] == OLD  # then dropped


def test_a_change_the_output_left_undone_before_is_never_trusted():
    lines = source_lines(4)
    output = renamed(lines, {1, 2, 3})  # the first line keeps OLD, the later ones rename it
    offers = offers_while_writing([t for line in lines for t in line], output)
    third = 2 * len(lines[0]) + 1 + 2
    assert offers[third][0] == OLD


def test_a_rewrite_cut_off_at_the_end_of_a_copy_is_judged_by_its_whole_new_span():
    """Copies of 4 tokens reach the renamed token as their last one, so the copy holds only the
    first of its two new tokens. The output writes both: that is a hit, not a miss, and the
    next offer goes on with the source after the renamed token."""
    lines = [[100 + 10 * i, 101 + 10 * i, 109 + 10 * i, OLD, *range(102 + 10 * i, 108 + 10 * i)] for i in range(3)]
    output = renamed(lines, {0, 1, 2})
    copier = Copier()
    history = [*(t for line in lines for t in line), 1]
    copier.reset(history)
    written, offers = 0, []
    while written < len(lines[0]) + 1 + 3 + 2:  # line 0, the 1, then line 1 up to both new tokens
        offer = copier.offer(history[:-1], history[-1], 4).tokens
        kept = 0
        while kept < len(offer) and offer[kept] == output[written + kept]:
            kept += 1
        offers.append(offer)
        history += output[written : written + kept + 1]  # the target keeps a prefix and writes one token
        written += kept + 1
    assert offers[-1] == [110, 111, 119, NEW[0]]  # the fourth token cut the rewrite
    assert history[-2:] == list(NEW)  # the output wrote both new tokens
    following = copier.offer(history[:-1], history[-1], 4).tokens  # judges the cut copy
    assert copier.rewrites.rules[(OLD,)].misses == 0
    assert following == lines[1][4:8]


def test_a_copy_that_cuts_a_rewrite_keeps_its_whole_new_span_and_offers_k():
    rewrites = Rewrites()
    rewrites.learn((5,), (50, 51, 52), [])
    copy = rewrites.apply([1, 5, 2], 10, 2)
    assert copy.tokens == [1, 50, 51, 52] and copy.replaced == ((1, 4, (5,)),)
    assert copy.source_after(4) == 12


def test_rules_apply_longest_first_and_not_where_the_source_already_reads_the_new_way():
    rewrites = Rewrites()
    rewrites.learn((5,), (50,), [])
    rewrites.learn((5, 6), (56,), [])
    rewrites.learn((7,), (7, 70), [])  # the new span begins with the old one
    copy = rewrites.apply([1, 5, 6, 5, 2, 7, 70, 3, 7], 10, 20)
    assert copy.tokens == [1, 56, 50, 2, 7, 70, 3, 7, 70]
    assert copy.replaced == ((1, 2, (5, 6)), (2, 3, (5,)), (7, 9, (7,)))


def test_the_source_position_after_a_rewritten_copy():
    copy = Rewritten([1, 56, 50, 2, 7, 70], 10, ((1, 2, (5, 6)), (2, 3, (5,)), (4, 6, (7,))))
    assert [copy.source_after(n) for n in range(7)] == [10, 11, 13, 14, 15, None, 16]


def test_a_change_is_learnt_as_the_parts_that_differ():
    rewrites = Rewrites()
    rewrites.learn((1, 2, 3, 4, 5), (9, 3, 4, 8), [])  # '",\n  "key":' -> '"\nkey:': the key stays out
    rewrites.learn((20,), (20, 21), [])  # an insertion takes in the token before it
    rewrites.learn((30, 31), (32, 30, 31), [])  # or, at the start, the token after it
    assert {old: rule.new for old, rule in rewrites.rules.items()} == {
        (1, 2): (9,),
        (5,): (8,),
        (20,): (20, 21),
        (30,): (32, 30),
    }


def test_the_rules_are_bounded_and_the_oldest_go_first():
    rewrites = Rewrites()
    for token in range(RULES_MAX + 10):
        rewrites.learn((token,), (token + 10_000,), [])
    assert len(rewrites.rules) == RULES_MAX
    assert (0,) not in rewrites.rules and (RULES_MAX + 9,) in rewrites.rules
    assert rewrites.apply([0, RULES_MAX + 9], 0, 2).tokens == [0, RULES_MAX + 10_009]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 5), min_size=2, max_size=60),
    st.integers(0, 5),
    st.lists(st.integers(6, 7), min_size=1, max_size=3),
    st.lists(st.integers(0, 7), max_size=20),
    st.lists(st.integers(1, 6), min_size=1, max_size=40),
    st.integers(1, 12),
)
def test_copying_with_rewrites_never_fails_on_any_text(source, old, new, tail, steps, k):
    """An output that reprints its source with one token renamed (6 and 7 are new tokens), then
    goes on its own way, written a few tokens a round: no offer raises, every offer holds at most
    k tokens, and its rewrites point inside it."""
    output = [t for x in source for t in (new if x == old else [x])] + tail
    copier = Copier()
    history = [*source, 1]
    copier.reset(history)
    written, step = 0, 0
    while written < len(output):
        offer = copier.offer(history[:-1], history[-1], k)
        assert len(offer.tokens) <= k and all(0 <= start < len(offer.tokens) for start in offer.rewrites)
        take = steps[step % len(steps)]
        history += output[written : written + take]
        written, step = written + take, step + 1


# a vocabulary in which a name is tokenized with what stands before it, as in real BPE vocabularies
PIECES = [b" t", b"mo", b"(t", b".t", b" timeout", b"(timeout", b".timeout", b")", b"\n", b" x", b" =", b":", b"mox"]
PIECES += [b" " + bytes([c]) for c in b"abcdefgh"]
TOY = Vocabulary(
    lambda token: PIECES[token - 1000] if token >= 1000 else b"",  # the prompt's last token: none of these
    lambda text: _longest_first(text.encode()),
)


def _longest_first(text: bytes) -> list[int]:
    """Greedy longest-piece tokenization over PIECES (ids from 1000)."""
    out, i = [], 0
    while i < len(text):
        piece = max((p for p in PIECES if text.startswith(p, i)), key=len)
        out.append(1000 + PIECES.index(piece))
        i += len(piece)
    return out


def spelt(text: str) -> list[int]:
    return _longest_first(text.encode())


def test_a_renamed_word_is_carried_into_a_context_that_tokenizes_it_differently():
    source = spelt(" a b = tmo:\n c d =(tmo)\n e f =.tmo\n g h")
    output = spelt(" a b = timeout:\n c d =(timeout)\n e f =.timeout\n g h")
    # the name stands after a space, a bracket and a dot: three spellings in tokens
    assert all(spelt(name)[0] in source for name in (" tmo", "(tmo", ".tmo"))
    with_words = offers_while_writing(source, output, TOY)
    without = offers_while_writing(source, output, None)
    second = output.index(spelt("(timeout")[0])  # the bracket's spelling, never written before
    third = output.index(spelt(".timeout")[0])
    assert with_words[second][:2] == spelt("(timeout)") and with_words[third][:2] == spelt(".timeout\n")
    assert without[second][0] != spelt("(timeout")[0]  # token rules alone know only the space's spelling


def renaming(output: str) -> Rewrites:
    """Rules learnt where the output wrote ` timeout` in the place of ` tmo`."""
    rewrites = Rewrites(TOY)
    rewrites.learn(tuple(spelt(" tmo")), tuple(spelt(" timeout")), spelt(output))
    return rewrites


def test_a_word_rule_renames_whole_words_only():
    rewrites = renaming(" x = timeout")
    assert rewrites.apply(spelt("(tmo)\n"), 0, 3).tokens == spelt("(timeout)\n")
    assert rewrites.apply(spelt(" x =.tmo:"), 0, 4).tokens == spelt(" x =.timeout:")
    assert rewrites.apply(spelt("(tmox)"), 0, 3).tokens == spelt("(tmox)")  # another name


def test_a_word_rule_that_the_output_does_not_follow_stops_making_rules():
    rewrites = renaming(" x = timeout")
    made = rewrites.apply(spelt("(tmo)"), 0, 2)
    assert made.tokens[:1] == spelt("(timeout")
    rewrites.score(made.replaced[0][2], followed=False)  # the output kept `(tmo`
    assert rewrites.apply(spelt("(tmo)"), 0, 2).tokens == spelt("(tmo)")[:2]  # that rule missed as often as it hit
    assert rewrites.apply(spelt(".tmo:"), 0, 2).tokens == spelt(".tmo:")[:2]  # and the word rule makes no more


def test_a_word_the_output_had_left_unchanged_makes_no_rules():
    rewrites = renaming(" x =(tmo)\n x = timeout")  # `tmo` written whole before, then renamed
    assert rewrites.apply(spelt(".tmo:"), 0, 2).tokens == spelt(".tmo:")[:2]


def test_a_prediction_carries_a_renamed_word_into_a_context_that_tokenizes_it_differently():
    predicted = spelt(" a b = tmo:\n c d =(tmo)\n e f =.tmo\n g h")
    output = spelt(" a b = timeout:\n c d =(timeout)\n e f =.timeout\n g h")
    offers = {}
    for words in (TOY, None):
        prediction, history = Prediction(predicted, words), [1, 2]
        prediction.prepare(history[:-1])
        offers[words] = []
        for token in output:
            offers[words].append(prediction.offer(history[:-1], history[-1], 8).tokens)
            history.append(token)
    second = output.index(spelt("(timeout")[0])
    assert offers[TOY][second][:2] == spelt("(timeout)")
    assert offers[None][second][0] != spelt("(timeout")[0]
