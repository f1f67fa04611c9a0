"""`specgen serve` with several conversations: each keeps its own cached history, no client learns of
another's, and saved states and cached costs behave within their budgets."""

from __future__ import annotations

import json
import time

import httpx
import numpy as np
from costfiles import plant_slow_costs
from servers import Server, client, post

from specgen.llama.model import LoadOptions, Model
from specgen.serve.states import SavedStates

# -- several conversations: each keeps its own cache ---------------------------------------------


def _chat_turns(api, opening: str, turns: int) -> list:
    """One client's first `turns` turns of a chat; each turn sends the history it received."""
    messages, replies = [{"role": "user", "content": opening}], []
    for turn in range(turns):
        reply = api.chat.completions.create(model="tiny-target", messages=messages, max_tokens=12)
        replies.append(reply)
        messages += [
            {"role": "assistant", "content": reply.choices[0].message.content},
            {"role": "user", "content": f"and then {turn}"},
        ]
    return replies


def test_clients_taking_turns_each_find_their_own_history_cached(server):
    """Two chats alternating: each one's next turn finds its whole history cached, as if alone."""
    api = client(server)
    a = [{"role": "user", "content": "def add(a, b): " * 20}]
    b = [{"role": "user", "content": "class Stack: pass " * 20}]
    first = {"a": None, "b": None}
    for name, messages in (("a", a), ("b", b)):
        first[name] = api.chat.completions.create(model="tiny-target", messages=messages, max_tokens=12)
        messages += [
            {"role": "assistant", "content": first[name].choices[0].message.content},
            {"role": "user", "content": "and self"},
        ]
    for name, messages in (("a", a), ("b", b)):
        second = api.chat.completions.create(model="tiny-target", messages=messages, max_tokens=12)
        history = first[name].usage.prompt_tokens + first[name].usage.completion_tokens
        cached = second.usage.prompt_tokens_details.cached_tokens
        assert history - 1 <= cached < second.usage.prompt_tokens, (name, cached, history)
        assert second.model_dump()["specgen"]["prefilled_tokens"] == second.usage.prompt_tokens - cached


def test_a_client_is_never_told_of_another_clients_cached_tokens(server):
    """Two clients with one key are one user: B's prompt shares A's long opening, and the prefix
    is reused, but B is told 0 cached."""
    opening = "shared system text " * 30
    api = client(server)
    api.completions.create(model="tiny-target", prompt=opening + "client A", max_tokens=4)
    other = api.completions.create(model="tiny-target", prompt=opening + "client B", max_tokens=4)
    assert other.usage.prompt_tokens_details.cached_tokens == 0
    assert other.model_dump()["specgen"]["prefilled_tokens"] < other.usage.prompt_tokens // 2  # yet reused


def test_a_reply_cut_off_by_a_disconnect_is_not_in_the_next_turns_cached_history(endless, tiny_models):
    """The client read part of a reply and hung up; its next turn, built from what it received,
    is told of none of the cut-off reply as cached (the server went on past what it got)."""
    with httpx.Client(timeout=60) as http:
        request = http.build_request(
            "POST", endless.url + "/v1/completions", json={"prompt": "x = 1", "max_tokens": 100000, "stream": True}
        )
        response = http.send(request, stream=True)
        lines = response.iter_lines()
        received = []
        for line in lines:
            if line.startswith("data: ") and len(received) < 3:
                received.append(json.loads(line[6:])["choices"][0]["text"])
            if len(received) == 3:
                break
        response.close()
    endless.wait_for("client gone")
    follow = client(endless).completions.create(
        model="tiny-target_endless", prompt="x = 1" + "".join(received), max_tokens=2
    )
    with Model(tiny_models["target_endless"], LoadOptions(n_ctx=64, n_threads=1)) as model:
        opening = len(model.tokenize("x = 1", True, False))
    assert follow.usage.prompt_tokens > opening
    assert follow.usage.prompt_tokens_details.cached_tokens == 0


