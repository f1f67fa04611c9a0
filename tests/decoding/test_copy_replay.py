"""Regression guards for auto's copies: recorded greedy outputs of the 1.5B target (edits,
extraction, summaries, revisions, reformats, new code and prose) replayed through the real loop
and policy on measured verify-cost curves (tests/copyreplay.py). The floors were set a few
percent under what the policy reached on these very outputs, used while it was tuned: a change
that drafts worse on them fails here, but passing is no evidence of speed on text the policy has
not seen (docs/benchmarks.md has the held-out measurements). Each replay's text is checked to
be the recorded target's."""

from __future__ import annotations

import json
import math
import os
import random
import re
import subprocess
import sys

import pytest
from copyreplay import (
    CURVES,
    OUTPUTS,
    SWITCHES,
    cached_curves,
    ceiling,
    cheapest,
    compact,
    geometric_mean,
    hindsight,
    named_costs,
    replay,
    replay_all,
)
from holding import HoldsEveryRound

from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.base import Source, Vocabulary
from specgen.decoding.drafters.rewrites import Rewrites
from specgen.decoding.policy import Choice, Policy

GROUNDED = ("edit", "extract", "revise", "summarize")  # the output reprints much of the prompt
NOVEL = ("code", "prose")
REFORMATS = OUTPUTS.parent / "reformat-texts.json"
CHARACTERS = Vocabulary(lambda token: chr(token).encode(), lambda text: [ord(c) for c in text])  # one token a character
SCRIPT = OUTPUTS.parent.parent / "copyreplay.py"  # the replay command, run as a user runs it
SCRIPT_ENV = {**os.environ, "PYTHONPATH": str(OUTPUTS.parent.parent.parent)}
# regression floors: the geometric mean over the grounded prompts, set just under what the tuned
# policy reached on these outputs when they were recorded
TUNED_FLOORS = {
    "xeon-vm": 1.80,
    "xeon-vm-fast": 1.70,
    "xeon-vm-2611": 1.32,
    "epyc": 1.25,
    "epyc-2611": 1.29,
    "gpu-sim": 3.7,
    "h100": 1.55,
}


@pytest.mark.parametrize("curve", sorted(TUNED_FLOORS))
def test_regression_guard_copies_keep_their_tuned_speedup_on_grounded_outputs_and_cost_nothing_on_novel(curve):
    results = replay_all(named_costs(curve))
    recorded = json.loads(OUTPUTS.read_text())["outputs"]
    for r in results:  # greedy: whatever was copied, the text is the recorded target's
        assert r.emitted == compact(recorded[r.name]["prompt"], recorded[r.name]["output"])[1], r.name
    grounded = [r.speedup for r in results if r.kind in GROUNDED]
    assert len(grounded) >= 6 and geometric_mean(grounded) >= TUNED_FLOORS[curve], [round(s, 2) for s in grounded]
    novel = [r.speedup for r in results if r.kind in NOVEL]
    assert len(novel) == 4 and min(novel) >= 0.97, novel


def test_regression_guard_learnt_rewrites_cut_the_time_of_a_recorded_rename(monkeypatch):
    """edit:3 renames `o` to `order` and `proc` to `process_order` throughout a module. The same
    replay with rewrites learnt and not; the 5% margin was set under today's gain on this output."""
    recorded = json.loads(OUTPUTS.read_text())["outputs"]["edit:3"]
    args = ("edit:3", "edit", recorded["prompt"], recorded["output"], CURVES["xeon-vm"])
    learning = replay(*args)
    monkeypatch.setattr(Rewrites, "learn", lambda self, old, new, output: None)
    not_learning = replay(*args)
    assert learning.emitted == not_learning.emitted
    assert learning.speedup > 1.05 * not_learning.speedup, (learning.speedup, not_learning.speedup)


def test_regression_guard_the_record_pattern_cuts_the_time_of_recorded_reformats():
    """Four recorded reformats (JSON to YAML, print calls to a table, INI to TOML, CSV to JSON),
    one character a token: offers by the output's record pattern, beside the copies, make each
    faster, and the four by a fifth or more on the geometric mean (a floor set under today's
    gain on these outputs)."""
    recorded = json.loads(REFORMATS.read_text())["outputs"]
    characters = CHARACTERS
    gains = []
    for name, r in recorded.items():
        prompt, output = [ord(c) for c in r["prompt"]], [ord(c) for c in r["output"]]
        with_pattern = replay(name, "reformat", prompt, output, CURVES["xeon-vm"], characters)
        copying = replay(name, "reformat", prompt, output, CURVES["xeon-vm"])
        assert with_pattern.emitted == output, name
        gains.append(with_pattern.speedup / copying.speedup)
    assert min(gains) > 1.0 and geometric_mean(gains) > 1.2, [round(g, 2) for g in gains]


