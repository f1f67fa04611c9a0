"""`specgen run --predict FILE` as a shell user meets it: the same text as without a prediction,
the prediction's counts (OpenAI's meanings) on the summary line and in --json, and one line with
exit 2 for a file that cannot be read or does not fit in the context."""

from __future__ import annotations

import json

import pytest
from test_run import one_error_line, pin_timed_costs, specgen

PROMPT = "def"  # the tiny target writes more than -n tokens after it


@pytest.fixture(scope="module")
def pair(tiny_models) -> list[str]:
    return ["--target", str(tiny_models["target"]), "--draft", str(tiny_models["draft"])]


@pytest.fixture(scope="module")
def walker(tiny_models) -> list[str]:
    """A target that writes one character per token (digits and punctuation), so the tokens of
    its output are the tokens its text reads as: a prediction of that text is the output token
    for token. (The tiny target's own output uses merged tokens its tokenizer would not pick.)"""
    return ["--target", str(tiny_models["target_fim_context_free"]), "--no-draft"]


def plain_run(models: list[str]) -> dict:
    """The target alone's output, as --json gives it."""
    result = specgen("run", PROMPT, *models, "--raw", "-n", "40", "-k", "0", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def plain(pair) -> dict:
    return plain_run(pair)


@pytest.mark.parametrize("k", ["auto", "4"])
def test_a_prediction_of_the_output_drafts_it_and_counts_every_token_as_accepted(walker, tmp_path, k):
    alone = plain_run(walker)
    predicted = tmp_path / "expected.txt"
    predicted.write_text(alone["text"])
    if k == "auto":
        pin_timed_costs(*walker)
    result = specgen("run", PROMPT, *walker, "--raw", "-n", "40", "-k", k, "--predict", str(predicted), "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["text"] == alone["text"] and len(alone["text"]) == 40, "one character per token"
    assert (
        record["prediction_tokens"],
        record["accepted_prediction_tokens"],
        record["rejected_prediction_tokens"],
    ) == (40, 40, 0)
    assert record["by_source"]["prediction"]["kept"] > 20 and record["prediction_kept"] > 20


def test_the_summary_line_gives_the_predictions_counts_and_what_was_drafted_from_it(pair, plain, tmp_path):
    predicted = tmp_path / "expected.txt"
    predicted.write_text(plain["text"][: len(plain["text"]) // 2] + " else return")  # half of it, then a change
    result = specgen("run", PROMPT, *pair, "--raw", "-n", "40", "--predict", str(predicted))
    assert result.returncode == 0, result.stderr
    assert result.stdout == plain["text"]
    line = result.stderr.strip()
    assert "prediction " in line and " accepted, " in line and " rejected" in line
    assert "drafted by " in line and "prediction kept " in line


def test_without_a_prediction_the_json_counts_are_zero(pair):
    record = json.loads(specgen("run", PROMPT, *pair, "--raw", "-n", "8", "--json").stdout)
    assert (
        record["prediction_tokens"],
        record["accepted_prediction_tokens"],
        record["rejected_prediction_tokens"],
    ) == (0, 0, 0)


@pytest.mark.parametrize("case", ["missing", "folder", "not_utf8"])
def test_a_prediction_that_cannot_be_read_is_one_line_and_exit_2(case, pair, tmp_path):
    (tmp_path / "latin1.txt").write_bytes("caf\u00e9 au lait".encode("latin-1"))
    path, fragment = {
        "missing": ("nope.py", "--predict nope.py: no such file"),
        "folder": (".", "--predict .: is a folder"),
        "not_utf8": ("latin1.txt", "--predict latin1.txt: not UTF-8 text (invalid continuation byte at byte 3)"),
    }[case]
    result = specgen("run", *pair, "--predict", path, "hi", cwd=tmp_path)
    one_error_line(result, fragment)
    assert result.returncode == 2


def test_a_prediction_longer_than_the_context_is_one_line_and_exit_2(pair, tmp_path):
    predicted = tmp_path / "long.txt"
    predicted.write_text("self print return " * 200)
    result = specgen("run", *pair, "--ctx", "256", "--raw", "--predict", str(predicted), "hi")
    one_error_line(result, "--predict ", "longer than the 256-token context")
    assert result.returncode == 2


def test_text_piped_for_an_instruction_is_followed_as_a_prediction_and_the_output_stays_the_targets(walker):
    """`cat file | specgen run "rewrite it"`: auto follows the piped text (`Source.ATTACHED`). The
    walker's reply does not depend on the prompt, so piping in the very text it writes gives a
    reply that reprints what was attached; a fenced block in the instruction counts alike, and
    with nothing attached nothing is drafted from it."""
    pin_timed_costs(*walker)
    alone = specgen("run", "rewrite it", *walker, "-n", "40", "-k", "0", "--json")
    assert alone.returncode == 0, alone.stderr
    text = json.loads(alone.stdout)["text"]
    assert len(text) == 40, "one character per token"
    for stdin, prompt in ((text, "rewrite it"), (None, f"rewrite it\n```\n{text}\n```"), (None, "rewrite it")):
        result = specgen("run", prompt, *walker, "-n", "40", "-k", "auto", "--json", stdin=stdin)
        assert result.returncode == 0, result.stderr
        record = json.loads(result.stdout)
        assert record["text"] == text
        attached = record["by_source"].get("attached", {}).get("kept", 0)
        assert attached > 20 if "```" in prompt or stdin else attached == 0, record["by_source"]
        assert record["prediction_tokens"] == 0, "attached text is not a prediction the user gave"
