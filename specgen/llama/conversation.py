"""A multi-turn conversation kept as the exact tokens both models already hold in their caches.

Re-tokenizing the templated history each turn would not always give back the tokens the model
generated (a reply is sampled token by token, the tokenizer may merge its text differently), and
every token that differs from the cache forces the rest of the history to be prefilled again.
So the conversation keeps the tokens it sent and the tokens it received, and each new turn adds
only the template's text after them (end of the reply, the user's message, the assistant's
header). That suffix is found by rendering the conversation with a placeholder for the last
reply, so a reply whose text does not survive the template (a NUL byte ends a C string) still
keeps its tokens. `Model.sync` then finds the whole history cached and prefills just the suffix.
When the template rewrites the history, old turns are dropped to make room, or a saved
conversation is restored, the conversation is encoded afresh and `sync` reuses whatever prefix
still matches. Taking the newest turn back (to generate its reply again) returns to the exact
tokens held before it, so the same message gives the same prompt and its prefill is cached.
"""

from __future__ import annotations

from dataclasses import dataclass

from specgen.llama.model import ContextFull

REPLY = "\ue000specgen-reply\ue001"  # private-use characters: no model writes this


@dataclass(frozen=True)
class Prompt:
    """The tokens to send for one user message, and the history they carry."""

    user: str
    tokens: tuple[int, ...]
    text: str  # the templated conversation these tokens stand for
    history: tuple[tuple[str, str], ...]  # the messages before `user` that still fit
    dropped: int  # oldest turns left out so that the prompt and a reply fit in the context


class Conversation:
    """Messages with the chat template of `model`, and the token history its cache should hold."""

    def __init__(self, model, system: str | None = None):
        self.model = model
        self.system = system
        self.reset()

    def reset(self) -> None:
        """Forget every turn; the system prompt stays."""
        self.restore([("system", self.system)] if self.system else [])

    def restore(self, messages: list[tuple[str, str]]) -> None:
        """Take up `messages` (a system message first, if any, then user and assistant in turns)."""
        self.system = messages[0][1] if messages and messages[0][0] == "system" else None
        self.messages: list[tuple[str, str]] = list(messages)
        self.tokens: list[int] = []  # empty: the next prompt is encoded afresh
        self._prompt_text = ""  # the templated text of the prompt that the last reply answered
        self._before_last: tuple[list[tuple[str, str]], list[int], str] | None = None  # for `undo`

    @property
    def turns(self) -> int:
        return sum(role == "user" for role, _ in self.messages)

    def prompt(self, user: str, reserve: int) -> Prompt:
        """Tokens for the history plus `user`, leaving out oldest turns until `reserve` tokens are left.

        Nothing changes until `commit`; raises ContextFull when the message cannot fit even alone.
        """
        history = list(self.messages)
        first = 1 if self.system else 0
        dropped = 0
        tokens, text = self._encode([*history, ("user", user)], reuse=True)
        while len(tokens) + reserve > self.model.n_ctx and len(history) > first:
            del history[first : first + 2]
            dropped += 1
            tokens, text = self._encode([*history, ("user", user)], reuse=False)
        if len(tokens) >= self.model.n_ctx:
            raise ContextFull(
                f"this message needs {len(tokens)} tokens but the context holds {self.model.n_ctx}; "
                "shorten it, or restart chat with a larger --ctx"
            )
        return Prompt(user, tuple(tokens), text, tuple(history), dropped)

    def commit(self, prompt: Prompt, reply_text: str, reply_tokens: list[int]) -> None:
        """Record a finished (or interrupted) reply to `prompt` as the newest turn."""
        self._before_last = (self.messages, self.tokens, self._prompt_text)
        self.messages = [*prompt.history, ("user", prompt.user), ("assistant", reply_text)]
        self.tokens = [*prompt.tokens, *reply_tokens]
        self._prompt_text = prompt.text

    def undo(self) -> str | None:
        """Take back the newest turn and return its user message; None when there is no reply to take back."""
        if len(self.messages) < 2 or self.messages[-1][0] != "assistant":
            return None
        user = self.messages[-2][1]
        if self._before_last is not None:
            self.messages, self.tokens, self._prompt_text = self._before_last
        else:  # a restored conversation: encoded afresh
            self.messages, self.tokens, self._prompt_text = self.messages[:-2], [], ""
        self._before_last = None
        return user

    def _encode(self, messages: list[tuple[str, str]], reuse: bool) -> tuple[list[int], str]:
        """The cached tokens plus the template's new suffix, or a fresh encoding if history changed.

        With `reuse`, messages are self.messages plus the new user message.
        """
        text = self.model.apply_chat_template(messages)
        if reuse and self.tokens:
            masked = self.model.apply_chat_template([*messages[:-2], ("assistant", REPLY), messages[-1]])
            head = self._prompt_text + REPLY
            if masked.startswith(head):
                suffix = self.model.tokenize(masked[len(head) :], add_special=False, parse_special=True)
                return [*self.tokens, *suffix], text
        return self.model.encode_chat(messages), text
