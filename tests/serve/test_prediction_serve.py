"""OpenAI's Predicted Outputs in `specgen serve`, through the official `openai` client's
`prediction=`: the reply is the target's own, the usage's accepted and rejected prediction
tokens have OpenAI's meanings (in whole and streamed replies), the rounds draft from the
prediction, a request sent again drafts from its last reply, one without a prediction from the
code its message fenced, and a prediction of the wrong shape or longer than the context is a 400.

The target writes one character per token (digits and punctuation, each token following from the
one before alone), so a prediction's tokens are its characters and the expected counts come from
a longest common subsequence of characters computed here by the textbook dynamic programme."""

from __future__ import annotations

import string

import openai
import pytest
from servers import KEY, Server, client, pinned_costs, post

WALK = [{"role": "user", "content": "walk"}]


def walk(tag: str) -> list[dict]:
    """A prompt of its own for one test. The target's reply depends on the template's last token
    alone, so every such prompt gets `alone`'s text; a prompt sent before would make a greedy
    request follow the reply it got in the place of its prediction."""
    return [{"role": "user", "content": f"walk {tag}"}]


LENGTH = 40
MODEL = "tiny-target_fim_context_free"  # the served id: the file's name


@pytest.fixture(scope="module")
def server(tiny_models, tmp_path_factory):
    """Step costs pinned flat (`pinned_costs`): a pass costs what a one-token pass does whatever
    its size, so the loss bound lets a prediction's copies in however busy the machine was when
    the costs were measured, and every reply below drafts from it."""
    args = ("--target", str(tiny_models["target_fim_context_free"]), "--no-draft", "--ctx", "512", "-t", "1")
    running = Server(*args, keys=KEY, env=pinned_costs(tmp_path_factory.mktemp("costs"), *args, flat=True))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def alone(server) -> str:
    reply = client(server).chat.completions.create(model=MODEL, messages=WALK, max_tokens=LENGTH, temperature=0)
    text = reply.choices[0].message.content
    assert len(text) == reply.usage.completion_tokens == LENGTH and set(text) <= set(string.digits + string.punctuation)
    assert reply.usage.completion_tokens_details.accepted_prediction_tokens == 0
    return text


def common_subsequence(a: str, b: str) -> int:
    """The length of a longest common subsequence, by the O(len(a) * len(b)) table."""
    row = [0] * (len(b) + 1)
    for x in a:
        diagonal, row[0] = 0, 0
        for j, y in enumerate(b, 1):
            diagonal, row[j] = row[j], diagonal + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


def edited(text: str) -> str:
    """The text with a character it never writes put in, and three of its own left out."""
    unused = next(c for c in string.digits + string.punctuation if c not in text)
    return text[:8] + unused + text[8:20] + text[23:]


@pytest.mark.parametrize("which", ["same", "edited"])
def test_a_chat_with_a_prediction_gives_the_same_text_and_openais_counts(server, alone, which):
    predicted = alone if which == "same" else edited(alone)
    reply = client(server).chat.completions.create(
        model=MODEL,
        messages=walk(which),
        max_tokens=LENGTH,
        temperature=0,
        seed=7,  # seeded: auto decides from the pinned costs alone, not from how fast rounds ran under load
        prediction={"type": "content", "content": predicted},
    )
    assert reply.choices[0].message.content == alone
    details = reply.usage.completion_tokens_details
    assert details.accepted_prediction_tokens == common_subsequence(predicted, alone)
    assert details.accepted_prediction_tokens + details.rejected_prediction_tokens == len(predicted)
    stats = reply.model_dump()["specgen"]["prediction"]
    assert stats["tokens"] == len(predicted) and 0 < stats["kept"] <= details.accepted_prediction_tokens, stats
    # a whole prediction is copied whole; after an edited one breaks, drafts go on only as far as
    # the step costs the server measured at start-up afford (less on a loaded machine)
    if which == "same":
        assert stats["kept"] > LENGTH // 2, stats


