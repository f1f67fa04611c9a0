"""`specgen serve` as its clients meet it through the official `openai` package: streamed and not,
chat and completions, stop strings, the KV cache reused across turns, concurrency and the access log."""

from __future__ import annotations

import re
import threading

import httpx
import pytest
from servers import KEY, client, post, reference

from specgen.llama.conversation import Conversation
from specgen.llama.model import LoadOptions, Model
from specgen.serve.prompts import Prompts
from specgen.serve.stops import StopMatcher
from specgen.serve.wire import ApiError, GenRequest

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
    assert second.model_dump()["specgen"]["prefilled_tokens"] <= second.usage.prompt_tokens - history + 1

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
