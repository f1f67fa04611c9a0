"""The `specgen chat` session: read a message, run a slash command or a turn, show the reply.

The models stay loaded and their KV caches stay filled between turns (the Conversation keeps
the tokens they hold), so each turn prefills only the new message. A turn is the speculative
loop's events handed to a view (live.RichView or live.PlainView); Ctrl-C stops the reply and
keeps the chat, Ctrl-D or /quit leaves, and a full context is a notice with a way on.

A message is one line, a block pasted into the line (on a terminal, see line_editor), or the
lines between two \"\"\" lines. /file attaches a file to the next message; /save writes the
conversation as JSONL that `specgen bench` reads as chat prompts and /load reads it back
(transcript); /retry generates the last reply again from the same cached prompt (greedy, with
auto, following the reply it repeats, which the same prompt gives again).
"""

from __future__ import annotations

import contextlib
import math
import os
import shlex
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from specgen.decoding.drafters.base import Drafter
from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.events import Tally
from specgen.decoding.loop import GenerationConfig
from specgen.decoding.policy import LOOKUP_MAX
from specgen.decoding.tokens import MAX_DRAFT_TOKENS
from specgen.engine.attached import attached_text
from specgen.engine.drafting import base_drafter, loaded_draft, measures_costs
from specgen.engine.generation import MEASURING_NOTE, STALE_COSTS_NOTE, Generation
from specgen.engine.request import Request
from specgen.errors import SpecgenError
from specgen.llama.conversation import Conversation
from specgen.llama.lookup_cache import new_memory
from specgen.llama.model import ContextFull, LoadOptions, Model
from specgen.llama.pair import open_models
from specgen.llama.rpc import placement
from specgen.models.paths import ModelPaths
from specgen.storage import write_atomically
from specgen.terminal.attach import Attachment, attach, read_text
from specgen.terminal.live import PlainView, Reply, RichView, make_view
from specgen.terminal.transcript import from_jsonl, to_jsonl

PROMPT = "you> "
MORE = "...> "
BLOCK = '"""'
HELP = """commands:
  /help        this list
  /file PATH   attach a file to your next message (its text in a fence, under its name)
  /save FILE   write the conversation as JSONL; 'specgen bench FILE' then times each reply again
  /load FILE   take up a conversation /save wrote (with its system prompt, if it has one)
  /retry       generate the last reply again (the same text at temperature 0 or with --seed)
  /reset       forget the conversation (the system prompt stays)
  /stats       totals for this chat, context use, the last turn's prefill
  /k N         draft N tokens per round (0: the target alone; auto: choose each round)
  /temp T      sampling temperature (0: greedy)
  /quit        leave (also /exit, Ctrl-D); Ctrl-C stops a reply and keeps the chat
a pasted block is one message; \"\"\" on a line of its own starts a message of several lines
and the next \"\"\" line sends it (Ctrl-C drops it)"""


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
        chat.loop(line_reader())


def require_template(target: Model) -> None:
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


def line_reader():
    """A reader of lines, given the prompt to show (None at the end of input): on a terminal the
    line editor, which keeps a pasted block in one line; from a pipe, a line at a time."""
    if not sys.stdin.isatty():
        return _read_pipe
    try:
        from specgen.terminal.line_editor import LineEditor
    except ImportError:  # no termios (Windows): input(), a line at a time
        return _read_input
    return LineEditor(sys.stdin.fileno(), sys.stdout if sys.stdout.isatty() else sys.stderr).read


def _read_pipe(_prompt: str) -> str | None:
    line = sys.stdin.readline()
    return line.rstrip("\n") if line else None


def _read_input(prompt: str) -> str | None:
    try:
        if sys.stdout.isatty():
            return input(prompt)
        sys.stderr.write(prompt)
        sys.stderr.flush()
        return input()
    except EOFError:
        sys.stderr.write("\n")
        return None
    except KeyboardInterrupt:
        sys.stderr.write("\n")  # the notice that follows starts a line of its own
        raise


