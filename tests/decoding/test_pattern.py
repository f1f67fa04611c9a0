"""The record pattern (`RecordPattern`): from how the output rewrote the records of its source so far,
the text of the next ones; and its one rule, a value's place in its line (`field_place`), with
and without. Expected texts are written out by hand (or by `json.dumps`), never by the pattern
itself."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specgen.decoding.drafters.pattern import PATTERNS, PLACE_MAX, RecordPattern, field_place

ROWS = [
    ("A-100", "Desk lamp", "24.90", "120", "true"),
    ("A-101", "Floor lamp", "59.00", "35", "true"),
    ("B-200", "Office chair", "149.50", "12", "false"),
    ("B-201", "Standing desk", "329.00", "8", "true"),
]
CSV = "Convert this CSV to JSON.\n\nsku,name,price,stock,active\n" + "\n".join(",".join(row) for row in ROWS)


def record(row: tuple[str, ...]) -> str:
    """A row as the JSON a model writes for it (json.dumps, independent of the pattern)."""
    sku, name, price, stock, active = row
    body = json.dumps({"sku": sku, "name": name, "price": 0, "stock": int(stock), "active": active == "true"}, indent=4)
    return "  " + body.replace('"price": 0', f'"price": {price}').replace("\n", "\n  ")


JSON = "```json\n[\n" + ",\n".join(record(row) for row in ROWS) + "\n]\n```"


def pattern(output: str, source: str = CSV, place=field_place) -> RecordPattern:
    made = RecordPattern(source, place)
    made.extend(output)
    return made


@pytest.mark.parametrize("place", [field_place, None], ids=["with field place", "core alone"])
def test_after_two_records_the_next_ones_are_predicted_whole(place):
    upto = JSON.index('"sku": "B-200"')  # two records written, and the third opened
    prediction = pattern(JSON[:upto], place=place).predict(10_000)
    assert JSON[upto:].startswith(prediction)
    assert prediction.startswith('"sku": "B-200",\n      "name": "Office chair",')
    last = record(ROWS[3])
    assert prediction.endswith(last[: last.index("true")])  # the fourth record, up to the source's end


def test_the_prediction_goes_on_from_inside_a_value():
    upto = JSON.index("Office chair") + len("Off")
    assert pattern(JSON[:upto]).predict(40) == JSON[upto : upto + 40]


def test_a_value_with_punctuation_inside_is_finished_before_the_literal():
    upto = JSON.index("149.50") + len("149.")
    assert pattern(JSON[:upto]).predict(30) == JSON[upto : upto + 30]


def test_a_literal_begun_after_a_value_is_finished():
    upto = JSON.index("149.50") + len("149.50,")
    assert pattern(JSON[:upto]).predict(30) == JSON[upto : upto + 30]


@pytest.mark.parametrize("step", [1, 3])
def test_streaming_the_output_in_pieces_reads_it_as_a_whole_would(step):
    upto = JSON.index('"sku": "B-201"')
    streamed, whole = RecordPattern(CSV), pattern(JSON[:upto])
    for start in range(0, upto, step):
        streamed.extend(JSON[start : min(start + step, upto)])
    assert streamed.patterns == whole.patterns and streamed.values == whole.values
    assert streamed.predict(200) == whole.predict(200) != ""


def test_a_table_from_print_calls():
    cities = [
        ("Lisbon", "Portugal", "545000"),
        ("Porto", "Portugal", "232000"),
        ("Madrid", "Spain", "3305000"),
        ("Lyon", "France", "522000"),
    ]
    source = "Rewrite as a table.\n\n" + "\n".join(f'print("{c}", "{k}", {n})' for c, k, n in cities)
    table = "| City | Country | Population |\n|---|---|---|\n" + "".join(f"| {c} | {k} | {n} |\n" for c, k, n in cities)
    upto = table.index("| Madrid")
    # up to the last value, whose end no gap in the source marks
    assert pattern(table[:upto], source).predict(10_000) == table[upto : table.index("522000")]


def test_nothing_is_predicted_without_a_pattern():
    assert pattern("").predict(100) == ""
    assert pattern("```json\n[\n" + record(ROWS[0])[:40]).predict(100) == ""  # one record: no pattern yet
    assert pattern("Lamps light rooms; chairs seat people.", CSV).predict(100) == ""


def test_a_value_never_runs_into_the_next_line():
    output = "- one / two\n- three / four\n- five / "
    source = "a: one, b: two\na: three, b: four\na: five, b: six\n{}a: seven, b: eight"
    assert pattern(output, source.format("")).predict(100) == "six\n- seven / "
    assert pattern(output, source.format("c: nine\n")).predict(100) == ""  # not "six\nc: nine" as one value


def test_patterns_are_bounded():
    """Every record has a gap of its own (`<i>`), so each would be a pattern of its own."""
    source = " ".join(f"w{i} <{i}> v{i}" for i in range(3 * PATTERNS))
    output = " ".join(f"w{i} (v{i})" for i in range(3 * PATTERNS))
    made = pattern(output, source)
    assert sum(len(gaps) for gaps in made.patterns.values()) == PATTERNS


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet='ab ,:\n"1.', max_size=60),
    st.text(alphabet='ab ,:\n"1.|-', max_size=80),
    st.integers(1, 5),
    st.integers(0, 50),
)
def test_any_text_read_in_any_pieces_gives_a_bounded_prediction(source, output, step, limit):
    made = RecordPattern(source)
    for start in range(0, len(output), step):
        made.extend(output[start : start + step])
        assert len(made.predict(limit)) <= limit


def test_fields_that_the_same_punctuation_separates_are_told_apart_by_their_place():
    """The last field holds spaces, which separate the fields before it: it runs to the end of
    its line, and only it."""
    rows = [
        ("ana", "31", "porto", "reads old maps"),
        ("ben", "45", "leeds", "keeps bees at home"),
        ("cai", "27", "turin", "builds small boats"),
    ]
    source = "Make a table.\n\n" + "\n".join(" ".join(row) for row in rows) + "\n"
    table = "".join(f"| {a} | {b} | {c} | {d} |\n" for a, b, c, d in rows)
    upto = table.index("cai")
    assert pattern(table[:upto], source).predict(100) == "cai | 27 | turin | builds small boats |\n| "
    assert pattern(table[:upto], source, place=None).predict(100) != "cai | 27 | turin | builds small boats |\n| "


@pytest.mark.parametrize(
    "place, literal, expected",
    [(0, " | ", 1), (2, ", ", 3), (4, " |\n| ", 0), (3, '",\n    "', 0), (PLACE_MAX, " ", PLACE_MAX)],
)
def test_a_value_is_placed_after_the_one_before_it_and_first_after_a_newline(place, literal, expected):
    assert field_place(place, literal) == expected
