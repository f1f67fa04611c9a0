"""What `specgen run` asks of the engine: with --json-schema the reply is written in JSON, so it is
`quoted` (auto copies also from the prompt's text as JSON escapes it) and carries the schema's
grammar and example; without one it is neither. The command runs in this process on the tiny
model, and `builds.recorded` keeps the generation the engine built for it."""

from __future__ import annotations

import json

import pytest
from builds import recorded

from specgen.cli import main
from specgen.decoding.auto import AutoDrafter

SCHEMA = {
    "type": "object",
    "properties": {"city_name": {"type": "string"}, "is_warm": {"type": "boolean"}},
    "required": ["city_name", "is_warm"],
}


def built_by_run(tiny_models, monkeypatch, tmp_path, *args: str):
    monkeypatch.setenv("SPECGEN_CACHE_DIR", str(tmp_path / "cache"))
    made = recorded(monkeypatch)
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "run",
                'the "print" of self',
                "--target",
                str(tiny_models["target"]),
                "--no-draft",
                "-t",
                "1",
                "-n",
                "8",
                "--json",
                *args,
            ]
        )
    assert exit_info.value.code == 0
    [generation] = made
    assert isinstance(generation.drafter, AutoDrafter)  # -k auto is the default
    return generation


def test_run_json_schema_asks_for_a_quoted_reply_with_the_schemas_keys(tiny_models, monkeypatch, tmp_path, capsys):
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    generation = built_by_run(tiny_models, monkeypatch, tmp_path, "--json-schema", str(path))
    assert json.loads(capsys.readouterr().out)["tokens"] > 0
    assert generation.request.grammar is not None
    assert generation.request.quoted and generation.drafter.quoted
    assert '"city_name"' in generation.drafter.example and '"is_warm"' in generation.drafter.example


def test_run_without_a_schema_is_not_quoted(tiny_models, monkeypatch, tmp_path):
    generation = built_by_run(tiny_models, monkeypatch, tmp_path)
    assert generation.request.grammar is None and not generation.drafter.quoted and not generation.drafter.example