def tidy(message: str) -> str:
    """The message without blank lines around it or spaces after it; one line also without spaces before."""
    lines = message.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    text = "\n".join(lines).rstrip()
    return text if "\n" in text else text.strip()


def unquoted(argument: str) -> str:
    """A path as typed, or as a terminal pastes a dropped file: in quotes, or with its spaces escaped."""
    if not os.path.exists(os.path.expanduser(argument)):
        with contextlib.suppress(ValueError):
            words = shlex.split(argument)
            if len(words) == 1:
                return words[0]
    return argument


class Chat:
    """One chat: the conversation, the generation settings /k and /temp change, and the totals."""

    def __init__(self, target: Model, drafter: Drafter | None, options: ChatOptions, view: RichView | PlainView):
        """`drafter`: the draft model's, or copying's where there is no draft model."""
        self.target, self.drafter, self.view = target, drafter, view
        self.config, self.auto = options.config, options.auto
        self.auto_cap = options.config.draft_tokens
        self.conversation = Conversation(target, options.system)
        self.memory = new_memory()  # earlier replies, also those /reset forgot, for copy drafting
        self.totals = Totals()
        self.attached: list[Attachment] = []  # files for the next message
        self.commands = {
            "/help": self.help,
            "/reset": self.reset,
            "/stats": self.stats,
            "/k": self.set_k,
            "/temp": self.set_temp,
            "/file": self.attach,
            "/save": self.save,
            "/load": self.load,
            "/retry": self.retry,
        }

    @property
    def k(self) -> int:
        return self.config.draft_tokens if self.drafter else 0

    def loop(self, read) -> None:
        """Turns and commands until /quit or the end of input; `read(prompt)` gives the next line."""
        self.view.welcome(self.welcome())
        while True:
            try:
                line = read(PROMPT)
                if line is None or line.strip() in ("/quit", "/exit"):
                    return
                if line.strip() != BLOCK:
                    self.dispatch(line)
                elif (message := self.read_block(read)) is None:
                    return
                else:
                    self.send(message)
            except KeyboardInterrupt:
                self.view.notice("(Ctrl-D or /quit leaves)")

    def read_block(self, read) -> str | None:
        """The lines up to the closing \"\"\" line; "" when Ctrl-C drops them, None at the end of input."""
        lines = []
        try:
            while (line := read(MORE)) is not None and line.strip() != BLOCK:
                lines.append(line)
        except KeyboardInterrupt:
            self.view.notice(f"message dropped ({len(lines)} line(s)); nothing was sent")
            return ""
        if line is None:
            self.view.notice(f"the input ended inside a {BLOCK} message; it was not sent")
            return None
        return "\n".join(lines)

    def dispatch(self, line: str) -> None:
        """A slash command, typed on one line, or a message."""
        if "\n" not in line and line.strip().startswith("/"):
            self.command(line.strip())
        else:
            self.send(line)

    def send(self, message: str) -> None:
        """A turn with the message, after the attached files; an empty message is none."""
        text = tidy(message)
        if text and self.turn("\n\n".join([*(file.fenced for file in self.attached), text])):
            self.attached = []

    def k_label(self) -> str:
        if not self.k:
            return "the target alone"
        if not self.auto:
            return f"K {self.k}"
        model = f"the draft model ≤{self.k}, " if isinstance(self.drafter, ModelDrafter) else ""
        return f"K auto: {model}copies ≤{LOOKUP_MAX}"

    def welcome(self) -> str:
        drafted = "no draft model"
        if self.drafter:
            draft = loaded_draft(self.drafter)
            source = draft.path.name if draft is not None else "copying from what was written"
            drafted = f"drafted by {source} ({self.k_label()})"
        return f"chat with {self.target.path.name}, {drafted}; /help for commands, Ctrl-D or /quit leaves"

    def turn(self, text: str) -> bool:
        """Send one user message and show the reply; False when a full context kept it from being sent."""
        reserve = min(self.config.max_tokens, self.target.n_ctx // 4)
        try:
            prompt = self.conversation.prompt(text, reserve)
        except ContextFull as error:
            self.view.notice(str(error))
            return False
        if prompt.dropped:
            self.view.notice(
                f"context full: forgot the oldest {prompt.dropped} turn(s) to make room (/reset starts over)"
            )
        # greedy, the same prompt again (/retry) gives the same reply: it is followed as a prediction
        earlier = self.memory.reply_to(prompt.tokens) if self.config.sampling.greedy else None
        request = Request(
            tuple(prompt.tokens),
            self.config,
            self.auto,
            shared=(self.memory.index,),
            repeats=tuple(earlier) if earlier is not None else None,
            attached=tuple(self.target.continuation(attached)) if (attached := attached_text(text)) else None,
        )
        if measures_costs(self.target, self.drafter, self.config, self.auto):
            self.view.notice(MEASURING_NOTE)
        with Generation(self.target, self.drafter, request) as generation:
            reply = self.view.render(generation.events(), self.k, self.auto, self.totals.tally)
        if generation.stale_costs:
            self.view.notice(STALE_COSTS_NOTE.format("reply"))
        whole = reply.summary.stop_reason != "interrupted"  # a reply cut short answers no prompt
        self.memory.add(list(reply.tokens), prompt.tokens if whole else None)
        self.conversation.commit(prompt, reply.text, list(reply.tokens))
        self.totals.add(reply)
        if reply.summary.stop_reason == "context":
            self.view.notice(
                f"the {self.target.n_ctx}-token context is full; your next message will drop the oldest turns "
                "(or /reset to start over)"
            )
        return True

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
            lines.append(
                f"last turn: prefilled {t.last.summary.prefilled_tokens} tokens, first token after "
                + (f"{first:.3f}s" if first is not None else "–")
            )
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

    def attach(self, argument: str) -> None:
        if not argument:
            self.view.notice("/file needs a path: /file PATH")
            return
        try:
            file = attach(unquoted(argument))
        except SpecgenError as error:
            self.view.notice(str(error))
            return
        self.attached.append(file)
        waiting = f"{len(self.attached)} files go" if len(self.attached) > 1 else "it goes"
        lines = f"{file.lines} line{'' if file.lines == 1 else 's'}"
        self.view.info(f"attached {file.name} ({lines}, {file.size:,} bytes); {waiting} with your next message")

    def save(self, argument: str) -> None:
        if not argument:
            self.view.notice("/save needs a file name: /save FILE.jsonl")
            return
        if not self.conversation.turns:
            self.view.notice("nothing to save yet: the conversation has no turns")
            return
        path = unquoted(argument)
        if not write_atomically(Path(path).expanduser(), to_jsonl(self.conversation.messages)):
            self.view.notice(f"could not write {path}; check that its folder exists and can be written")
            return
        self.view.info(
            f"saved {self.conversation.turns} turn(s) to {path}; "
            f"'specgen bench {shlex.quote(path)}' times each reply again"
        )

    def load(self, argument: str) -> None:
        """Take up a saved conversation; one that ends with the user's message is answered at once."""
        if not argument:
            self.view.notice("/load needs a file name: /load FILE.jsonl")
            return
        path = unquoted(argument)
        try:
            messages = from_jsonl(read_text(path), path)
        except SpecgenError as error:
            self.view.notice(str(error))
            return
        waiting = messages.pop()[1] if messages[-1][0] == "user" else None
        self.conversation.restore(messages)
        system = "with its system prompt" if self.conversation.system else "without a system prompt"
        self.view.info(
            f"loaded {self.conversation.turns + (waiting is not None)} turn(s) from {path}, {system}"
            + ("; its last message waits for a reply:" if waiting is not None else "")
        )
        if waiting is not None:
            self.turn(waiting)

    def retry(self, _: str) -> None:
        user = self.conversation.undo()
        if user is None:
            self.view.notice("nothing to retry: there is no reply yet")
            return
        self.view.info("the last reply again:")
        self.turn(user)
