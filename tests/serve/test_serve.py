"""`specgen serve` as its clients meet it: a real server process on a loopback port with the tiny
models, driven by the official `openai` package (streamed and not, chat and completions) and by
raw HTTP (httpx) for the error cases, the queue, hang-ups and Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import openai
import pytest
from costfiles import plant_slow_costs

from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.events import Summary
from specgen.decoding.loop import GenerationConfig, generate
from specgen.llama.conversation import Conversation
from specgen.llama.model import LoadOptions, Model
from specgen.serve.prompts import Prompts
from specgen.serve.states import SavedStates
from specgen.serve.stops import StopMatcher
from specgen.serve.wire import ApiError, GenRequest

SPECGEN = [sys.executable, "-m", "specgen"]
KEY = "test-key-123"
OTHER_KEY = "another-key-456"


class Server:
    """A `specgen serve` process on a free loopback port; its stderr lines are kept as they come."""

    def __init__(self, *args: str, keys: str = "", env: dict[str, str] | None = None):
        env = {**os.environ, "SPECGEN_API_KEY": keys, **(env or {})}
        self.process = subprocess.Popen(
            [*SPECGEN, "serve", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: list[str] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.url = re.search(r"(http://\S+)/v1 ", self.wait_for("serving")).group(1)

    def _read(self) -> None:
        for line in self.process.stderr:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    def wait_for(self, fragment: str, count: int = 1, timeout: float = 60) -> str:
        """The count-th stderr line holding `fragment`, waiting for it to come."""
        with self._changed:
            found = self._changed.wait_for(
                lambda: len([x for x in self.lines if fragment in x]) >= count or self.process.poll() is not None,
                timeout,
            )
            hits = [x for x in self.lines if fragment in x]
            assert found and len(hits) >= count, f"no {fragment!r} on stderr:\n" + "\n".join(self.lines)
            return hits[count - 1]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            self.process.wait(timeout=30)


def pinned_costs(folder: Path, *args: str, flat: bool = False) -> dict[str, str]:
    """The environment of a server whose step costs are this machine's (measured by a first start
    of `specgen serve *args`, cached in `folder`) but for the cost of a change of pass size, made
    nothing, as on a CPU with a real model (0.1 ms of a 30 ms pass there); with `flat`, verifying
    many tokens costs what one does too, as on a GPU. The tiny models' passes take 0.07 ms and a
    change of size 0.05 ms more, so their loss bound holds the copies of a short reply back, and
    where this is used the copies themselves are under test."""
    env = {"SPECGEN_CACHE_DIR": str(folder)}
    Server(*args, env=env).stop()  # measures this machine's costs and caches them
    [cached] = (folder / "step-costs").glob("*.json")
    measured = json.loads(cached.read_text())
    one = measured["verify"]["1"]
    verify = dict.fromkeys(measured["verify"], one) if flat else measured["verify"]
    cached.write_text(json.dumps({**measured, "verify": verify, "switch": 0.0}))
    return env


@pytest.fixture(scope="module")
def server(tiny_models):
    """The tiny pair with K = 3, the session fixtures' context and threads, and two API keys."""
    running = Server(
        "--target",
        str(tiny_models["target"]),
        "--draft",
        str(tiny_models["draft"]),
        "-k",
        "3",
        "--ctx",
        "2048",
        "-t",
        "1",
        "--api-key",
        KEY,
        "--api-key",
        OTHER_KEY,
        "-n",
        "24",
    )
    yield running
    running.stop()


@pytest.fixture(scope="module")
def endless(tiny_models):
    """A target that never ends a reply, a large context, and room for one waiting request."""
    running = Server(
        "--target",
        str(tiny_models["target_endless"]),
        "--draft",
        str(tiny_models["draft"]),
        "-k",
        "3",
        "--ctx",
        "32768",
        "--queue",
        "1",
        "-n",
        "100000",
        "-t",
        "1",
    )
    yield running
    running.stop()


def client(server: Server, key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0, timeout=60)


def post(server: Server, path: str, key: str | None = KEY, **kwargs) -> httpx.Response:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    return httpx.post(server.url + path, headers=headers, timeout=60, **kwargs)


