"""What a bench prompt attached (`runner.attached_tokens`): the fenced blocks of its last user
message, in the target's tokens, as `run`, `chat` and `serve` find them; none in raw mode or
beside a prediction. Real tokenizer of the tiny target."""

from __future__ import annotations

from specgen.bench.prompts import BenchPrompt
from specgen.bench.runner import attached_tokens


def test_a_bench_prompt_attaches_the_fenced_blocks_of_its_last_user_message(target_model):
    fenced = "fix it\n```\ndef f(): pass\n```"
    expected = tuple(target_model.continuation("def f(): pass\n"))
    assert attached_tokens(target_model, BenchPrompt("a", "edit", fenced), raw=False) == expected
    turns = (("user", fenced), ("assistant", "ok"), ("user", "and now?"))
    earlier = BenchPrompt("b", "chat", "and now?", messages=turns)
    assert attached_tokens(target_model, earlier, raw=False) is None, "an earlier turn's block is not this message's"
    turn = BenchPrompt("c", "chat", fenced, messages=(("user", "hi"), ("assistant", "ok"), ("user", fenced)))
    assert attached_tokens(target_model, turn, raw=False) == expected
    assert attached_tokens(target_model, BenchPrompt("d", "edit", fenced), raw=True) is None
    assert attached_tokens(target_model, BenchPrompt("e", "edit", fenced, prediction="x"), raw=False) is None
