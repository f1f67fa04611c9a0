"""The `specgen chat` session: read a line, run a slash command or a turn, show the reply.

The models stay loaded and their KV caches stay filled between turns (the Conversation keeps
the tokens they hold), so each turn prefills only the new message. A turn is the speculative
loop's events handed to a view (live.RichView or live.PlainView); Ctrl-C stops the reply and
keeps the chat, Ctrl-D or /quit leaves, and a full context is a notice with a way on.
"""

from __future__ import annotations

import contextlib
import math
import sys
from dataclasses import dataclass, field, replace

from specgen.decoding.events import Tally
from specgen.decoding.loop import GenerationConfig, generate
from specgen.decoding.tokens import MAX_DRAFT_TOKENS
from specgen.errors import SpecgenError
from specgen.llama.calibrate import base_drafter, drafter_for
from specgen.llama.conversation import Conversation
from specgen.llama.lookup_cache import new_memory
from specgen.llama.model import ContextFull, LoadOptions
from specgen.llama.pair import open_models
from specgen.llama.rpc import placement
from specgen.models.paths import ModelPaths
from specgen.terminal.live import PlainView, Reply, RichView, make_view

PROMPT = "you> "
HELP = """commands:
  /help     this list
  /reset    forget the conversation (the system prompt stays)
  /stats    totals for this chat, context use, the last turn's prefill
  /k N      draft N tokens per round (0: the target alone; auto: choose each round)
  /temp T   sampling temperature (0: greedy)
  /quit     leave (also /exit, Ctrl-D); Ctrl-C stops a reply and keeps the chat"""


@dataclass(frozen=True)
class ChatOptions:
    config: GenerationConfig
    auto: bool  # the auto policy chooses each round, up to config.draft_tokens
    system: str | None = None
    show_rejected: bool = False
    plain: bool = False


@dataclass
class Totals:
    """Counts over every reply of the chat, for /stats."""

    tally: Tally = field(default_factory=Tally)  # fed every round of every reply
    replies: int = 0
    decode_s: float = 0.0
    last: Reply | None = None

    def add(self, reply: Reply) -> None:
        self.replies += 1
        self.decode_s += reply.summary.decode_s
        self.last = reply


def run_chat(paths: ModelPaths, load: LoadOptions, options: ChatOptions) -> None:
    """Load the models, then chat until /quit or end of input."""
    view = make_view(options.plain, options.show_rejected)
    with open_models(paths, load) as (target, draft):
        require_template(target)
        if load.rpc:
            print(f"specgen: {placement(target.layers, draft.layers if draft else None)}", file=sys.stderr)
        chat = Chat(target, base_drafter(draft), options, view)
        chat.loop(read_lines(PROMPT))


def require_template(target) -> None:
    """Fail before the first turn if the model has no chat template llama.cpp can apply."""
    problem = "has no chat template" if target.chat_template() is None else ""
    if not problem:
        try:
            target.apply_chat_template([("user", "hi")])
        except SpecgenError:
            problem = "has a chat template llama.cpp does not know"
    if problem:
        raise SpecgenError(
            f"{target.path.name} {problem}, so chat cannot tell the turns apart; "
            "use 'specgen run --raw' for plain completion"
        )


def read_lines(prompt: str):
    """A reader returning the next line (None at the end): prompted on a terminal, plain from a pipe."""
    if not sys.stdin.isatty():
        return _read_pipe
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401 - gives input() line editing and history

    def read() -> str | None:
        try:
            if sys.stdout.isatty():
                return input(prompt)
            sys.stderr.write(prompt)
            sys.stderr.flush()
            return input()
        except EOFError:
            sys.stderr.write("\n")
            return None

    return read


def _read_pipe() -> str | None:
    line = sys.stdin.readline()
    return line.rstrip("\n") if line else None