def test_a_client_gone_during_a_long_prefill_frees_the_scheduler_within_a_chunk(tiny_models):
    """A prompt of 30,000 tokens takes seconds to prefill; its client hangs up at once, and the
    next request is served long before that prefill would have ended."""
    alone = Server("--target", str(tiny_models["target_endless"]), "--no-draft", "-k", "0", "--ctx", "32768", "-t", "1")
    try:
        long_prompt = [5 + i % 200 for i in range(30000)]
        start = time.perf_counter()
        post(alone, "/v1/completions", key=None, json={"prompt": long_prompt, "max_tokens": 1})
        full = time.perf_counter() - start
        with httpx.Client(timeout=60) as http:
            request = http.build_request(
                "POST",
                alone.url + "/v1/completions",
                json={"prompt": long_prompt[::-1], "max_tokens": 1, "stream": True},
            )
            http.send(request, stream=True).close()
        time.sleep(0.2)
        start = time.perf_counter()
        reply = post(alone, "/v1/completions", key=None, json={"prompt": "a", "max_tokens": 2})
        waited = time.perf_counter() - start
        assert reply.status_code == 200
        assert full > 1.0 and waited < full / 3, (full, waited)
    finally:
        alone.stop()


def test_saved_states_restore_exact_caches_within_their_budget_oldest_dropped_first(target_model):
    sequences = [[10 + s * 7 + i % 5 for i in range(40)] for s in range(4)]
    target_model.sync(sequences[2])
    one = target_model.save_state().nbytes
    fresh = target_model.forward([3], all_logits=False)[0].copy()  # the next logits, from a cache built afresh
    target_model.truncate(0)
    states = SavedStates(target_model, None, budget_bytes=int(2.5 * one))
    for sequence in sequences:
        states.take_up([*sequence, 3], 0)
        target_model.sync(sequence)
    assert [list(s.tokens) for s in states.saved] == sequences[1:3] and states.nbytes <= 2.5 * one
    # sequence 0 was dropped: nothing better to restore; the live one (3) is saved, the oldest (1) goes
    assert states.take_up([*sequences[0], 3], 0) == 0 and target_model.tokens == sequences[3]
    assert [list(s.tokens) for s in states.saved] == sequences[2:4]
    assert states.take_up([*sequences[2], 3], 0) == 40 and target_model.tokens == sequences[2]  # restored
    assert np.allclose(target_model.forward([3], all_logits=False)[0], fresh, atol=1e-4)
    # another user finds an empty cache and none of user 0's states; user 0's live one is kept for it
    assert states.take_up([*sequences[2], 3], 1) == 0 and target_model.tokens == []
    assert {s.user for s in states.saved} == {0} and [*sequences[2], 3] in [list(s.tokens) for s in states.saved]
    target_model.truncate(0)


def test_a_reply_that_finds_the_cached_costs_too_slow_has_them_measured_again_before_the_next(tiny_models, tmp_path):
    """Costs cached while the machine was busy (planted: 50 times this machine's) are found too
    slow by the first reply's one-token passes and measured again between requests. Only the
    first start, with nothing cached, says on stderr that it times the passes."""
    args = ("--target", str(tiny_models["target"]), "--no-draft", "--ctx", "2048", "-t", "1", "-n", "40")
    env = {"SPECGEN_CACHE_DIR": str(tmp_path)}
    first = Server(*args, env=env)  # measures this machine's costs and caches them
    first.stop()
    note = [line for line in first.lines if "timing this machine's passes" in line]
    assert len(note) == 1 and first.lines.index(note[0]) < first.lines.index(first.wait_for("serving"))
    cached = plant_slow_costs(tmp_path)
    slow = json.loads(cached.read_text())["verify"]
    running = Server(*args, env=env)
    assert not any("timing" in line for line in running.lines)
    try:
        reply = post(running, "/v1/completions", key=None, json={"prompt": "def add(a, b):", "max_tokens": 40})
        assert reply.status_code == 200 and reply.json()["usage"]["completion_tokens"] >= 20
        deadline = time.time() + 30  # removed, then written again (atomically) once measured
        while time.time() < deadline and (
            not cached.exists() or json.loads(cached.read_text())["verify"]["1"] == slow["1"]
        ):
            time.sleep(0.2)
        assert json.loads(cached.read_text())["verify"]["1"] < slow["1"] / 10  # measured again
        again = post(running, "/v1/completions", key=None, json={"prompt": "x = 1", "max_tokens": 4})
        assert again.status_code == 200
    finally:
        running.stop()
