"""A request's prompt in the target's tokens: a completion's text or ids, a chat through the
model's template (a chat continuing one of the recent conversations reuses that conversation's
exact tokens, so its KV caches stay filled), a chat with tools through the template's own tool
prompt, a fill-in-the-middle prompt cut to fit, and the request's prediction (or, without one,
the text its last user message attached: `engine.attached`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from specgen.engine.attached import attached_text, last_user_text
from specgen.llama.conversation import Conversation, Prompt
from specgen.llama.model import ContextFull, Model
from specgen.llama.templates import ChatTemplate, TemplateError, model_template
from specgen.serve.infill import files_tokens, fim_prompt
from specgen.serve.wire import ApiError, GenRequest


@dataclass(frozen=True)
class Encoded:
    """A request's prompt tokens; for a user's chat turn also its Prompt and its conversation."""

    tokens: list[int]
    prompt: Prompt | None = None
    conversation: Conversation | None = None
    prediction: list[int] | None = None  # the request's prediction in the target's tokens
    truncated: bool = False  # a fill-in-the-middle prompt was cut to fit
    attached: list[int] | None = None  # the fenced blocks of the last user message (`engine.attached`), in tokens


class Prompts:
    """Turns requests into prompt tokens; a chat continuing one of the recent conversations reuses
    that conversation's exact tokens (several clients may take turns)."""

    def __init__(self, target: Model, limit: int, kept: int = 16):
        self.target = target
        self.limit = min(limit, target.n_ctx - 1)
        self.kept = kept
        self.conversations: list[Conversation] = []  # least recently used first
        self._template: ChatTemplate | None = None

    def encode(self, request: GenRequest, reply_tokens: int = 0) -> Encoded:
        """The request's prompt tokens; a fill-in-the-middle prompt for /infill is cut to leave
        room for `reply_tokens` (up to half the limit): the server's reply length, not the request's,
        so that an editor's requests share their cut and so their cache. Any other prompt over the
        limit is a 400."""
        if request.infill is not None:
            encoded = self._infill(request, reply_tokens)
        elif request.kind == "chat" and request.templated:
            encoded = Encoded(self._templated(request))
        elif request.kind == "chat":
            encoded = self._chat(request.messages)
        else:
            encoded = Encoded(self._completion(request.prompt))
        if not encoded.tokens:
            raise ApiError(400, "the prompt is empty; send some text", param="prompt")
        self._check(len(encoded.tokens), "messages" if request.kind == "chat" else "prompt")
        if request.prediction is not None:
            return replace(encoded, prediction=self._prediction(request.prediction))
        text = last_user_text(request.messages) if request.kind == "chat" else request.prompt
        attached = attached_text(text) if isinstance(text, str) and request.infill is None else ""
        return replace(encoded, attached=self.target.continuation(attached)) if attached else encoded

    def _prediction(self, text: str) -> list[int]:
        """A prediction in the target's tokens, as text the reply continues; a 400 when it is
        longer than the context."""
        tokens = self.target.continuation(text) if text else []
        if len(tokens) > self.target.n_ctx:
            raise ApiError(
                400,
                f"the prediction is {len(tokens)} tokens, longer than this server's "
                f"{self.target.n_ctx}-token context: shorten it, or restart serve with a larger --ctx",
                param="prediction",
                code="context_length_exceeded",
            )
        return tokens

    def remember(self, encoded: Encoded, text: str, tokens: list[int], whole: bool) -> None:
        """Keep a chat reply's tokens for the next turn; a reply cut short, or that the client
        never received, is not kept, and its conversation is forgotten."""
        if encoded.conversation is None:
            return
        if encoded.prompt is not None and whole:
            encoded.conversation.commit(encoded.prompt, text, tokens)
        else:
            self.forget(encoded.conversation)

    def forget(self, conversation: Conversation | None) -> None:
        if conversation in self.conversations:
            self.conversations.remove(conversation)

    def _chat(self, messages: tuple[tuple[str, str], ...]) -> Encoded:
        if self.target.chat_template() is None:
            raise ApiError(
                400,
                f"{self.target.path.name} has no chat template, so it cannot tell chat turns "
                "apart; use /v1/completions with the text as is",
                param="messages",
            )
        *history, (role, text) = messages
        if role != "user":
            return Encoded(self.target.encode_chat(list(messages)))
        conversation = self._conversation(history)
        try:
            prompt = conversation.prompt(text, 0)
        except ContextFull:
            prompt = None
        if prompt is None or prompt.dropped:
            self.forget(conversation)
            self._check(len(self.target.encode_chat(list(messages))), "messages")
            raise ApiError(
                400, "the messages do not fit in the context", param="messages", code="context_length_exceeded"
            )
        return Encoded(list(prompt.tokens), prompt, conversation)

    def template(self) -> ChatTemplate:
        """The target's own chat template, compiled on first use."""
        if self._template is None:
            try:
                self._template = model_template(self.target)
            except TemplateError as error:
                raise ApiError(400, f"{self.target.path.name}: {error}", param="messages") from None
            if self._template is None:
                raise ApiError(
                    400,
                    f"{self.target.path.name} has no chat template, so it cannot be sent tools or tool messages",
                    param="messages",
                )
        return self._template

    def _templated(self, request: GenRequest) -> list[int]:
        """A chat with tools or tool turns, through the model's own template (its tool prompt)."""
        template = self.template()
        tools = list(request.tools) if request.tool_choice != "none" else None
        if tools and template.format is None:
            raise ApiError(
                400,
                f"the chat template of {self.target.path.name} teaches no tool-call format specgen "
                "reads (Qwen2.5's <tool_call> blocks, Llama 3.1's JSON); send no tools, or tool_choice "
                "none",
                param="tools",
            )
        try:
            return self.target.encode_templated(template.render([dict(m) for m in request.chat], tools))
        except TemplateError as error:
            raise ApiError(400, f"{self.target.path.name}: {error}", param="messages") from None

    def _conversation(self, history: list[tuple[str, str]]) -> Conversation:
        """The recent conversation whose messages are `history`, or a new one, now the most recent."""
        found = next((c for c in self.conversations if c.messages == history), None)
        if found is None:
            found = Conversation(self.target)
            found.messages = list(history)
        self.forget(found)
        self.conversations = [*self.conversations, found][-self.kept :]
        return found

    def _infill(self, request: GenRequest, reply_tokens: int) -> Encoded:
        fim, infill = self.target.fim, request.infill
        assert infill is not None  # encode sends only fill-in-the-middle requests here
        param = "input_suffix" if request.kind == "infill" else "suffix"
        if not fim.usable:
            raise ApiError(
                400,
                f"this model has no fill-in-the-middle tokens; {self.target.path.name} cannot fill "
                "a gap: serve a code model that has them (Qwen2.5-Coder does), or send a completion "
                "without a suffix",
                param=param,
            )

        def tokenize(text: str) -> list[int]:
            return self.target.tokenize(text, add_special=False, parse_special=False)

        budget = self.limit - min(reply_tokens, self.limit // 2) if request.kind == "infill" else 2**31
        built = fim_prompt(
            fim,
            self.target.bos if self.target.add_bos else None,
            tokenize(infill.prefix),
            tokenize(infill.suffix),
            files_tokens(fim, tokenize, infill.extra),
            budget,
        )
        return Encoded(built.tokens, truncated=built.truncated)

    def _completion(self, prompt: str | tuple[int, ...]) -> list[int]:
        if isinstance(prompt, str):
            return self.target.tokenize(
                prompt, add_special=True, parse_special=True
            )  # a raw prompt, as llama.cpp reads one
        bad = next((t for t in prompt if not 0 <= t < self.target.n_vocab), None)
        if bad is not None:
            raise ApiError(
                400, f"token id {bad} is not in the vocabulary (0 to {self.target.n_vocab - 1})", param="prompt"
            )
        return list(prompt)

    def _check(self, count: int, param: str) -> None:
        if count > self.limit:
            raise ApiError(
                400,
                f"the prompt is {count} tokens; this server takes at most {self.limit} "
                f"(its context holds {self.target.n_ctx}): shorten it, or restart serve with a larger "
                "--ctx or --max-prompt-tokens",
                param=param,
                code="context_length_exceeded",
            )