def reference(target, draft, tokens: list[int], max_tokens: int = 24) -> tuple[str, list[int], Summary]:
    """What the loop itself produces for these prompt tokens: the text, the tokens, the Summary."""
    texts, out = [], []
    for event in generate(target, ModelDrafter(draft), tokens, GenerationConfig(max_tokens, 3)):
        if isinstance(event, Summary):
            return "".join(texts), out, event
        texts.append(event.text)
        out += event.tokens
    raise AssertionError("no summary")


# -- the OpenAI client ---------------------------------------------------------------------------


def test_models_and_health(server):
    assert [m.id for m in client(server).models.list()] == ["tiny-target"]
    health = httpx.get(server.url + "/health", headers={"Authorization": f"Bearer {KEY}"}).json()
    assert health["status"] == "ok" and health["model"] == "tiny-target"


def test_greedy_chat_and_completion_equal_the_loop(server, target_model, draft_model):
    api = client(server)
    chat = api.chat.completions.create(model="tiny-target", messages=[{"role": "user", "content": "def add"}])
    text, tokens, summary = reference(target_model, draft_model, target_model.encode_chat([("user", "def add")]))
    assert chat.choices[0].message.content == text and text
    assert chat.usage.completion_tokens == len(tokens) == summary.tokens
    assert chat.usage.prompt_tokens == summary.prompt_tokens
    assert chat.choices[0].finish_reason == ("stop" if summary.stop_reason == "eog" else "length")

    completion = api.completions.create(model="tiny-target", prompt="the print of self", max_tokens=30)
    raw = target_model.tokenize("the print of self", add_special=True, parse_special=False)
    assert completion.choices[0].text == reference(target_model, draft_model, raw, 30)[0]


def test_streamed_replies_equal_whole_ones_and_end_with_stats(server):
    api = client(server)
    messages = [{"role": "user", "content": "for i in"}]
    whole = api.chat.completions.create(model="tiny-target", messages=messages, max_tokens=16)
    chunks = list(api.chat.completions.create(model="tiny-target", messages=messages, max_tokens=16, stream=True))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == whole.choices[0].message.content
    assert [c.choices[0].finish_reason for c in chunks].count(None) == len(chunks) - 1
    last = chunks[-1].model_dump()
    assert last["usage"]["completion_tokens"] == whole.usage.completion_tokens
    assert last["specgen"]["drafter"] == "speculative" and last["specgen"]["draft_model"] == "tiny-draft.gguf"

    pieces = list(
        api.completions.create(
            model="tiny-target", prompt="x = 1", max_tokens=12, stream=True, stream_options={"include_usage": True}
        )
    )
    assert pieces[-1].choices == [] and pieces[-1].usage.completion_tokens == 12
    assert pieces[-2].choices[0].finish_reason == "length"
    text = "".join(p.choices[0].text for p in pieces[:-1])
    assert text == api.completions.create(model="tiny-target", prompt="x = 1", max_tokens=12).choices[0].text


def test_usage_and_specgen_stats_add_up(server):
    reply = client(server).chat.completions.create(
        model="tiny-target", max_tokens=20, messages=[{"role": "user", "content": "print the"}]
    )
    stats, usage = reply.model_dump()["specgen"], reply.usage
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert stats["draft_tokens"] == 3 and stats["drafted"] >= stats["accepted"] > 0
    assert stats["acceptance"] == pytest.approx(stats["accepted"] / stats["drafted"], abs=1e-4)
    assert stats["tokens_per_round"] == pytest.approx(usage.completion_tokens / stats["rounds"], abs=1e-3)
    assert stats["decode_tokens_per_second"] > 0 and stats["first_token_s"] is not None


def test_sampling_is_reproducible_with_a_seed(server):
    api = client(server)
    args = {"model": "tiny-target", "prompt": "the def", "max_tokens": 20, "temperature": 1.0, "top_p": 0.9}
    first, second = (api.completions.create(**args, seed=7).choices[0].text for _ in range(2))
    assert first == second
    texts = {api.completions.create(**args, seed=s).choices[0].text for s in (0, 1, 2, -1, -1)}
    assert len(texts) > 1, "different seeds, different samples; -1 is a random seed"


