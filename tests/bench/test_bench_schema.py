"""`specgen bench` with a JSON schema per prompt (a JSONL "json_schema" object): every
configuration replies with the same JSON under the schema's grammar, the grammar's share of the
Python time is reported, auto copies a single record's keys from the schema, and a schema that
cannot be used is one line naming the prompt."""

from __future__ import annotations

import io
import json

import pytest

from specgen.bench.plan import Plan, configurations
from specgen.bench.prompts import PromptFileError, read_prompt_files
from specgen.bench.runner import benchmark, prompt_grammar
from specgen.decoding.sampling import SamplingParams
from specgen.errors import UsageError
from specgen.llama import calibrate

SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "tag": {"enum": ["red", "blue"]}},
        "required": ["id", "tag"],
    },
    "maxItems": 3,
}


def test_every_configuration_writes_the_same_json_under_the_schema(target_model, draft_model):
    lines = json.dumps({"prompt": "the print of self", "name": "records", "json_schema": SCHEMA}) + "\n"
    prompts = read_prompt_files(["-"], io.StringIO(lines))
    assert prompts[0].json_schema == SCHEMA
    plan = Plan(configurations((3,), True, True), 120, 1, 0, SamplingParams())
    result = benchmark(target_model, draft_model, prompts, plan, raw=True)
    texts = {r.config: b"".join(map(target_model.piece, r.output)).decode() for r in result.runs}
    assert len(set(texts.values())) == 1 and not [a for a in result.audits if a.diverged]
    records = json.loads(texts["target"])
    assert isinstance(records, list) and all(set(r) == {"id", "tag"} for r in records)
    assert all(0 < r.summary.constraint_s <= r.summary.python_s for r in result.runs)
    overall = [s for s in result.stats if s.group == "overall"]
    assert all(0 < s.time_split()["grammar"] <= s.time_split()["python"] for s in overall)


def test_a_schema_that_is_not_an_object_or_cannot_be_a_grammar_is_one_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "a", "json_schema": 5}\n')
    with pytest.raises(PromptFileError, match='line 1: "json_schema" must be a JSON schema object'):
        read_prompt_files([str(path)], None)
    path.write_text('{"prompt": "a", "name": "odd", "json_schema": {"type": "object", "properties": 5}}\n')
    [prompt] = read_prompt_files([str(path)], None)
    with pytest.raises(UsageError, match="prompt odd: json_schema: the JSON schema cannot be turned into a grammar"):
        prompt_grammar(prompt)


def test_auto_copies_a_single_records_keys_from_the_schema(target_model):
    # one key (see tests/cli/test_json_schema.py), long enough that the loss bound lets copies in
    keys = ["the_only_key_of_this_record_" + "_".join(["written_long_enough_for_copies_to_be_affordable"] * 3)]
    schema = {"type": "object", "properties": {key: {"type": "boolean"} for key in keys}, "required": keys}
    lines = json.dumps({"prompt": "the print of self", "name": "one", "json_schema": schema}) + "\n"
    # on a machine whose verify is nearly flat (the step costs cached as if measured there), and
    # seeded, so that auto decides from those costs, not from how long this run's passes took: on
    # a steep curve whether the copies pay depends on the host
    flat = {n: 0.001 * (1 + 0.02 * n) for n in (1, 2, 4, 8, 16, 32, 64)}
    cached = calibrate._path(target_model, None)
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps({"verify": flat, "draft": {}, "switch": 0.0}))
    plan = Plan(configurations(("auto",), False, True), 300, 1, 0, SamplingParams(seed=1))
    result = benchmark(target_model, None, read_prompt_files(["-"], io.StringIO(lines)), plan, raw=True)
    auto = next(r for r in result.runs if r.config == "lookup-auto")
    assert list(json.loads(b"".join(map(target_model.piece, auto.output)).decode())) == keys
    # no earlier record and no key in the prompt: only the schema's example gives the structure
    # source a match longer than the text copier's; kept or not is the tiny model's luck
    assert "structure" in auto.summary.by_source and auto.summary.by_source["structure"].drafted > 0, (
        auto.summary.by_source
    )
