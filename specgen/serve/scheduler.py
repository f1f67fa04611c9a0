"""One generation at a time: the scheduler's thread that owns both models, and its bounded queue.

A llama.cpp context serves one sequence here, and the device runs one generation best, so every
request becomes a Job that the scheduler's single thread runs in turn while the event loop keeps
answering. The thread consumes the speculative loop's events, cuts the text at stop strings
(which may span tokens), and sends each piece back to the job's event loop. A job whose client
has gone is skipped if still waiting, or stopped after the current round if running. Chats keep
their exact tokens between requests (conversation.Conversation), so the next turn of a chat
finds both models' KV caches filled and prefills only the new message.

Each API key is a separate user: what a request leaves behind (its conversation, its reply in
the copy memory, its KV caches) serves only later requests of the same user.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from contextlib import ExitStack
from dataclasses import dataclass, replace

from specgen.decoding.drafters.base import Source
from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.drafters.prediction import Prediction, report
from specgen.decoding.drafters.suffix import LookupMemory
from specgen.decoding.events import consume
from specgen.decoding.loop import GenerationConfig, generate
from specgen.decoding.policy import Policy
from specgen.decoding.tokens import common_prefix
from specgen.errors import SpecgenError
from specgen.llama.calibrate import cached_costs, drafter_for, recheck_costs
from specgen.llama.conversation import Conversation, Prompt
from specgen.llama.grammar import Grammar, GrammarError, json_grammar, schema_example, schema_grammar
from specgen.llama.templates import ChatTemplate, TemplateError, call_grammar, model_template
from specgen.llama.lookup_cache import MAX_TOKENS
from specgen.llama.model import ContextFull
from specgen.serve.infill import EditorLimits, files_tokens, fim_prompt
from specgen.serve.states import SavedStates
from specgen.serve.pipe import ReplyPipe
from specgen.serve.wire import ApiError, GenRequest, Logprob, Outcome, finish_reason

PREFILL_CHUNK = 128  # prompt tokens per prefill step: a client gone is noticed within one
MIN_MEMORY_TOKENS = 4096  # each user's copy memory holds at least this many tokens of past replies


@dataclass(frozen=True)
class Started:
    """The prompt is encoded and generation begins: the reply's status is 200 from here on."""


@dataclass(frozen=True)
class Delta:
    text: str
    logprobs: tuple[Logprob, ...] = ()  # of the tokens whose text this delta completes


@dataclass(frozen=True)
class Finished:
    outcome: Outcome


@dataclass(frozen=True)
class Failed:
    error: ApiError


@dataclass(frozen=True)
class Gone:
    """The client disconnected; nothing more will come."""


class Job:
    """One request's generation: a GenRequest in, Started/Delta/Finished/Failed events out.

    Events are sent from the scheduler's thread and read on the event loop that made the job.
    `user`: which API key sent it (0 on a server without keys).
    """

    def __init__(self, request: GenRequest, user: int = 0):
        self.request, self.user = request, user
        self.cancelled = threading.Event()
        self.submitted = time.perf_counter()
        self._loop = asyncio.get_running_loop()
        self._events: asyncio.Queue = asyncio.Queue()
        self.done = False  # the last event (Finished, Failed or Gone) has been read

    def send(self, event) -> None:
        """Hand an event to the job's event loop (called on the scheduler's thread)."""
        try:
            self._loop.call_soon_threadsafe(self._events.put_nowait, event)
        except RuntimeError:  # the event loop has closed: nobody is listening
            self.cancelled.set()

    async def next(self):
        event = await self._events.get()
        self.done = isinstance(event, (Finished, Failed, Gone))
        return event


