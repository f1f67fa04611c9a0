"""The one rule by which the auto drafter picks among its copy sources' offers (`auto.pick`),
and the sources its parameters ask for (`auto.copy_sources`): the longest match wins, the
earlier source in the list among equals; the prediction leads, drafted in the place of an offer
it agrees with (at that offer's longer match) and judged beside one it does not."""

from __future__ import annotations

from dataclasses import dataclass

from specgen.decoding.auto import copy_sources, pick
from specgen.decoding.drafters.base import Source, Vocabulary
from specgen.decoding.drafters.lookup import Copier
from specgen.decoding.drafters.pattern import PatternSource
from specgen.decoding.drafters.prediction import Prediction
from specgen.decoding.drafters.source import Offer
from specgen.decoding.drafters.structure import StructureSource
from specgen.decoding.drafters.suffix import Branch

CHARS = Vocabulary(piece=lambda t: chr(t).encode(), tokenize=lambda text: [ord(c) for c in text])


@dataclass
class Named:
    """A stand-in source: only its name and whether it leads matter to `pick`."""

    name: Source
    leads: bool = False


PREDICTION, PATTERN, TEXT, STRUCTURE = (
    Named(Source.PREDICTION, True),
    Named(Source.PATTERN),
    Named(Source.TEXT),
    Named(Source.STRUCTURE),
)


def offer(source: Named, tokens: list[int], match: int) -> tuple[Named, Offer]:
    return source, Offer(tokens, Branch(0, 0, match), source=source.name)


def test_the_longest_match_wins_and_the_earlier_source_among_equals():
    assert pick([offer(PATTERN, [1], 3), offer(TEXT, [2], 5), offer(STRUCTURE, [3], 4)])[0].source == Source.TEXT
    assert pick([offer(PATTERN, [1], 3), offer(TEXT, [2], 5), offer(STRUCTURE, [3], 6)])[0].source == Source.STRUCTURE
    assert pick([offer(PATTERN, [1], 5), offer(TEXT, [2], 5)]) == (offer(PATTERN, [1], 5)[1], None)
    assert pick([offer(TEXT, [2], 5), offer(STRUCTURE, [3], 5)])[0].source == Source.TEXT


def test_offers_without_tokens_count_as_none():
    assert pick([offer(PATTERN, [], 9), offer(TEXT, [2], 1)])[0].tokens == [2]
    assert pick([offer(PREDICTION, [], 9), offer(TEXT, [], 1)]) == (Offer([]), None)


def test_the_prediction_leads_among_equals_and_the_other_offer_is_judged_beside_it():
    chosen, other = pick([offer(PREDICTION, [1, 2, 3, 4, 5], 5), offer(TEXT, [7, 8], 5)])
    assert (chosen.source, other.source) == (Source.PREDICTION, Source.TEXT)
    chosen, other = pick([offer(PREDICTION, [1, 2, 3, 4, 5], 4), offer(TEXT, [7, 8], 5)])
    assert (chosen.source, other.source) == (Source.TEXT, Source.PREDICTION)


def test_an_offer_that_agrees_with_the_prediction_is_drafted_from_the_prediction_at_the_longer_match():
    chosen, other = pick([offer(PREDICTION, [1, 2, 3, 4, 5, 6], 2), offer(PATTERN, [1, 2, 3, 4, 9], 7)])
    assert other is None and chosen.source == Source.PREDICTION
    assert chosen.tokens == [1, 2, 3, 4, 5, 6] and chosen.match == 7
    # agreeing on fewer than the first four tokens is disagreeing
    assert pick([offer(PREDICTION, [1, 2, 3, 5], 2), offer(PATTERN, [1, 2, 3, 4], 7)])[1] is not None


def test_the_default_sources_stand_in_the_order_that_breaks_ties():
    prediction = Prediction([1, 2, 3])
    sources = copy_sources((), CHARS, prediction, quoted=True, example='{"a": 1}')
    assert [type(s) for s in sources] == [Prediction, PatternSource, Copier, StructureSource]
    assert [s.name for s in sources] == [Source.PREDICTION, Source.PATTERN, Source.TEXT, Source.STRUCTURE]
    assert [type(s) for s in copy_sources()] == [Copier]
    assert [s.leads for s in sources] == [True, False, False, False]