def test_stop_string_spanning_two_tokens_cuts_the_reply(server, target_model, draft_model):
    tokens = target_model.tokenize("if self", add_special=True, parse_special=False)
    text, out, _ = reference(target_model, draft_model, tokens, 24)
    pieces = [target_model.piece(t).decode("utf-8", "replace") for t in out]
    i = next(
        i
        for i in range(2, len(pieces) - 1)
        if pieces[i].isascii() and pieces[i + 1].isascii() and pieces[i].strip() and pieces[i + 1].strip()
    )
    stop = pieces[i][-1] + pieces[i + 1][0]  # the end of one token and the start of the next
    expected = text[: text.index(stop)]
    api = client(server)
    whole = api.completions.create(model="tiny-target", prompt="if self", max_tokens=24, stop=["zzz", stop])
    assert whole.choices[0].text == expected and whole.choices[0].finish_reason == "stop"
    streamed = list(
        api.completions.create(model="tiny-target", prompt="if self", max_tokens=24, stop=stop, stream=True)
    )
    assert "".join(c.choices[0].text for c in streamed) == expected
    assert streamed[-1].choices[0].finish_reason == "stop"


def test_a_reply_cut_by_a_stop_string_says_so_in_its_stats(server):
    """The loop ends a stopped reply as interrupted; the client and the access log read "stop string"."""
    whole = client(server).completions.create(model="tiny-target", prompt="if self", max_tokens=24, stop=[" "])
    assert whole.choices[0].finish_reason == "stop"
    assert whole.model_extra["specgen"]["stop_reason"] == "stop string"


def test_stop_matcher_holds_back_only_what_may_begin_a_stop():
    matcher = StopMatcher(("END", "xy"))
    assert matcher.feed("abcE") == ("abc", False)
    assert matcher.feed("N") == ("", False)
    assert matcher.feed("x") == ("EN", False), "not END after all, but x may begin xy"
    assert matcher.feed("yz") == ("", True)
    assert StopMatcher(()).feed("abc") == ("abc", False)
    matcher = StopMatcher(("END",))
    assert matcher.feed("aEN") == ("a", False) and matcher.flush() == "EN"


def test_prompts_refuse_what_the_model_cannot_take(tiny_models, target_model):
    with Model(tiny_models["target_no_template"], LoadOptions(n_ctx=256, n_threads=1)) as plain:
        with pytest.raises(ApiError, match=r"no chat template.*/v1/completions"):
            Prompts(plain, 1000).encode(GenRequest("chat", messages=(("user", "hi"),)))
        assert Prompts(plain, 1000).encode(GenRequest("completion", prompt="hi")).tokens[0] == plain.bos
    prompts = Prompts(target_model, 100)
    history = (("user", "a " * 60), ("assistant", "b " * 60), ("user", "c"))
    with pytest.raises(ApiError, match="at most 100") as error:
        prompts.encode(GenRequest("chat", messages=history))
    assert error.value.code == "context_length_exceeded" and error.value.status == 400
    with pytest.raises(ApiError, match="at most 100"):
        prompts.encode(GenRequest("completion", prompt=tuple(range(3, 200))))
    longer = (("user", "a " * 1500), ("assistant", "b " * 1500), ("user", "c"))  # more than the context
    with pytest.raises(ApiError, match="at most 2047"):
        Prompts(target_model, 10**6).encode(GenRequest("chat", messages=longer))


def test_the_next_chat_turn_reuses_the_kv_cache(server, target_model, draft_model):
    api = client(server)
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "def add"}]
    first = api.chat.completions.create(model="tiny-target", messages=messages, max_tokens=12)
    messages += [
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": "and self"},
    ]
    second = api.chat.completions.create(model="tiny-target", messages=messages, max_tokens=12)
    history = first.usage.prompt_tokens + first.usage.completion_tokens
    assert second.usage.prompt_tokens_details.cached_tokens >= history - 1
    assert second.model_dump()["specgen"]["prefilled_tokens"] < second.usage.prompt_tokens - history + 1

    conversation = Conversation(target_model, "be brief")  # what `specgen chat` sends for the same turns
    turn = conversation.prompt("def add", 0)
    text, tokens, _ = reference(target_model, draft_model, list(turn.tokens), 12)
    conversation.commit(turn, text, tokens)
    turn = conversation.prompt("and self", 0)
    assert len(turn.tokens) == second.usage.prompt_tokens
    assert second.choices[0].message.content == reference(target_model, draft_model, list(turn.tokens), 12)[0]


