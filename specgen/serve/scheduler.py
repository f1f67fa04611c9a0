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

from specgen.decoding.drafters.base import Drafter
from specgen.decoding.drafters.suffix import LookupMemory
from specgen.decoding.events import Round
from specgen.decoding.loop import GenerationConfig
from specgen.decoding.policy import Policy
from specgen.decoding.tokens import common_prefix
from specgen.engine.drafting import loaded_draft
from specgen.engine.generation import Generation
from specgen.engine.request import Request, Rules, followed_reply
from specgen.errors import SpecgenError
from specgen.llama.calibrate import cached_costs
from specgen.llama.grammar import GrammarError, json_grammar, schema_example, schema_grammar
from specgen.llama.lookup_cache import MAX_TOKENS
from specgen.llama.model import Model
from specgen.llama.templates import call_grammar
from specgen.serve.pipe import ReplyPipe
from specgen.serve.prompts import Encoded, Prompts
from specgen.serve.states import SavedStates
from specgen.serve.stops import ReplyCut
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

    @property
    def share(self) -> int:
        """Requests one key may have in at once, running or waiting: every place (the running one
        and `queue` waiting) with one key, else half of them rounded up, so that no key can fill
        the queue that the others share."""
        places = self.queue + 1
        return places if self.users == 1 else (places + 1) // 2


@dataclass(frozen=True)
class User:
    """What one user's requests leave for that user's later requests alone: the recent
    conversations, and the copy memory of the replies served (KV caches: serve.states)."""

    prompts: Prompts
    memory: LookupMemory


def _grammar_param(request: GenRequest) -> str:
    """The request's field a grammar that cannot be had came from."""
    return "tools" if request.tool_choice in ("required", "function") else "response_format.json_schema.schema"


def reply_example(request: GenRequest) -> str:
    """A document of the shape the reply's JSON schema gives, for auto's structure copies; ""
    for a tool call (the prompt's tool definitions hold its keys) and for `json_object`."""
    fmt = request.response_format
    forced = request.tool_choice in ("required", "function")
    return schema_example(fmt.schema) if fmt is not None and fmt.kind == "json_schema" and not forced else ""


