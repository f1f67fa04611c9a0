"""A multi-turn conversation kept as the exact tokens both models already hold in their caches.

Re-tokenizing the templated history each turn would not always give back the tokens the model
generated (a reply is sampled token by token, the tokenizer may merge its text differently), and
every token that differs from the cache forces the rest of the history to be prefilled again.
So the conversation keeps the tokens it sent and the tokens it received, and each new turn adds
only the template's text after them (end of the reply, the user's message, the assistant's
header). That suffix is what the template writes after the last reply's text (llama.markup
keeps every text apart from the markup, so a reply whose text does not survive the template, a
NUL byte ends a C string, still keeps its tokens). `Model.sync` then finds the whole history
cached and prefills just the suffix. When the template rewrites the history, old turns are
dropped to make room, or a saved conversation is restored, the conversation is encoded afresh
and `sync` reuses whatever prefix still matches. Old turns are dropped in one step: the
conversation is encoded once, the tokens each turn took are read off that encoding, and the
oldest turns that must go are known before the one encoding of what stays (so a long history
costs a few encodings, not one per turn dropped). At most MAX_MESSAGES messages are kept.
Taking the newest turn back (to generate its reply again) returns to the exact tokens held
before it, so the same message gives the same prompt and its prefill is cached.
"""

from __future__ import annotations

from dataclasses import dataclass

from specgen.llama.markup import Encoded, Templated
from specgen.llama.model import MAX_MESSAGES, ContextFull, Model


@dataclass(frozen=True)
class Prompt:
    """The tokens to send for one user message, and the history they carry."""

    user: str
    tokens: tuple[int, ...]
    templated: Templated  # the templated conversation these tokens stand for
    history: tuple[tuple[str, str], ...]  # the messages before `user` that still fit
    dropped: int  # oldest turns left out so that the prompt and a reply fit in the context


class Conversation:
    """Messages with the chat template of `model`, and the token history its cache should hold."""

    def __init__(self, model: Model, system: str | None = None):
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
        self._prompt: Templated | None = None  # the templated prompt that the last reply answered
        self._before_last: tuple[list[tuple[str, str]], list[int], Templated | None] | None = None  # for `undo`

    @property
    def turns(self) -> int:
        return sum(role == "user" for role, _ in self.messages)

    def prompt(self, user: str, reserve: int) -> Prompt:
        """Tokens for the history plus `user`, leaving out oldest turns until `reserve` tokens are left.

        Nothing changes until `commit`; raises ContextFull when the message cannot fit even alone.
        """
        first = 1 if self.system else 0
        history = list(self.messages)
        dropped = min(max(0, len(history) + 2 - MAX_MESSAGES) // 2, (len(history) - first + 1) // 2)
        del history[first : first + 2 * dropped]  # the oldest turns past the cap
        room = self.model.n_ctx - reserve
        templated = self.model.chat_parts([*history, ("user", user)])
        tokens = self._reused(templated) if not dropped else None
        if tokens is None or len(tokens) > room:
            encoded = self.model.encode_parts(templated)
            tokens = encoded.tokens
            while len(tokens) > room and len(history) > first:
                turns = max(1, _turns_to_drop(encoded, templated, first, len(history), len(tokens) - room))
                del history[first : first + 2 * turns]
                dropped += turns
                templated = self.model.chat_parts([*history, ("user", user)])
                encoded = self.model.encode_parts(templated)
                tokens = encoded.tokens
        if len(tokens) >= self.model.n_ctx:
            raise ContextFull(
                f"this message needs {len(tokens)} tokens but the context holds {self.model.n_ctx}; "
                "shorten it, or restart chat with a larger --ctx"
            )
        return Prompt(user, tuple(tokens), templated, tuple(history), dropped)

    def commit(self, prompt: Prompt, reply_text: str, reply_tokens: list[int]) -> None:
        """Record a finished (or interrupted) reply to `prompt` as the newest turn."""
        self._before_last = (self.messages, self.tokens, self._prompt)
        self.messages = [*prompt.history, ("user", prompt.user), ("assistant", reply_text)]
        self.tokens = [*prompt.tokens, *reply_tokens]
        self._prompt = prompt.templated

    def undo(self) -> str | None:
        """Take back the newest turn and return its user message; None when there is no reply to take back."""
        if len(self.messages) < 2 or self.messages[-1][0] != "assistant":
            return None
        user = self.messages[-2][1]
        if self._before_last is not None:
            self.messages, self.tokens, self._prompt = self._before_last
        else:  # a restored conversation: encoded afresh
            self.messages, self.tokens, self._prompt = self.messages[:-2], [], None
        self._before_last = None
        return user

    def _reused(self, templated: Templated) -> list[int] | None:
        """The cached tokens plus what the template writes after the last reply, or None where it
        wrote the history otherwise than in the prompt that the reply answered (or there is none)."""
        old = self._prompt
        if not self.tokens or old is None or not self.messages or self.messages[-1][0] != "assistant":
            return None
        last, parts, reply = len(old.parts) - 1, templated.parts, len(self.messages) - 1
        if len(parts) <= last or parts[:last] != old.parts[:last] or not parts[last].startswith(old.parts[last]):
            return None
        if parts[last] == old.parts[last] and len(parts) > last + 2 and templated.owners[last // 2] == reply:
            suffix = parts[last + 2 :]
        elif parts[last] != old.parts[last] and reply not in templated.owners:  # an empty reply: no text of its own
            suffix = (parts[last][len(old.parts[last]) :], *parts[last + 1 :])
        else:
            return None
        return [*self.tokens, *self.model.encode_parts(Templated(suffix, ()), whole=False).tokens]


def _turns_to_drop(encoded: Encoded, templated: Templated, first: int, count: int, excess: int) -> int:
    """How many of the oldest turns (user and assistant) took at least `excess` tokens of
    `encoded`: a turn runs from the end of the text before it to the end of its reply's text."""
    ends: dict[int, int] = {}  # message -> byte offset where its text ends
    at = 0
    for index, part in enumerate(templated.parts):
        at += len(part.encode("utf-8"))
        if index % 2 == 1:
            ends[templated.owners[index // 2]] = at
    for message in range(count):  # a message without text ends where the one before it ended
        ends.setdefault(message, ends.get(message - 1, 0))
    start = encoded.tokens_before(ends[first - 1]) if first else 0
    turns = 0
    for turns, reply in enumerate(range(first + 1, count, 2), start=1):
        if encoded.tokens_before(ends[reply]) - start >= excess:
            return turns
    return max(turns, 1)