def test_concurrent_requests_wait_their_turn_and_all_get_their_answer(server):
    prompts = ["def add", "the print", "for i in", "return self"]
    api = client(server)
    alone = {p: api.completions.create(model="tiny-target", prompt=p, max_tokens=20).choices[0].text for p in prompts}
    answers: dict[str, str] = {}

    def ask(prompt: str) -> None:
        answers[prompt] = (
            client(server).completions.create(model="tiny-target", prompt=prompt, max_tokens=20).choices[0].text
        )

    threads = [threading.Thread(target=ask, args=(p,)) for p in prompts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert answers == alone


def test_access_log_has_one_line_per_request_with_the_speculative_stats(server):
    before = len([x for x in server.lines if "POST /v1/completions" in x])
    client(server).completions.create(model="tiny-target", prompt="a", max_tokens=5)
    line = server.wait_for("POST /v1/completions", before + 1)
    assert re.search(
        r"POST /v1/completions 200 .*prompt \d+ .*\d tokens at .* tok/s, speculative accepted \d+/\d+", line
    ), line


def test_the_access_log_escapes_what_a_client_sends_so_no_line_can_be_forged(server):
    """A percent-encoded line break in the path, and control characters in a model name (echoed in
    the log's error note), stay on the request's own line, escaped."""
    forged = "specgen: 10.9.8.7 POST /v1/completions 200 0.01s"
    path = "/v1/nothing%0D%0A" + forged.replace(" ", "%20") + "%E2%80%A8%1B[2J"
    assert httpx.get(server.url + path, headers={"Authorization": f"Bearer {KEY}"}).status_code == 404
    reply = post(server, "/v1/completions", json={"model": "m\n" + forged + "\u0085\u2029", "prompt": "a"})
    assert reply.status_code == 404
    first = server.wait_for("GET /v1/nothing")
    second = server.wait_for("The model 'm")
    assert not [line for line in server.lines if line.startswith("specgen: 10.9.8.7")]
    for line in (first, second):
        assert line.isprintable() and line.startswith("specgen: 127.0.0.1 "), line
    assert "/v1/nothing\\x0d\\x0aspecgen:\\x2010.9.8.7" in first and "\\u2028\\x1b[2J" in first
    assert "m\\x0a" + forged + "\\x85\\u2029" in second


# -- errors over raw HTTP ------------------------------------------------------------------------


def test_a_wrong_or_missing_key_is_401(server):
    for key in (None, "wrong", f"{KEY},{OTHER_KEY}", KEY[:-1]):
        reply = post(server, "/v1/completions", key=key, json={"prompt": "a", "max_tokens": 2})
        assert reply.status_code == 401 and reply.json()["error"]["code"] == "invalid_api_key"
    assert post(server, "/v1/completions", key=OTHER_KEY, json={"prompt": "a", "max_tokens": 2}).status_code == 200
    assert httpx.get(server.url + "/v1/models").status_code == 401
    with pytest.raises(openai.AuthenticationError):
        client(server, key="nope").models.list()


@pytest.mark.parametrize(
    "body, status, fragment",
    [
        (b"{not json", 400, "not valid JSON"),
        (b"[1, 2]", 400, "JSON object"),
        (b'{"model": "gpt-4", "prompt": "a"}', 404, "gpt-4"),
        (b'{"prompt": "a", "temperature": "hot"}', 400, "temperature must be a number"),
        (b'{"prompt": "a", "max_tokens": 0}', 400, "max_tokens must be at least 1"),
        (b'{"prompt": "a", "max_tokens": "5"}', 400, "max_tokens must be a whole number"),
        (b'{"prompt": "a", "stream": "yes"}', 400, "stream must be true or false"),
        (b'{"prompt": "a", "stop": [1]}', 400, "stop must be"),
        (b'{"prompt": "a", "n": 2}', 400, "n must be 1"),
        (b'{"prompt": {"x": 1}}', 400, "prompt must be"),
        (b'{"prompt": [999999]}', 400, "not in the vocabulary"),
        (b'{"prompt": []}', 400, "prompt must be"),
        (b'{"prompt": ["a", "b"]}', 400, "send one per request"),
        (b"[" * 100000, 400, "not valid JSON"),
        (b'{"prompt": "word ' + b"word " * 3000 + b'"}', 400, "context"),
    ],
)
def test_bad_completion_requests_get_openai_errors(server, body, status, fragment):
    reply = post(server, "/v1/completions", content=body)
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert fragment in error["message"] and error["type"]


@pytest.mark.parametrize(
    "messages, fragment",
    [
        (None, "messages must be"),
        ([], "messages must be"),
        (["hi"], "messages[0] must be an object"),
        ([{"content": "hi"}], "messages[0].role"),
        ([{"role": "user", "content": 5}], "messages[0].content"),
        ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}], "text only"),
    ],
)
def test_bad_chat_messages_get_400(server, messages, fragment):
    reply = post(server, "/v1/chat/completions", json={"model": "tiny-target", "messages": messages})
    assert reply.status_code == 400 and fragment in reply.json()["error"]["message"], reply.text