def test_a_streamed_chat_carries_the_counts_in_its_usage_chunk(server, alone):
    predicted = edited(alone)
    chunks = list(
        client(server).chat.completions.create(
            model=MODEL,
            messages=walk("streamed"),
            max_tokens=LENGTH,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
            prediction={"type": "content", "content": predicted},
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == alone
    details = chunks[-1].usage.completion_tokens_details
    assert details.accepted_prediction_tokens == common_subsequence(predicted, alone)
    assert details.rejected_prediction_tokens == len(predicted) - details.accepted_prediction_tokens
    assert chunks[-1].model_dump()["specgen"]["prediction"]["kept"] > 0  # the served prediction really drafted


def test_a_completion_takes_a_prediction_in_text_parts(server, alone):
    parts = [{"type": "text", "text": alone[:10]}, {"type": "text", "text": alone[10:]}]
    reply = client(server).completions.create(
        model=MODEL,
        prompt="walk completion",
        max_tokens=LENGTH,
        temperature=0,
        extra_body={"prediction": {"type": "content", "content": parts}},
    )
    text = reply.choices[0].text
    details = reply.usage.completion_tokens_details
    assert details.accepted_prediction_tokens == common_subsequence(alone, text)
    assert details.accepted_prediction_tokens + details.rejected_prediction_tokens == LENGTH
    assert reply.model_dump()["specgen"]["prediction"]["kept"] > 0  # the served prediction really drafted


def test_the_same_request_again_follows_its_last_reply_and_counts_no_prediction(server, alone):
    """A request whose prompt this client sent before (`alone` sent this one) drafts from the
    reply that prompt got (`specgen.sources.repeat`): without a prediction, and greedy in the
    place of the one it gives (then the same prompt gives the same reply), whose usage counts are
    OpenAI's all the same; sampled, its prediction. A prompt not sent before drafts from none."""

    def ask(messages: list[dict], temperature: float = 0.0, predicted: str | None = None) -> dict:
        extra = {"prediction": {"type": "content", "content": predicted}} if predicted is not None else {}
        reply = client(server).chat.completions.create(  # seeded: decided from the pinned costs alone
            model=MODEL, messages=messages, max_tokens=LENGTH, temperature=temperature, seed=7, **extra
        )
        return reply.model_dump()

    again = ask(WALK)
    assert again["choices"][0]["message"]["content"] == alone
    stats = again["specgen"]
    assert stats["sources"]["repeat"]["kept"] > LENGTH // 2 and stats["prediction"] is None, stats
    assert again["usage"]["completion_tokens_details"]["accepted_prediction_tokens"] == 0
    predicted = ask(WALK, predicted=edited(alone))
    assert predicted["choices"][0]["message"]["content"] == alone
    assert predicted["specgen"]["sources"]["repeat"]["kept"] > LENGTH // 2
    assert predicted["specgen"]["prediction"]["kept"] == 0
    details = predicted["usage"]["completion_tokens_details"]
    assert details["accepted_prediction_tokens"] == common_subsequence(edited(alone), alone)
    sampled = ask(WALK, temperature=1.0, predicted=alone)
    assert "repeat" not in sampled["specgen"]["sources"] and sampled["specgen"]["prediction"]["drafted"] > 0
    assert "repeat" not in ask(walk("never sent"))["specgen"]["sources"]


def test_a_fenced_block_in_the_last_user_message_is_followed_without_counting_as_a_prediction(server, alone):
    """Without a prediction, auto follows the text the last user message fenced
    (`specgen.sources.attached`): a reply that reprints it copies it, the usage counts no
    prediction; given a prediction, that is followed instead."""
    fenced = [{"role": "user", "content": f"walk, fenced\n```\n{alone}\n```"}]
    reply = client(server).chat.completions.create(
        model=MODEL, messages=fenced, max_tokens=LENGTH, temperature=0, seed=7
    )
    stats = reply.model_dump()["specgen"]
    assert reply.choices[0].message.content == alone
    assert stats["sources"]["attached"]["kept"] > LENGTH // 2 and stats["prediction"] is None, stats
    assert reply.usage.completion_tokens_details.accepted_prediction_tokens == 0
    fenced = [{"role": "user", "content": f"walk, fenced and predicted\n```\n{alone}\n```"}]
    predicted = client(server).chat.completions.create(
        model=MODEL,
        messages=fenced,
        max_tokens=LENGTH,
        temperature=0,
        seed=7,
        prediction={"type": "content", "content": alone},
    )
    stats = predicted.model_dump()["specgen"]
    assert "attached" not in stats["sources"] and stats["sources"]["prediction"]["kept"] > LENGTH // 2, stats


@pytest.mark.parametrize(
    "prediction, param",
    [
        ({"type": "text", "content": "x"}, "prediction.type"),
        ({"type": "content", "content": 7}, "prediction.content"),
        ({"type": "content", "content": [{"type": "image_url", "image_url": "x"}]}, "prediction.content[0]"),
        ("the text", "prediction"),
    ],
)
def test_a_prediction_of_the_wrong_shape_is_a_400_naming_it(server, prediction, param):
    with pytest.raises(openai.BadRequestError) as caught:
        client(server).chat.completions.create(model=MODEL, messages=WALK, max_tokens=4, prediction=prediction)
    assert caught.value.body["param"] == param and "prediction" in caught.value.body["message"]


def test_a_prediction_longer_than_the_context_is_a_400(server):
    reply = post(
        server,
        "/v1/chat/completions",
        json={"messages": WALK, "max_tokens": 4, "prediction": {"type": "content", "content": "0123456789" * 60}},
    )
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["param"] == "prediction" and error["code"] == "context_length_exceeded", error