def test_hindsight_of_a_reprinted_text_is_the_flat_curves_ceiling():
    """The output reprints 129 characters of the prompt, one token a character, and every pass
    costs the same up to 64 tokens: the prefill gives the first, and the best a drafter can do
    for the other 128 is two passes of 63 copied tokens and the target's own, so 128 one-token
    passes against 2, 64x; no copy can beat the ceiling."""
    rng = random.Random(7)
    text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(139))
    prompt, output = [ord(c) for c in text + "\n" + text[:10]], [ord(c) for c in text[10:]]
    characters = CHARACTERS
    flat = {1: 1.0, 64: 1.0}
    assert ceiling(flat) == pytest.approx(64.0)
    assert hindsight(prompt, output, flat, characters) == pytest.approx(64.0)


def test_a_replay_with_a_look_cost_charges_the_rounds_that_weigh_within_the_look_budget():
    """An output of 200 tokens found nowhere before it: no copy is ever offered, so every round
    decodes plainly, and the speedup is plain decoding's time over itself plus the looks. Free,
    the looks cost nothing (1.0); at 0.3 ms against the H100's 2.1 ms pass, a timed policy weighs
    only within 1% of the plain time (and its first round, before there is any), so the reply
    runs at least 1 / (1.01 + one look's share), and pays for one look at least."""
    prompt, output = list(range(10)), list(range(100, 300))
    costs = named_costs("h100")
    plain = (len(output) - 1) * costs.verify_cost(1) + costs.switch  # the prefill gives the first token
    assert replay("novel", "prose", prompt, output, costs, policy=lambda c: Policy(c, 8)).speedup == pytest.approx(1.0)
    looked = replay("novel", "prose", prompt, output, costs, policy=lambda c: Policy(c, 8), look=0.0003)
    assert plain / (1.01 * plain + 0.0003) <= looked.speedup <= plain / (plain + 0.0003)  # one look at least


def test_hindsight_pays_the_look_cost_for_every_pass_that_drafts():
    """The reprinted text of the flat curve's ceiling test: two passes of 63 copied tokens and the
    target's own, 1 s each, and half a second of Python for each draft: 128 / 3, not 64."""
    rng = random.Random(7)
    text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(139))
    prompt, output = [ord(c) for c in text + "\n" + text[:10]], [ord(c) for c in text[10:]]
    assert hindsight(prompt, output, {1: 1.0, 64: 1.0}, CHARACTERS, look=0.5) == pytest.approx(128 / 3)


def test_hindsight_credits_no_token_past_where_a_copy_breaks():
    """The output reprints the prompt's text but for one character found nowhere before it, at
    output position 60. No offer holds that character, so a pass can end on it at best: the first
    pass makes at most 61 tokens, and the 67 after it take two more passes of at most 64, so three
    passes at least for 128 tokens on a flat curve (42.7x), where crediting whole drafts would
    claim two (64x)."""
    rng = random.Random(7)
    text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(138))
    prompt = [ord(c) for c in text + "\n" + text[:10]]
    output = [ord(c) for c in text[10:70] + "#" + text[71:]]
    characters = CHARACTERS
    assert len(output) == 128 and hindsight(prompt, output, {1: 1.0, 64: 1.0}, characters) <= 128 / 3 + 1e-9


def test_hindsight_bounds_auto_on_recorded_outputs():
    """Auto drafts from the same offers without knowing how far they hold, so it can come close to
    the hindsight price but not past it, and neither passes the curve's ceiling."""
    recorded = json.loads(REFORMATS.read_text())["outputs"]
    characters = CHARACTERS
    for name, r in recorded.items():
        prompt, output = [ord(c) for c in r["prompt"]], [ord(c) for c in r["output"]]
        auto = replay(name, "reformat", prompt, output, CURVES["xeon-vm"], characters).speedup
        best = hindsight(prompt, output, CURVES["xeon-vm"], characters)
        assert auto <= best * 1.001 and best <= ceiling(CURVES["xeon-vm"]), (name, auto, best)