@pytest.mark.parametrize(
    "path, body, param",
    [
        (
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "def add\u0000(a, b)"}]},
            "messages[0].content",
        ),
        (
            "/v1/chat/completions",
            {
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "x\u0000"}]},
                ]
            },
            "messages[1].content[1].text",
        ),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "stop": ["a", "\u0000b"]}, "stop"),
        ("/v1/completions", {"prompt": "the print\u0000 of self"}, "prompt"),
        ("/v1/completions", {"prompt": ["\u0000"]}, "prompt"),
        ("/v1/completions", {"prompt": "a", "stop": "x\u0000"}, "stop"),
    ],
)
def test_a_nul_in_any_text_the_tokenizer_reads_is_a_400_naming_the_field(server, path, body, param):
    """ctypes would end the text at the NUL and the rest would go unread without a word."""
    reply = post(server, path, json={**body, "max_tokens": 2})
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["param"] == param and "NUL" in error["message"] and error["type"] == "invalid_request_error"


def test_oversized_body_unknown_route_and_method_then_the_server_still_answers(server):
    big = post(server, "/v1/completions", content=b'{"prompt": "' + b"a" * (3 * 1024 * 1024) + b'"}')
    assert big.status_code == 413 and "limit" in big.json()["error"]["message"]
    assert post(server, "/v1/nothing", json={}).status_code == 404
    wrong = httpx.get(server.url + "/v1/completions", headers={"Authorization": f"Bearer {KEY}"})
    assert wrong.status_code == 405 and wrong.json()["error"]["message"]
    ok = post(
        server,
        "/v1/chat/completions",
        json={
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "max_tokens": 3,
            "logit_bias": {},
            "user": "u-1",
        },
    )
    assert ok.status_code == 200 and ok.json()["usage"]["completion_tokens"] == 3, "hints and no-op values pass"
    unknown = post(
        server, "/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}], "frobnicate": True}
    )
    assert unknown.status_code == 400 and unknown.json()["error"]["param"] == "frobnicate"
    assert "Traceback" not in "\n".join(server.lines)