class Chat:
    """One chat: the conversation, the generation settings /k and /temp change, and the totals."""

    def __init__(self, target, drafter, options: ChatOptions, view: RichView | PlainView):
        """`drafter`: the draft model's, or copying's where there is no draft model."""
        self.target, self.drafter, self.view = target, drafter, view
        self.config, self.auto = options.config, options.auto
        self.auto_cap = options.config.draft_tokens
        self.conversation = Conversation(target, options.system)
        self.memory = new_memory()  # earlier replies, also those /reset forgot, for copy drafting
        self.totals = Totals()
        self.commands = {"/help": self.help, "/reset": self.reset, "/stats": self.stats,
                         "/k": self.set_k, "/temp": self.set_temp}

    @property
    def k(self) -> int:
        return self.config.draft_tokens if self.drafter else 0

    def loop(self, read) -> None:
        """Turns and commands until /quit or the end of input."""
        self.view.welcome(self.welcome())
        while True:
            try:
                line = read()
                if line is None or line.strip() in ("/quit", "/exit"):
                    return
                self.dispatch(line.strip())
            except KeyboardInterrupt:
                self.view.notice("\n(Ctrl-D or /quit leaves)")

    def dispatch(self, line: str) -> None:
        if line.startswith("/"):
            self.command(line)
        elif line:
            self.turn(line)

    def k_label(self) -> str:
        if not self.k:
            return "the target alone"
        return f"K auto ≤{self.k}" if self.auto else f"K {self.k}"

    def welcome(self) -> str:
        drafted = "no draft model"
        if self.drafter:
            drafted = f"drafted by {self.drafter.model.path.name} ({self.k_label()})"
        return f"chat with {self.target.path.name}, {drafted}; /help for commands, Ctrl-D or /quit leaves"

    def turn(self, text: str) -> None:
        """Send one user message and show the reply; a full context becomes a notice."""
        reserve = min(self.config.max_tokens, self.target.n_ctx // 4)
        try:
            prompt = self.conversation.prompt(text, reserve)
        except ContextFull as error:
            self.view.notice(str(error))
            return
        if prompt.dropped:
            self.view.notice(
                f"context full: forgot the oldest {prompt.dropped} turn(s) to make room (/reset starts over)"
            )
        drafter = drafter_for(self.target, self.drafter, self.config, self.auto, (self.memory.index,))
        events = generate(self.target, drafter, list(prompt.tokens), self.config)
        reply = self.view.render(events, self.k, self.auto, self.totals.tally)
        self.memory.add(list(reply.tokens))
        self.conversation.commit(prompt, reply.text, list(reply.tokens))
        self.totals.add(reply)
        if reply.summary.stop_reason == "context":
            self.view.notice(
                f"the {self.target.n_ctx}-token context is full; your next message will drop the oldest turns "
                "(or /reset to start over)"
            )

    def command(self, line: str) -> None:
        name, _, argument = line.partition(" ")
        action = self.commands.get(name.lower())
        if action is None:
            self.view.notice(f"unknown command {name}; /help lists them")
        else:
            action(argument.strip())

    def help(self, _: str) -> None:
        self.view.info(HELP)

    def reset(self, _: str) -> None:
        self.conversation.reset()
        self.view.info("conversation cleared" + (" (the system prompt stays)" if self.conversation.system else ""))

    def stats(self, _: str) -> None:
        t, counts = self.totals, self.totals.tally
        rate = f"{counts.acceptance_rate:.0%} ({counts.accepted}/{counts.drafted})" if counts.drafted else "–"
        speed = counts.tokens / t.decode_s if t.decode_s else 0.0
        lines = [
            f"{t.replies} replies, {counts.tokens} tokens at {speed:.1f} tok/s, draft acceptance {rate}",
            f"turns in the conversation: {self.conversation.turns}, {len(self.conversation.tokens)} tokens "
            f"(the context holds {self.target.n_ctx})",
            f"{self.k_label()}, temperature {self.config.sampling.temperature:g}",
        ]
        if t.last is not None:
            first = t.last.first_token_s
            lines.append(f"last turn: prefilled {t.last.summary.prefilled_tokens} tokens, first token after "
                         + (f"{first:.3f}s" if first is not None else "–"))
        self.view.info("\n".join(lines))

    def set_k(self, argument: str) -> None:
        if argument.lower() == "auto":
            self.config, self.auto = replace(self.config, draft_tokens=self.auto_cap), True
            self.view.info(f"K = auto (each round chooses 0 to {self.auto_cap})")
        elif argument.isdigit() and int(argument) <= MAX_DRAFT_TOKENS:
            self.config, self.auto = replace(self.config, draft_tokens=int(argument)), False
            self.view.info(f"K = {argument}" + (" (the target alone)" if int(argument) == 0 else ""))
        else:
            self.view.notice(f"/k needs a whole number from 0 to {MAX_DRAFT_TOKENS} (0: the target alone), or auto")

    def set_temp(self, argument: str) -> None:
        try:
            temp = float(argument)
        except ValueError:
            temp = -1.0
        if not (math.isfinite(temp) and temp >= 0):
            self.view.notice("/temp needs a number, 0 or more (0: greedy)")
            return
        self.config = replace(self.config, sampling=replace(self.config.sampling, temperature=temp))
        self.view.info(f"temperature = {temp:g}" + (" (greedy)" if temp == 0 else ""))