class StopMatcher:
    """Cuts streamed text at the first stop string, holding back text that may begin one.

    An Aho-Corasick automaton over the stop strings reads each character once, so the cost is
    linear in the reply, however many and however long the stop strings (a hostile request
    cannot stall the one generating thread), and the state's depth is exactly the text to hold
    back: the longest end of the text that begins some stop string.
    """

    def __init__(self, stops: tuple[str, ...]):
        self.stops = stops
        self._next: list[dict[str, int]] = [{}]
        self._depth, self._fail, self._ends = [0], [0], [0]  # per state; _ends: longest stop ending here
        for stop in stops:
            self._add(stop)
        self._link()
        self._state = 0
        self.pending = ""
        self.found = ""  # the stop string that ended the text

    def _add(self, stop: str) -> None:
        state = 0
        for char in stop:
            if char not in self._next[state]:
                self._next.append({})
                self._depth.append(self._depth[state] + 1)
                self._fail.append(0)
                self._ends.append(0)
                self._next[state][char] = len(self._next) - 1
            state = self._next[state][char]
        self._ends[state] = len(stop)

    def _link(self) -> None:
        """Failure links, breadth first: each state's longest proper suffix that is also a state."""
        queue = list(self._next[0].values())
        for state in queue:
            for char, child in self._next[state].items():
                fail = self._fail[state]
                while fail and char not in self._next[fail]:
                    fail = self._fail[fail]
                self._fail[child] = self._next[fail].get(char, 0) if self._next[fail].get(char) != child else 0
                self._ends[child] = max(self._ends[child], self._ends[self._fail[child]])
                queue.append(child)

    def feed(self, text: str) -> tuple[str, bool]:
        """The text safe to send now, and whether a stop string was found (text ends before it)."""
        held, state = self.pending, self._state
        for position, char in enumerate(text):
            while state and char not in self._next[state]:
                state = self._fail[state]
            state = self._next[state].get(char, 0)
            if self._ends[state]:
                cut = len(held) + position + 1 - self._ends[state]
                self.pending, self._state = "", 0
                self.found = (held + text)[cut : cut + self._ends[state]]
                return (held + text)[:cut], True
        self._state = state
        whole = held + text
        keep = self._depth[state]
        self.pending = whole[len(whole) - keep:] if keep else ""
        return whole[: len(whole) - keep], False

    def flush(self) -> str:
        out, self.pending, self._state = self.pending, "", 0
        return out


class ReplyCut:
    """Where the text sent ends before the loop ends the reply: at the first stop string, or for
    a fill-in-the-middle request where an editor's limits say (serve.infill.EditorLimits). `ended`
    says why ("stop string", "indent", "time limit"), None while the text goes on. It is the
    `stops` of a serve.pipe.ReplyPipe."""

    def __init__(self, request: GenRequest, start: float):
        self.stops = StopMatcher(request.stop)
        infill = request.infill
        self.limits = EditorLimits(infill.n_indent, infill.t_max_predict_ms, start) if infill else None
        self.ended: str | None = None

    def feed(self, text: str) -> tuple[str, bool]:
        """The part of a round's text to send now, and whether the reply has ended."""
        text, stopped = self.stops.feed(text)
        text = self._limited(text, "stop string" if stopped else None, time.perf_counter())
        return text, self.ended is not None

    def flush(self) -> str:
        """What was held back, once the loop has ended the reply."""
        return "" if self.ended else self._limited(self.stops.flush(), None, None)

    def _limited(self, text: str, reason: str | None, now: float | None) -> str:
        if self.limits is not None:
            text, limited = self.limits.feed(text, now)
            reason = limited or reason
        self.ended = reason
        return text


@dataclass(frozen=True)
class Encoded:
    """A request's prompt tokens; for a user's chat turn also its Prompt and its conversation."""

    tokens: list[int]
    prompt: Prompt | None = None
    conversation: Conversation | None = None
    prediction: list[int] | None = None  # the request's prediction in the target's tokens
    truncated: bool = False  # a fill-in-the-middle prompt was cut to fit