def brute_force_seconds(costs: StepCosts, n: int, offers: dict[int, list[tuple[int, int]]]) -> float:
    """The fewest seconds over every sequence of passes, each drafting 0..(its offer) tokens,
    priced one by one (steady cost, plus the switch where the size differs from the last). The
    prefill gives the first token: no pass and no draft there."""
    best = math.inf

    def walk(at: int, last: int, seconds: float) -> None:
        nonlocal best
        if at >= n:
            best = min(best, seconds)
            return
        if at == 0:
            walk(1, last, seconds)
            return
        for offered, kept in [*offers.get(at, []), (0, 0)]:
            for k in range(offered + 1):
                size = k + 1
                switch = costs.switch if size != last else 0.0
                walk(at + min(k, kept) + 1, size, seconds + costs.verify_cost(size) + switch)

    walk(0, 0, 0.0)
    return best


@pytest.mark.parametrize("switch", [0.0, 0.6])
def test_hindsight_s_shortest_path_is_the_cheapest_of_every_sequence_of_passes(switch):
    """Random offers on a 9-token output, priced on a curve where a longer pass costs more and a
    change of size costs `switch`: the shortest path over (position, last size) finds the same
    least time as trying every sequence of passes."""
    rng = random.Random(3)
    costs = StepCosts({1: 1.0, 2: 1.3, 3: 1.5, 4: 1.9, 5: 2.6}, {}, switch)
    for _ in range(20):
        offers = {
            at: [(o, rng.randint(0, o)) for o in rng.sample(range(1, 5), rng.randint(1, 2))]
            for at in range(9)
            if rng.random() < 0.7
        }
        assert cheapest(costs, 9, offers) == pytest.approx(brute_force_seconds(costs, 9, offers), rel=1e-12)


class Greedy(Policy):
    """Copies every offer whole: no estimate, no bound."""

    def choose(self, room, lookup, lag, evidence=None, offer=()):
        return Choice(Source.LOOKUP, min(lookup, room, 64)) if lookup else Choice(Source.PLAIN)


class Fours(Policy):
    """Copies four tokens of every offer of at least four, else nothing."""

    def choose(self, room, lookup, lag, evidence=None, offer=()):
        return Choice(Source.LOOKUP, 4) if min(lookup, room) >= 4 else Choice(Source.PLAIN)


POLICIES = {
    "auto": lambda costs: Policy(costs, 8, timed=False),
    "holds": lambda costs: HoldsEveryRound(costs, 8, timed=False),
    "greedy": lambda costs: Greedy(costs, 8, timed=False),
    "fours": lambda costs: Fours(costs, 8, timed=False),
    "auto-unbounded": lambda costs: Policy(costs, 8, timed=False, risk=math.inf),
}


@pytest.mark.parametrize("curve", ["epyc-2611", "gpu-sim", "h100"])
def test_no_policy_beats_hindsight_on_recorded_outputs(curve):
    """Policies that draft from auto's sources (auto, with and without its loss bound; every offer
    whole; four tokens of each; one token every round, a filler where nothing is offered) replayed
    on recorded edits, a summary, a revision, prose and new code, each beside hindsight given the
    offers that policy was made: none is faster, and each policy is timed with the switch cost the
    hindsight prices."""
    recorded = json.loads(OUTPUTS.read_text())["outputs"]
    costs = named_costs(curve)
    for name in ("edit:1", "edit:3", "summarize:1", "revise:1", "prose:2", "code:1"):
        r = recorded[name]
        for label, make in POLICIES.items():
            played = replay(name, r["kind"], r["prompt"], r["output"], costs, policy=make)
            best = hindsight(r["prompt"], r["output"], costs, seen=played.offers)
            assert played.speedup <= best * (1 + 1e-9) and best <= ceiling(costs), (name, label, played.speedup, best)


def test_the_h100_curve_charges_a_change_of_pass_size():
    """A copy that alternates pass sizes pays the H100's switch cost on every pass: the replay of
    the greedy copier (sizes change round to round) is slower with it than without it."""
    r = json.loads(OUTPUTS.read_text())["outputs"]["edit:1"]
    make = POLICIES["greedy"]
    switching = replay("edit:1", "edit", r["prompt"], r["output"], named_costs("h100"), policy=make)
    steady = replay("edit:1", "edit", r["prompt"], r["output"], CURVES["h100"], policy=make)
    assert SWITCHES["h100"] > 0 and switching.speedup < 0.95 * steady.speedup