def test_binding_beyond_loopback_needs_a_key(tiny_models):
    result = subprocess.run(
        [*SPECGEN, "serve", "--host", "0.0.0.0", "--target", str(tiny_models["target"]), "--no-draft"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "SPECGEN_API_KEY": ""},
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "--api-key" in result.stderr and "Traceback" not in result.stderr


# -- one generation at a time: hang-ups, the queue, Ctrl-C ---------------------------------------


def _open_stream(server: Server, http: httpx.Client, max_tokens: int = 100000):
    """Start a long streamed completion and read its first chunk; returns the open response."""
    request = http.build_request(
        "POST", server.url + "/v1/completions", json={"prompt": "x = 1", "max_tokens": max_tokens, "stream": True}
    )
    response = http.send(request, stream=True)
    lines = response.iter_lines()
    assert next(line for line in lines if line.startswith("data: "))
    return response, lines


def test_a_client_hanging_up_stops_its_generation_and_the_next_is_served_at_once(endless):
    with httpx.Client(timeout=60) as http:
        response, _ = _open_stream(endless, http)
        response.close()
    line = endless.wait_for("client gone")
    assert int(re.search(r"(\d+) tokens at", line).group(1)) < 5000, "stopped long before the 32768-token context"
    start = time.perf_counter()
    reply = client(endless).completions.create(model="tiny-target_endless", prompt="a", max_tokens=8)
    assert reply.usage.completion_tokens == 8 and time.perf_counter() - start < 5
    assert reply.model_dump()["specgen"]["queued_s"] < 1


def test_a_full_queue_answers_503_with_retry_after(endless):
    results = {}
    with httpx.Client(timeout=60) as http:
        running, _ = _open_stream(endless, http)
        waiting = threading.Thread(
            target=lambda: results.update(
                waited=post(endless, "/v1/completions", key=None, json={"prompt": "a", "max_tokens": 4})
            )
        )
        waiting.start()
        deadline = time.time() + 20
        while httpx.get(endless.url + "/health").json()["waiting"] < 1 and time.time() < deadline:
            time.sleep(0.05)
        full = post(endless, "/v1/completions", key=None, json={"prompt": "a", "max_tokens": 4})
        assert full.status_code == 503 and int(full.headers["Retry-After"]) >= 1
        assert full.json()["error"]["code"] == "queue_full"
        running.close()
    waiting.join(30)
    assert results["waited"].status_code == 200 and results["waited"].json()["usage"]["completion_tokens"] == 4


def test_a_queue_of_0_serves_a_request_on_an_idle_server_and_refuses_one_that_would_wait(tiny_models):
    lone = Server(
        "--target",
        str(tiny_models["target_endless"]),
        "--no-draft",
        "-k",
        "0",
        "--ctx",
        "32768",
        "-t",
        "1",
        "--queue",
        "0",
    )
    try:
        idle = post(lone, "/v1/completions", key=None, json={"prompt": "a", "max_tokens": 4})
        assert idle.status_code == 200 and idle.json()["usage"]["completion_tokens"] == 4
        with httpx.Client(timeout=60) as http:
            running, _ = _open_stream(lone, http)
            busy = post(lone, "/v1/completions", key=None, json={"prompt": "a", "max_tokens": 4})
            assert busy.status_code == 503 and busy.json()["error"]["code"] == "queue_full"
            running.close()
        lone.wait_for("client gone")
        after = post(lone, "/v1/completions", key=None, json={"prompt": "b", "max_tokens": 2})
        assert after.status_code == 200
    finally:
        lone.stop()


def test_ctrl_c_finishes_the_running_reply_then_exits(tiny_models):
    # 4000 tokens take the tiny model most of a second: the signal lands while the reply runs
    draining = Server(
        "--target", str(tiny_models["target_endless"]), "--no-draft", "-k", "0", "--ctx", "8192", "-t", "1"
    )
    with httpx.Client(timeout=60) as http:
        _response, lines = _open_stream(draining, http, max_tokens=4000)
        draining.process.send_signal(signal.SIGINT)
        rest = [line for line in lines if line]
    assert rest[-1] == "data: [DONE]" and '"finish_reason":"length"' in rest[-2]
    assert '"completion_tokens":4000' in rest[-2]
    assert draining.process.wait(timeout=30) == 0
    draining.wait_for("stopped")
    assert "finishing 1 request" in "\n".join(draining.lines) and "Traceback" not in "\n".join(draining.lines)


def test_a_second_ctrl_c_stops_the_running_reply_at_once(tiny_models):
    stopping = Server(
        "--target", str(tiny_models["target_endless"]), "--no-draft", "-k", "0", "--ctx", "32768", "-t", "1"
    )
    with httpx.Client(timeout=60) as http:
        _, _lines = _open_stream(stopping, http)
        stopping.process.send_signal(signal.SIGINT)
        stopping.wait_for("finishing 1 request")
        stopping.process.send_signal(signal.SIGINT)
        assert stopping.process.wait(timeout=15) == 0
    line = stopping.wait_for("POST /v1/completions")
    assert "(interrupted)" in line and int(re.search(r"(\d+) tokens at", line).group(1)) < 30000
    stopping.wait_for("stopped")
    assert "Traceback" not in "\n".join(stopping.lines)


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
        assert second.model_dump()["specgen"]["prefilled_tokens"] == second.usage.prompt_tokens - 1 - cached


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
    slow by the first reply's one-token passes and measured again between requests."""
    args = ("--target", str(tiny_models["target"]), "--no-draft", "--ctx", "2048", "-t", "1", "-n", "40")
    env = {"SPECGEN_CACHE_DIR": str(tmp_path)}
    Server(*args, env=env).stop()  # measures this machine's costs and caches them
    cached = plant_slow_costs(tmp_path)
    slow = json.loads(cached.read_text())["verify"]
    running = Server(*args, env=env)
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