class Prompts:
    """Turns requests into prompt tokens; a chat continuing one of the recent conversations reuses
    that conversation's exact tokens (several clients may take turns)."""

    def __init__(self, target, limit: int, kept: int = 16):
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
        if request.prediction is None:
            return encoded
        return replace(encoded, prediction=self._prediction(request.prediction))

    def _prediction(self, text: str) -> list[int]:
        """A prediction in the target's tokens, as text the reply continues; a 400 when it is
        longer than the context."""
        tokens = self.target.continuation(text) if text else []
        if len(tokens) > self.target.n_ctx:
            raise ApiError(400, f"the prediction is {len(tokens)} tokens, longer than this server's "
                           f"{self.target.n_ctx}-token context: shorten it, or restart serve with a larger --ctx",
                           param="prediction", code="context_length_exceeded")
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
            raise ApiError(400, f"{self.target.path.name} has no chat template, so it cannot tell chat turns "
                           "apart; use /v1/completions with the text as is", param="messages")
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
            raise ApiError(400, "the messages do not fit in the context", param="messages",
                           code="context_length_exceeded")
        return Encoded(list(prompt.tokens), prompt, conversation)

    def template(self) -> ChatTemplate:
        """The target's own chat template, compiled on first use."""
        if self._template is None:
            try:
                self._template = model_template(self.target)
            except TemplateError as error:
                raise ApiError(400, f"{self.target.path.name}: {error}", param="messages") from None
            if self._template is None:
                raise ApiError(400, f"{self.target.path.name} has no chat template, so it cannot be sent tools or "
                               "tool messages", param="messages")
        return self._template

    def _templated(self, request: GenRequest) -> list[int]:
        """A chat with tools or tool turns, through the model's own template (its tool prompt)."""
        template = self.template()
        tools = list(request.tools) if request.tool_choice != "none" else None
        if tools and template.format is None:
            raise ApiError(400, f"the chat template of {self.target.path.name} teaches no tool-call format specgen "
                           "reads (Qwen2.5's <tool_call> blocks, Llama 3.1's JSON); send no tools, or tool_choice "
                           "none", param="tools")
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
        param = "input_suffix" if request.kind == "infill" else "suffix"
        if not fim.usable:
            raise ApiError(400, f"this model has no fill-in-the-middle tokens; {self.target.path.name} cannot fill "
                           "a gap: serve a code model that has them (Qwen2.5-Coder does), or send a completion "
                           "without a suffix", param=param)

        def tokenize(text: str) -> list[int]:
            return self.target.tokenize(text, add_special=False, parse_special=False)

        budget = self.limit - min(reply_tokens, self.limit // 2) if request.kind == "infill" else 2**31
        built = fim_prompt(fim, self.target.bos if self.target.add_bos else None, tokenize(infill.prefix),
                           tokenize(infill.suffix), files_tokens(fim, tokenize, infill.extra), budget)
        return Encoded(built.tokens, truncated=built.truncated)

    def _completion(self, prompt: str | tuple[int, ...]) -> list[int]:
        if isinstance(prompt, str):
            return self.target.tokenize(prompt, add_special=True, parse_special=False)
        bad = next((t for t in prompt if not 0 <= t < self.target.n_vocab), None)
        if bad is not None:
            raise ApiError(400, f"token id {bad} is not in the vocabulary (0 to {self.target.n_vocab - 1})",
                           param="prompt")
        return list(prompt)

    def _check(self, count: int, param: str) -> None:
        if count > self.limit:
            raise ApiError(400, f"the prompt is {count} tokens; this server takes at most {self.limit} "
                           f"(its context holds {self.target.n_ctx}): shorten it, or restart serve with a larger "
                           "--ctx or --max-prompt-tokens", param=param, code="context_length_exceeded")


@dataclass(frozen=True)
class Prefill:
    """The prompt's way into the caches: tokens that were this client's own cache (serve.states),
    tokens decoded, and the seconds it took."""

    own: int
    decoded: int
    seconds: float


@dataclass(frozen=True)
class Limits:
    """What the scheduler accepts and keeps: waiting requests, prompt and reply tokens, saved caches."""

    queue: int
    prompt_tokens: int
    reply_tokens: int = 4096  # the most one reply may take, whatever it asks (a full context ends it sooner)
    saved_bytes: int = 512 * 2**20  # KV caches of other conversations kept in RAM, all users together
    users: int = 1  # API keys; the copy memory's bound is shared out between them


@dataclass(frozen=True)
class User:
    """What one user's requests leave for that user's later requests alone: the recent
    conversations, and the copy memory of the replies served (KV caches: serve.states)."""

    prompts: Prompts
    memory: LookupMemory


def reply_example(request: GenRequest) -> str:
    """A document of the shape the reply's JSON schema gives, for auto's structure copies; ""
    for a tool call (the prompt's tool definitions hold its keys) and for `json_object`."""
    fmt = request.response_format
    forced = request.tool_choice in ("required", "function")
    return schema_example(fmt.schema) if fmt is not None and fmt.kind == "json_schema" and not forced else ""


class Scheduler:
    """The thread that runs jobs one at a time, and the bounded queue in front of it."""

    def __init__(self, target, drafter, config: GenerationConfig, auto: bool, limits: Limits):
        """With `auto`, step costs are measured (or read from the cache) here, before any request
        waits on them."""
        self.target, self.drafter, self.config, self.auto = target, drafter, config, auto
        self.limits = limits
        self.users: dict[int, User] = {}  # made at each user's first request
        draft_model = drafter.model if isinstance(drafter, ModelDrafter) else None
        self.costs = cached_costs(target, draft_model) if auto else None
        self._costed = draft_model  # the draft model the costs were measured with
        self._stale_costs = False  # a reply showed the costs were measured on a busy machine: measure again
        # the draft model follows every prompt only where it may draft: with auto, only where the
        # step costs say it could ever pay (on a few CPU cores it cannot, and its prefill is waste)
        may_draft = not auto or (self.costs is not None and Policy(self.costs).model_can_pay())
        self.draft_model = draft_model if may_draft else None
        # saved and emptied with the target's even where not kept in step: a round may still draft with it
        self.states = SavedStates(target, draft_model, limits.saved_bytes)
        self._cond = threading.Condition()
        self._pending: deque[Job] = deque()
        self._current: Job | None = None
        self._closing = False
        self._durations: deque[float] = deque(maxlen=16)
        self._thread = threading.Thread(target=self._run, name="specgen-scheduler", daemon=True)

    def __enter__(self) -> Scheduler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        """Stop the running job after its round, turn the waiting ones away, wait for the thread."""
        with self._cond:
            self._closing = True
            if self._current is not None:
                self._current.cancelled.set()
            for job in self._pending:
                job.send(Failed(ApiError(503, "the server is shutting down", kind="server_error")))
            self._pending.clear()
            self._cond.notify()
        self._thread.join()

    @property
    def busy(self) -> bool:
        return self._current is not None

    @property
    def waiting(self) -> int:
        return len(self._pending)

    def submit(self, job: Job) -> None:
        """Queue a job, or refuse with 503 when it would have to wait and the queue is full (one job
        runs, `limits.queue` may wait: with a queue of 0 a job is taken only when none runs)."""
        with self._cond:
            if self._closing:
                raise ApiError(503, "the server is shutting down", kind="server_error")
            if len(self._pending) + (self._current is not None) > self.limits.queue:
                raise ApiError(503, f"the server is busy: one request is generating and {len(self._pending)} "
                               "waiting; retry shortly", kind="server_error", code="queue_full",
                               headers={"Retry-After": str(self._retry_after())})
            self._pending.append(job)
            self._cond.notify()

    def cancel(self, job: Job) -> None:
        """The client is gone: a waiting job leaves the queue at once, a running one stops after its round."""
        with self._cond:
            job.cancelled.set()
            if job in self._pending:
                self._pending.remove(job)
                job.send(Gone())

    def cancel_all(self) -> None:
        """Stop the running job after its round and skip every waiting one."""
        with self._cond:
            for job in [self._current, *self._pending]:
                if job is not None:
                    job.cancelled.set()

    def _retry_after(self) -> int:
        """Seconds until a place is likely free: the average recent request time (at least 1)."""
        average = sum(self._durations) / len(self._durations) if self._durations else 1.0
        return max(1, round(average))

    def _next(self) -> Job | None:
        with self._cond:
            while not self._pending and not self._closing:
                self._cond.wait()
            self._current = None if self._closing else self._pending.popleft()
            return self._current

    def _run(self) -> None:
        """Run each job in turn; the job's last event goes out once the next may start, so that a
        client sending its next request at once is not refused as if the server were busy."""
        while (job := self._next()) is not None:
            start = time.perf_counter()
            last = Gone() if job.cancelled.is_set() else self._serve(job)
            with self._cond:
                self._current = None
                self._durations.append(time.perf_counter() - start)
            job.send(last)
            if self._stale_costs:  # between requests, as at start-up (a request arriving now waits for it)
                self.costs, self._stale_costs = cached_costs(self.target, self._costed), False

    def _user(self, number: int) -> User:
        if number not in self.users:
            tokens = max(MAX_TOKENS // self.limits.users, MIN_MEMORY_TOKENS)
            self.users[number] = User(Prompts(self.target, self.limits.prompt_tokens), LookupMemory(tokens))
        return self.users[number]

    def _serve(self, job: Job) -> Finished | Failed | Gone:
        """Run one job and return its last event; every failure becomes Failed, never an exception
        on this thread. A SpecgenError in encoding the prompt is the client's (400); anything else
        is ours (500)."""
        started, start, encoded, user = False, time.perf_counter(), None, self._user(job.user)
        try:
            encoded = user.prompts.encode(job.request, min(self.config.max_tokens, self.limits.reply_tokens))
            with ExitStack() as owned:
                grammar = self._grammar(job.request, user)
                if grammar is not None:
                    owned.enter_context(grammar)
                job.send(Started())
                started = True
                return self._generate(job, user, encoded, start, grammar)
        except ApiError as error:
            return Failed(error)
        except Exception as error:  # noqa: BLE001 - the thread must survive any request
            user.prompts.forget(encoded.conversation if encoded else None)
            if isinstance(error, SpecgenError) and not started:
                return Failed(ApiError(400, str(error)))
            message = f"generation failed: {type(error).__name__}: {error}"
            return Failed(ApiError(500, message, kind="server_error"))

    def _prefill(self, job: Job, tokens: list[int]) -> Prefill | None:
        """Fill both caches with the prompt (all but its last token) a chunk at a time, so that a
        client gone during a long prefill is noticed within a chunk (then None)."""
        start = time.perf_counter()
        own = min(self.states.take_up(tokens, job.user), len(tokens) - 1)
        models = [self.target] + ([self.draft_model] if self.draft_model is not None else [])
        reused = common_prefix(self.target.tokens, tokens[:-1])
        for end in [*range(reused + PREFILL_CHUNK, len(tokens) - 1, PREFILL_CHUNK), len(tokens) - 1]:
            if job.cancelled.is_set():
                return None
            for model in models:
                model.sync(tokens[:end])
        return Prefill(own, len(tokens) - 1 - reused, time.perf_counter() - start)

    def _grammar(self, request: GenRequest, user: User) -> Grammar | None:
        """The grammar the reply must follow, or None: a call of the tools where `tool_choice`
        requires one (in the model's own format), else `response_format`'s. A schema that cannot be
        a grammar is the client's 400."""
        forced = request.tool_choice in ("required", "function")
        fmt = request.response_format
        try:
            if forced:
                tools = [t for t in request.tools if request.forced_tool in (None, t["function"]["name"])]
                return Grammar(self.target, *call_grammar(user.prompts.template().format, tools,
                                                          single=not request.parallel_tool_calls))
            if fmt is None:
                return None
            if request.tools and request.tool_choice == "auto":
                raise ApiError(400, "response_format with tools needs tool_choice none, required or a named "
                               "function: a reply cannot both follow the format and call a tool",
                               param="response_format")
            return Grammar(self.target, json_grammar() if fmt.kind == "json_object" else schema_grammar(fmt.schema))
        except GrammarError as error:
            raise ApiError(400, str(error), param="tools" if forced else "response_format.json_schema.schema") \
                from None

    def _generate(self, job: Job, user: User, encoded: Encoded, start: float, grammar: Grammar | None
                  ) -> Finished | Gone:
        """Stream one reply's text to the job, cut at stop strings, and return how it ended;
        `start`: when the scheduler took it; `grammar`: what the reply must follow."""
        tokens = encoded.tokens
        prefill = self._prefill(job, tokens)
        if prefill is None:
            user.prompts.forget(encoded.conversation)
            return Gone()
        config = self.config_for(job.request)
        seeded = config.sampling.seed is not None  # decides from the cache file or a fixed profile, as run does
        prediction = Prediction(encoded.prediction) if encoded.prediction is not None else None
        fmt = user.prompts.template().format if job.request.tools and job.request.tool_choice != "none" else None
        drafter = drafter_for(self.target, self.drafter, config, self.auto, (user.memory.index,),
                              None if seeded else self.costs, prediction, quoted=grammar is not None or fmt is not None,
                              example=reply_example(job.request))
        events = generate(self.target, drafter, tokens, config, grammar)
        cut = ReplyCut(job.request, time.perf_counter())
        pipe = ReplyPipe(cut, fmt, self.target.piece, self._prompt_chars(job.request, tokens))
        reply: list[int] = []
        first = None  # when the first text went out

        def on_round(event) -> None:
            nonlocal first
            reply.extend(event.tokens)
            text, logprobs = pipe.feed(event.text, event.logprobs)
            if text:
                first = first if first is not None else time.perf_counter() - start
            if text or logprobs:
                job.send(Delta(text, logprobs))

        whole, summary = consume(events, on_round, lambda: pipe.stopped or job.cancelled.is_set())
        self._stale_costs = recheck_costs(self.target, drafter)
        tail, logprobs, calls = pipe.finish()
        if tail or logprobs:
            job.send(Delta(tail, logprobs))
        if cut.ended:  # the loop saw an interrupt; the client sees where the text was cut
            summary = replace(summary, stop_reason=cut.ended)
        received = not cut.ended and not job.cancelled.is_set()  # a reply the client never got is not kept
        user.prompts.remember(encoded, whole, reply, whole=received)
        user.memory.add(reply)
        reason = "tool_calls" if calls else finish_reason(summary.stop_reason, cut.ended == "stop string")
        predicted = report(prediction, reply, summary.by_source.get(Source.PREDICTION)) if prediction is not None else None
        return Finished(Outcome(reason, summary, first, start - job.submitted, prefill, tool_calls=tuple(calls),
                                truncated=encoded.truncated, stop_word=cut.stops.found, prediction=predicted))

    def _prompt_chars(self, request: GenRequest, tokens: list[int]) -> int:
        """Where a completion's text begins in prompt + completion (OpenAI's text_offset counts from
        the prompt's start): the prompt's length in characters."""
        if request.kind != "completion" or request.logprobs is None:
            return 0
        if isinstance(request.prompt, str):
            return len(request.prompt)
        return len(b"".join(self.target.piece(t) for t in tokens).decode("utf-8", errors="replace"))

    def config_for(self, request: GenRequest) -> GenerationConfig:
        """The server's settings, with what the request sets itself."""
        base = self.config
        s = base.sampling
        sampling = replace(
            s,
            temperature=s.temperature if request.temperature is None else request.temperature,
            top_k=s.top_k if request.top_k is None else request.top_k,
            top_p=s.top_p if request.top_p is None else request.top_p,
            seed=s.seed if request.seed is None else request.seed,
        )
        max_tokens = min(base.max_tokens if request.max_tokens is None else request.max_tokens, self.limits.reply_tokens)
        return replace(base, max_tokens=max_tokens, sampling=sampling, logprobs=request.logprobs)