@pytest.mark.parametrize("curve", ["epyc-2611", "h100"])
def test_a_reply_stuck_repeating_two_tokens_is_copied_in_rounds_longer_than_its_period(curve):
    """A small model's greedy loop ("X, X, X, ..."): a copy from one period back reaches the
    text's end after two tokens, so without copies that go on through themselves a round yields at
    most three tokens (two copied, one the target's own), and 150 tokens take at least 50 rounds."""
    prompt, output = list(range(100, 160)), [200, 201, *[300, 11] * 75]
    result = replay("loop", "rag", prompt, output, named_costs(curve))
    assert result.emitted == compact(prompt, output)[1]
    assert result.rounds < len(output) / 3 * 0.75, result.rounds


def test_cached_step_costs_are_curves_to_replay_on(tmp_path):
    """A step-cost cache file (`calibrate.cached_costs`' format) is read as a curve with its switch
    cost; a file of anything else is passed over."""
    (tmp_path / "abcdef0123456789abcdef01.json").write_text(
        json.dumps({"verify": {"1": 0.02, "4": 0.03, "64": 0.09}, "draft": {}, "switch": 0.004})
    )
    (tmp_path / "broken.json").write_text("{")
    curves = cached_curves(tmp_path)
    assert list(curves) == ["cached:abcdef01"]
    costs = curves["cached:abcdef01"]
    assert costs.verify == {1: 0.02, 4: 0.03, 64: 0.09} and costs.switch == 0.004


