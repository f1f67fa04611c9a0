"""The text the offline replay follows as attached (`tests/replaypredictions.py`): the fenced
blocks of a recorded ChatML prompt's last user turn, as the product finds them in a user's
message, so that the replay follows what `run`, `chat`, `serve` and `bench` would."""

from __future__ import annotations

from replaypredictions import attached_of, last_user_message

from specgen.decoding.drafters.base import Source, Vocabulary

START, END = 0, 1  # control tokens: no text
WORDS = ["", "", "system\n", "user\n", "assistant\n", "be brief", "fix it\n", "```\n", "x = 1\n", "ok", "again"]


def vocabulary() -> Vocabulary:
    """One token per entry of WORDS (a byte-level stand-in for the target's vocabulary)."""
    ids = {word: i for i, word in enumerate(WORDS) if word}

    def tokenize(text: str) -> list[int]:
        out = []
        while text:
            word = next(w for w in sorted(ids, key=len, reverse=True) if text.startswith(w))
            out.append(ids[word])
            text = text[len(word) :]
        return out

    return Vocabulary(lambda token: WORDS[token].encode(), tokenize)


def chatml(*turns: tuple[str, list[str]]) -> list[int]:
    """A ChatML prompt: each turn between control tokens, then the assistant's opening."""
    words = vocabulary()
    return [t for role, parts in turns for t in (START, *words.tokenize(role + "\n" + "".join(parts)), END)] + [
        START,
        *words.tokenize("assistant\n"),
    ]


def test_the_replay_attaches_the_fenced_blocks_of_the_last_user_turn_only():
    words = vocabulary()
    fenced = ["fix it\n", "```\n", "x = 1\n", "```\n"]
    prompt = chatml(("system", ["be brief"]), ("user", fenced))
    assert last_user_message(prompt, words) == "fix it\n```\nx = 1\n```\n"
    attached = attached_of(prompt, words)
    assert attached is not None and attached.name == Source.ATTACHED
    assert attached.tokens == words.tokenize("x = 1\n")
    later = chatml(("user", fenced), ("assistant", ["ok"]), ("user", ["again"]))
    assert last_user_message(later, words) == "again" and attached_of(later, words) is None
    assert attached_of(prompt, None) is None, "without the vocabulary nothing is read"