class Scheduler:
    """The thread that runs jobs one at a time, and the bounded queue in front of it."""

    def __init__(self, target: Model, drafter: Drafter | None, config: GenerationConfig, auto: bool, limits: Limits):
        """With `auto`, step costs are measured (or read from the cache) here, before any request
        waits on them."""
        self.target, self.drafter, self.config, self.auto = target, drafter, config, auto
        self.limits = limits
        self.users: dict[int, User] = {}  # made at each user's first request
        draft_model = loaded_draft(drafter)
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
                raise ApiError(
                    503,
                    f"the server is busy: one request is generating and {len(self._pending)} waiting; retry shortly",
                    kind="server_error",
                    code="queue_full",
                    headers={"Retry-After": str(self._retry_after())},
                )
            mine = sum(other.user == job.user for other in [*self._pending, self._current] if other is not None)
            if mine >= self.limits.share:
                raise ApiError(
                    503,
                    f"this key has {mine} requests running or waiting, its share of the queue; "
                    "retry once one is answered",
                    kind="server_error",
                    code="queue_full",
                    headers={"Retry-After": str(self._retry_after())},
                )
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
            request = self.request_for(job.request, user, encoded)
            with ExitStack() as owned:
                try:
                    generation = owned.enter_context(Generation(self.target, self.drafter, request, self.costs))
                except GrammarError as error:
                    raise ApiError(400, str(error), param=_grammar_param(job.request)) from None
                job.send(Started())
                started = True
                last = self._generate(job, user, encoded, start, generation)
            self._stale_costs = generation.stale_costs
            return last
        except ApiError as error:
            return Failed(error)
        except Exception as error:  # noqa: BLE001 - the thread must survive any request
            user.prompts.forget(encoded.conversation if encoded else None)
            if isinstance(error, SpecgenError) and not started:
                return Failed(ApiError(400, str(error)))
            message = f"generation failed: {type(error).__name__}: {error}"
            return Failed(ApiError(500, message, kind="server_error"))

    def _prefill(self, job: Job, tokens: list[int]) -> Prefill | None:
        """Fill both caches with the prompt a chunk at a time, so that a client gone during a long
        prefill is noticed within a chunk (then None): the draft model's with all but the last
        token (where the drafters start), the target's with all but the last chunk, which the loop
        decodes with the last token in one batch (its row gives the first token); the tokens and
        seconds counted here are this part's."""
        start = time.perf_counter()
        own = min(self.states.take_up(tokens, job.user), len(tokens) - 1)
        start += self.states.saving_s  # keeping the last user's caches is not this request's prefill
        models = [self.target] + ([self.draft_model] if self.draft_model is not None else [])
        reused = common_prefix(self.target.tokens, tokens[:-1])
        ends = [*range(reused + PREFILL_CHUNK, len(tokens) - 1, PREFILL_CHUNK)]
        for end in [*ends, len(tokens) - 1]:
            if job.cancelled.is_set():
                return None
            for model in models if end in ends else models[1:]:
                model.sync(tokens[:end])
        return Prefill(own, (ends[-1] if ends else reused) - reused, time.perf_counter() - start)

    def request_for(self, request: GenRequest, user: User, encoded: Encoded) -> Request:
        """What the engine is asked for one request: its prompt and settings, the grammar its reply
        must follow, its prediction, the reply the user's last request with this very prompt got
        (if the copy memory still holds it: followed where the request gives no prediction, and
        in the place of the one it gives where it decodes greedily, since then the same prompt
        gives the same reply), and the user's copy memory; a reply in JSON (a format, tool
        calls) is `quoted`."""
        fmt = user.prompts.template().format if request.tools and request.tool_choice != "none" else None
        rules = self._rules(request, user)
        config = self.config_for(request)
        prediction = tuple(encoded.prediction) if encoded.prediction is not None else None
        return Request(
            tuple(encoded.tokens),
            config,
            self.auto,
            rules,
            prediction,
            quoted=rules is not None or fmt is not None,
            example=reply_example(request),
            shared=(user.memory.index,),
            repeats=followed_reply(user.memory.reply_to(encoded.tokens), prediction is not None, config.sampling),
            attached=tuple(encoded.attached) if encoded.attached else None,
        )

    def _rules(self, request: GenRequest, user: User) -> Rules | None:
        """The grammar the reply must follow, or None: a call of the tools where `tool_choice`
        requires one (in the model's own format), else `response_format`'s. A schema that cannot be
        a grammar is the client's 400."""
        forced = request.tool_choice in ("required", "function")
        fmt = request.response_format
        try:
            if forced:
                tools = [t for t in request.tools if request.forced_tool in (None, t["function"]["name"])]
                calls = user.prompts.template().format
                assert calls is not None  # encoding the prompt refused tools the template cannot call
                return Rules(*call_grammar(calls, tools, single=not request.parallel_tool_calls))
            if fmt is None:
                return None
            if request.tools and request.tool_choice == "auto":
                raise ApiError(
                    400,
                    "response_format with tools needs tool_choice none, required or a named "
                    "function: a reply cannot both follow the format and call a tool",
                    param="response_format",
                )
            return Rules(json_grammar() if fmt.kind == "json_object" else schema_grammar(fmt.schema))
        except GrammarError as error:
            raise ApiError(400, str(error), param=_grammar_param(request)) from None

    def _generate(
        self, job: Job, user: User, encoded: Encoded, start: float, generation: Generation
    ) -> Finished | Gone:
        """Stream one reply's text to the job, cut at stop strings, and return how it ended;
        `start`: when the scheduler took it."""
        tokens = encoded.tokens
        prefill = self._prefill(job, tokens)
        if prefill is None:
            user.prompts.forget(encoded.conversation)
            return Gone()
        fmt = user.prompts.template().format if job.request.tools and job.request.tool_choice != "none" else None
        cut = ReplyCut(job.request, time.perf_counter())
        pipe = ReplyPipe(cut, fmt, self.target.piece, self._prompt_chars(job.request, tokens))
        reply: list[int] = []
        first = None  # when the first text went out

        def on_round(event: Round) -> None:
            nonlocal first
            reply.extend(event.tokens)
            text, logprobs = pipe.feed(event.text, event.logprobs)
            if text:
                first = first if first is not None else time.perf_counter() - start
            if text or logprobs:
                job.send(Delta(text, logprobs))

        whole, summary = generation.consume(on_round, lambda: pipe.stopped or job.cancelled.is_set())
        prefill = replace(  # with the loop's part: the last chunk and the last token
            prefill, decoded=prefill.decoded + summary.prefilled_tokens, seconds=prefill.seconds + summary.prefill_s
        )
        tail, logprobs, calls = pipe.finish()
        if tail or logprobs:
            job.send(Delta(tail, logprobs))
        if cut.ended:  # the loop saw an interrupt; the client sees where the text was cut
            summary = replace(summary, stop_reason=cut.ended)
        received = not cut.ended and not job.cancelled.is_set()  # a reply the client never got is not kept
        user.prompts.remember(encoded, whole, reply, whole=received)
        user.memory.add(reply, encoded.tokens if received else None)  # a reply cut short answers no prompt
        reason = "tool_calls" if calls else finish_reason(summary.stop_reason, cut.ended == "stop string")
        return Finished(
            Outcome(
                reason,
                summary,
                first,
                start - job.submitted,
                prefill,
                tool_calls=tuple(calls),
                truncated=encoded.truncated,
                stop_word=cut.stops.found,
                prediction=generation.report(reply, summary),
            )
        )

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
        asked = base.max_tokens if request.max_tokens is None else request.max_tokens
        max_tokens = min(asked, self.limits.reply_tokens)
        return replace(base, max_tokens=max_tokens, sampling=sampling, logprobs=request.logprobs)
