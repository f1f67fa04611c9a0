"""A stand-in target that writes a given text, one character a token, whatever is drafted: for
tests of what copy sources offer and keep on long replies, where the real tiny models would
write something else. Greedy decoding of it emits exactly its text, so a test can compare
drafters by the target passes they take."""

from __future__ import annotations

import numpy as np


class WritesBack:
    """A stand-in target whose greedy choice after the prompt and i output tokens is token i of
    `output`; it counts its passes."""

    def __init__(self, prompt: list[int], output: list[int]):
        self.truth, self.tokens, self.passes = [*prompt, *output, 0], [], 0
        self.vocabulary, self.n_ctx = max(self.truth) + 1, len(self.truth) + 64

    def start(self, prompt):
        """The prompt in the cache (the prefill, not counted as a pass), and its last token's row."""
        self.tokens = list(prompt)
        return self.rows(len(prompt) - 1, 1), len(prompt)

    def truncate(self, n_keep):
        del self.tokens[n_keep:]

    def forward(self, tokens, all_logits):
        start, self.passes = len(self.tokens), self.passes + 1
        self.tokens.extend(tokens)
        return self.rows(start, len(tokens))

    def rows(self, start, count):
        """The logits rows of `count` tokens from position `start`: each says the next token written."""
        rows = np.zeros((count, self.vocabulary), dtype=np.float32)
        for i in range(count):
            rows[i, self.truth[min(start + i + 1, len(self.truth) - 1)]] = 1.0
        return rows

    def is_eog(self, token):
        return False

    def piece(self, token):
        return chr(token).encode()