def test_the_replay_command_prices_on_the_curve_named_and_names_an_unknown_one():
    script, env = SCRIPT, SCRIPT_ENV
    done = subprocess.run(
        [sys.executable, str(script), "--oracle", "--curve", "h100", "--risk", "inf", str(REFORMATS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(line.startswith("h100 ") for line in lines) and "ceiling 17.25x" in lines[-1]
    assert sum(" share " in line for line in lines) == 4 + 1  # four outputs, one kind
    wrong = subprocess.run(
        [sys.executable, str(script), "--curve", "h200", str(REFORMATS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert wrong.returncode != 0 and wrong.stderr.strip().splitlines() == [
        "unknown curve 'h200': use one of " + ", ".join(CURVES) + ", cached, or a step-costs FILE.json"
    ]


def test_a_step_costs_file_is_a_curve_to_replay_on_by_its_path(tmp_path):
    """`--curve FILE.json` (depth_curve.py's output, the cache's format) prices every pass at that
    file's curve: where a pass of any size costs what one token's does, the reformats' copies
    gain; where a pass of n tokens costs n one-token passes, no copy can, and the replay is at
    most as fast as plain decoding. A missing file, and one without a one-token cost, are named in
    one line."""
    flat, steep = tmp_path / "flat.json", tmp_path / "steep.json"
    flat.write_text(json.dumps({"verify": {"1": 0.05, "64": 0.05}, "draft": {}, "switch": 0.0, "depth": 1536}))
    steep.write_text(json.dumps({"verify": {"1": 0.05, "64": 3.2}, "draft": {}, "switch": 0.0}))
    script, env = SCRIPT, SCRIPT_ENV
    done = subprocess.run(
        [sys.executable, str(script), "--curve", f"{flat},{steep}", str(REFORMATS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    means = dict(re.findall(r"^(file:\w+) +by kind .* geometric mean ([\d.]+)$", done.stdout, re.M))
    assert set(means) == {"file:flat", "file:steep"}
    assert float(means["file:flat"]) > 1.5 and float(means["file:steep"]) <= 1.0
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"verify": {"4": 0.05}}))
    wrong = subprocess.run(
        [sys.executable, str(script), "--curve", str(empty), str(REFORMATS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert wrong.returncode != 0 and wrong.stderr.strip().splitlines() == [
        f"no verify curve in {empty}: want a step-costs file with a one-token cost"
    ]
    missing = subprocess.run(
        [sys.executable, str(script), "--curve", str(tmp_path / "none.json"), str(REFORMATS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    none = tmp_path / "none.json"
    assert missing.returncode != 0 and missing.stderr.strip().splitlines() == [f"no such file: {none}"]


@pytest.mark.parametrize(
    "arguments, error",
    [
        (["/nope/outputs.json"], "no such file: /nope/outputs.json"),
        (["--risk", "x"], "argument --risk: invalid float value: 'x'"),
        (["--predict", "file"], "--predict file reads the prompt's fenced block: pass --vocab FILE.gguf"),
    ],
)
def test_the_replay_command_names_a_bad_argument_in_one_line_without_a_traceback(
    arguments: list[str], error: str
) -> None:
    script, env = SCRIPT, SCRIPT_ENV
    done = subprocess.run(
        [sys.executable, str(script), *arguments], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines()[-1] == f"copyreplay.py: error: {error}"
    assert "Traceback" not in done.stderr


def test_hindsight_drafts_the_filler_a_held_pass_drafts_where_nothing_is_offered():
    """An output that writes each new token twice (a a b b ...): where a token first appears no
    source offers anything, and a held pass's filler (the token before) is kept. Holding every
    round makes about two tokens a pass, faster than plain decoding, and hindsight, offered
    that filler too, is still at least as fast."""
    prompt, output = list(range(100, 160)), [t for t in range(200, 275) for _ in range(2)]
    costs = named_costs("h100")
    held = replay("doubled", "prose", prompt, output, costs, policy=POLICIES["holds"])
    assert held.emitted == compact(prompt, output)[1]
    assert held.speedup > 1.5, held.speedup  # the fillers were kept: about two tokens a round
    assert held.speedup <= hindsight(prompt, output, costs, seen=held.offers) * (1 + 1e-9)


def test_hindsight_with_a_prediction_drafts_from_it_and_still_bounds_auto():
    """An output of 128 random characters found nowhere in the prompt, and a prediction of it
    wrong at one character (position 60). Without the prediction there is next to nothing to
    copy. With it, no offer holds that character, so no drafter needs fewer than three passes on
    a flat curve: the prefill gives the first token, a pass makes at most 60 more (the target's
    own at 60), then two for the 67 after, where plain decoding takes 127 passes (127 / 3,
    42.3x); the prediction, found again a few tokens after the break, takes about four (over
    30x). Auto, drafting from the same prediction, is at most as fast."""
    rng = random.Random(11)
    output = [ord(rng.choice("abcdefghijklmnopqrstuvwxyz ")) for _ in range(128)]
    prediction = [*output[:60], ord("#"), *output[61:]]
    prompt = [ord(c) for c in "Write it out:\n"]
    characters = CHARACTERS
    flat = {1: 1.0, 64: 1.0}
    alone = hindsight(prompt, output, flat, characters)
    best = hindsight(prompt, output, flat, characters, prediction=prediction)
    auto = replay("predicted", "edit", prompt, output, flat, characters, prediction=prediction)
    assert alone < 2.0 and 30.0 < best <= 127 / 3 + 1e-9, (alone, best)
    assert auto.emitted == output and 1.0 < auto.speedup <= best * (1 + 1e-9), auto.speedup


def test_the_replay_command_prices_hindsight_with_the_prediction_asked_for(tmp_path):
    """`--oracle --predict self`: each output replayed by auto and priced in hindsight beside a
    perfect prediction of it. On a curve where a pass of any size up to 64 costs one token's, no
    drafter needs fewer than ceil((n - 1) / 64) passes for an output of n tokens (the prefill
    gives the first); the prediction's offers reach it within one pass (the first rounds may copy
    the prompt instead: a longer match than the prediction's start), where without the prediction
    the same outputs need half as many passes again at least; and auto, given the prediction,
    needs fewer passes than without it."""
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps({"verify": {"1": 0.05, "64": 0.05}, "draft": {}, "switch": 0.0}))
    script, env = SCRIPT, SCRIPT_ENV

    def replayed(*predict: str) -> dict[str, tuple[float, float]]:
        """By output: auto's speedup and hindsight's."""
        command = [sys.executable, str(script), "--oracle", *predict, "--curve", str(flat), str(REFORMATS)]
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, done.stderr
        found = re.findall(r"^file:flat +(\S+:\d) +auto +([\d.]+)x +hindsight +([\d.]+)x", done.stdout, re.M)
        return {name: (float(auto), float(best)) for name, auto, best in found}

    recorded = json.loads(REFORMATS.read_text())["outputs"]
    predicted, alone = replayed("--predict", "self"), replayed()
    assert set(predicted) == set(alone) == set(recorded)
    for name, r in recorded.items():
        n, fewest = len(r["output"]), math.ceil((len(r["output"]) - 1) / 64)
        passes = (n - 1) / predicted[name][1]  # the printed speedup has two decimals
        assert fewest - 0.01 <= passes <= fewest + 1.01, (name, passes, fewest)
        assert (n - 1) / alone[name][1] > 1.5 * passes, name
        assert predicted[name][0] > 2.0 * alone[name][0], name
