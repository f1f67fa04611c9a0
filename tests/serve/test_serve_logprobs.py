"""`logprobs` through the official `openai` client: on /v1/completions and /v1/chat/completions,
whole and streamed, each emitted token's log-probability and top ones are the target's own
(a plain forward pass of the target over prompt and reply, log-softmax computed here), with
OpenAI's shapes (bytes, text offsets); a stop string keeps only the tokens whose text was sent."""

from __future__ import annotations

import codecs

import numpy as np
import openai
import pytest
from servers import Server, tiny_pair

from specgen.decoding.loop import GenerationConfig, generate

MODEL = "tiny-target"


@pytest.fixture(scope="module")
def server(tiny_models):
    running = Server(
        *tiny_pair(tiny_models["target"], tiny_models["draft"]),
        "-n",
        "24",
    )
    yield running
    running.stop()


def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=60)


def expected(target, prompt: list[int], max_tokens: int, top: int) -> list[tuple[int, float, list[tuple[int, float]]]]:
    """(token, logprob, top ones) at each position of the target's greedy reply, from one forward pass."""
    events = list(generate(target, None, prompt, GenerationConfig(max_tokens, 0)))[:-1]
    reply = [t for e in events for t in e.tokens]
    target.truncate(0)
    rows = np.array(target.forward([*prompt, *reply], all_logits=True), dtype=np.float64)[len(prompt) - 1 : -1]
    target.truncate(0)
    rows -= rows.max(axis=1, keepdims=True)
    rows -= np.log(np.exp(rows).sum(axis=1, keepdims=True))
    return [
        (token, row[token], [(int(t), row[t]) for t in np.argsort(-row, kind="stable")[:top]])
        for token, row in zip(reply, rows, strict=True)
    ]


def text(target, token: int) -> str:
    return target.piece(token).decode("utf-8", errors="replace")


def test_completion_logprobs_are_the_targets_own_whole_and_streamed(server, target_model):
    prompt = "the print of self"
    want = expected(target_model, target_model.tokenize(prompt, True, False), 24, 3)
    api = client(server)
    reply = api.completions.create(model=MODEL, prompt=prompt, max_tokens=24, logprobs=3)
    got = reply.choices[0].logprobs
    assert got.tokens == [text(target_model, t) for t, _, _ in want]
    assert got.token_logprobs == pytest.approx([lp for _, lp, _ in want], abs=2e-3)
    for shown, (_, _, top) in zip(got.top_logprobs, want, strict=True):
        ones = {}
        for token, value in top:
            ones[text(target_model, token)] = value
        assert list(shown) == list(ones) and list(shown.values()) == pytest.approx(list(ones.values()), abs=2e-3)
    pieces = [target_model.piece(t) for t, _, _ in want]  # a token's text begins where the decoded text before it ends
    assert got.text_offset == [
        len(prompt) + len(codecs.getincrementaldecoder("utf-8")("replace").decode(b"".join(pieces[:i])))
        for i in range(len(pieces))
    ]
    assert reply.model_dump()["specgen"]["accepted"] > 0, "rows of multi-token verify batches were read"

    chunks = list(api.completions.create(model=MODEL, prompt=prompt, max_tokens=24, logprobs=3, stream=True))
    streamed = [c.choices[0].logprobs for c in chunks if c.choices and c.choices[0].logprobs]
    assert [t for s in streamed for t in s.tokens] == got.tokens
    assert [v for s in streamed for v in s.token_logprobs] == got.token_logprobs
    assert [o for s in streamed for o in s.text_offset] == got.text_offset


def test_chat_logprobs_carry_bytes_and_top_ones_whole_and_streamed(server, target_model):
    messages = [{"role": "user", "content": "def add"}]
    want = expected(target_model, target_model.encode_chat([("user", "def add")]), 24, 2)
    api = client(server)
    reply = api.chat.completions.create(model=MODEL, messages=messages, logprobs=True, top_logprobs=2)
    content = reply.choices[0].logprobs.content
    assert [c.bytes for c in content] == [list(target_model.piece(t)) for t, _, _ in want]
    assert [c.logprob for c in content] == pytest.approx([lp for _, lp, _ in want], abs=2e-3)
    assert [[t.bytes for t in c.top_logprobs] for c in content] == [
        [list(target_model.piece(t)) for t, _ in top] for _, _, top in want
    ]
    data = b"".join(bytes(c.bytes) for c in content)
    assert codecs.getincrementaldecoder("utf-8")("replace").decode(data) == reply.choices[0].message.content

    chunks = list(
        api.chat.completions.create(model=MODEL, messages=messages, logprobs=True, top_logprobs=2, stream=True)
    )
    streamed = [
        c for chunk in chunks if chunk.choices and chunk.choices[0].logprobs for c in chunk.choices[0].logprobs.content
    ]
    assert [(c.token, c.logprob) for c in streamed] == [(c.token, c.logprob) for c in content]
    plain = api.chat.completions.create(model=MODEL, messages=messages)
    assert plain.choices[0].logprobs is None and plain.choices[0].message.content == reply.choices[0].message.content


def test_a_stop_string_keeps_the_logprobs_of_the_text_sent(server):
    api = client(server)
    whole = api.completions.create(model=MODEL, prompt="if self", max_tokens=24, logprobs=0)
    cut = whole.choices[0].text[5:7]
    stopped = api.completions.create(model=MODEL, prompt="if self", max_tokens=24, logprobs=0, stop=cut)
    sent = stopped.choices[0].text
    tokens = stopped.choices[0].logprobs.tokens
    assert sent == whole.choices[0].text[: whole.choices[0].text.index(cut)]
    assert "".join(tokens).startswith(sent) and len("".join(tokens[:-1])) < len(sent) <= len("".join(tokens))
    assert tokens == whole.choices[0].logprobs.tokens[: len(tokens)]


@pytest.mark.parametrize(
    "extra, param", [({"top_logprobs": 2}, "top_logprobs"), ({"logprobs": True, "top_logprobs": 21}, "top_logprobs")]
)
def test_top_logprobs_out_of_bounds_or_alone_is_a_400(server, extra, param):
    with pytest.raises(openai.BadRequestError) as error:
        client(server).chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}], **extra)
    assert error.value.body["param"] == param
