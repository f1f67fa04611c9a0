"""Text that continues an output tokenizes to exactly its own bytes, on a SentencePiece
vocabulary that puts a space before text of its own (the tiny models' does)."""

from __future__ import annotations

import pytest


def text_of(model, tokens) -> bytes:
    return b"".join(model.piece(t) for t in tokens)


def test_this_vocabulary_puts_a_space_before_text_of_its_own(target_model):
    assert text_of(target_model, target_model.tokenize("abc", False, False)) == b" abc"


@pytest.mark.parametrize("text", ["abc def", " abc", "\nx = 1", "| a |\n| b |", "\n\n  y"])
def test_a_continuation_tokenizes_to_its_own_bytes(target_model, text):
    assert text_of(target_model, target_model.continuation(text)) == text.encode()
