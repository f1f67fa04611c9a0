"""Measure speculative decoding against the target alone, honestly: same engine, interleaved.

For each prompt every configuration (the target alone, the draft model at each K, prompt lookup
at each K, and any OpenAI-compatible endpoint given, see `endpoint`) runs once per repeat, in
turn and in reverse every other repeat (A B C C B A ...), so slow drift of the machine (heat,
other load) hits all of them alike and none always runs first;
warm-up repeats run the same way and are dropped. Every run
starts from an empty KV cache, so prefill is measured alike too. At temperature 0 an audit
checks that each output equals the target alone's token for token and, where it does not,
reads the target's top-2 logit margin at the first difference and replays the run's own
verify batches on the target up to that position: a token that the target's own batched
arithmetic picks there (kernels round differently by batch shape) is told apart from a bug; when sampling, `bench_audit` compares the distributions of
the first tokens over many seeds instead. After the runs, isolated passes of both models are
timed (`costs.calibrate`) for the predicted speedups. `bench_stats` turns the runs into the
reported numbers.
"""

from __future__ import annotations

import platform
import resource
import sys
import time
import urllib.parse
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from specgen import __version__
from specgen.bench import endpoint
from specgen.bench.audit import DistributionAudit, distribution_audit
from specgen.bench.prompts import BenchPrompt
from specgen.bench.stats import BASELINE, ENDPOINT, Stats, Verdict, summarize, verdict
from specgen.decoding.drafters.base import Source
from specgen.decoding.drafters.lookup import PromptLookupDrafter
from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.drafters.prediction import Prediction, PredictionReport, report
from specgen.decoding.events import Summary, consume
from specgen.decoding.loop import GenerationConfig, generate
from specgen.decoding.policy import LOOKUP_MAX
from specgen.decoding.sampling import SamplingParams
from specgen.decoding.tokens import MAX_DRAFT_TOKENS
from specgen.errors import UsageError
from specgen.llama.calibrate import calibrate, drafter_for, recheck_costs
from specgen.llama.grammar import Grammar, GrammarError, schema_example, schema_grammar
from specgen.llama.pair import encode_messages, encode_prompt, encode_tool_chat
from specgen.models.registry import DEFAULT_DRAFT_TOKENS

AUTO = "auto"
NEAR_TIE = 0.05  # logits: a top-2 margin this small can flip between batched and single-token passes
SCHEMA = "specgen-bench/1"


@dataclass(frozen=True)
class Config:
    """One way to decode: drafter "none" (the target alone), "model" or "lookup", with K; or
    "endpoint", an OpenAI-compatible server at `url` serving `model`.

    `adaptive`: the loop picks each round's K (up to `k`), and may take prompt lookup's proposal.
    """

    name: str
    drafter: str
    k: int
    adaptive: bool = False
    url: str = ""
    model: str = ""


@dataclass(frozen=True)
class Plan:
    configs: tuple[Config, ...]
    max_tokens: int
    repeats: int
    warmup: int
    sampling: SamplingParams
    audit_seeds: int = 0  # sampled runs per configuration and prompt for the distribution audit
    audit_tokens: int = 6  # positions (first generated tokens) whose distributions it compares
    endpoint_key: str | None = None  # the API key endpoints want (never written to results)

    @property
    def local(self) -> Plan:
        """The plan without its endpoints: what the audits check, token for token or by distribution."""
        return replace(self, configs=tuple(c for c in self.configs if c.drafter != ENDPOINT))


@dataclass(frozen=True)
class Asked:
    """What a prompt asks of every run beyond its text: JSON that fits a schema (endpoints are sent
    the schema, local runs follow its GBNF), a prediction (endpoints are sent the text, local
    runs draft from its tokens), and whether the reply is written in JSON (a schema or tools:
    auto copies also from the prompt's text as JSON escapes it)."""

    schema: dict | None = None
    grammar: str | None = None
    prediction: str | None = None
    predicted_tokens: tuple[int, ...] | None = None
    quoted: bool = False
    example: str = ""  # of the schema's shape, for auto's structure copies (`schema_example`)


NOTHING_ASKED = Asked()


@dataclass(frozen=True)
class RunRecord:
    """One measured run: its Summary, its output ids (an endpoint's: its text), how many rounds
    ended in a rejection, and its rounds as (drafted ids, how many were kept), which the audit
    replays."""

    prompt: int
    config: str
    repeat: int
    summary: Summary
    rejections: int
    output: tuple[int, ...] | str
    rounds: tuple[tuple[tuple[int, ...], int], ...] = ()
    prediction: PredictionReport | None = None  # what became of the prompt's prediction, if it has one


@dataclass(frozen=True)
class Divergence:
    """Where an output (position 0: its first generated token) first leaves the target alone's.

    A token of None means that output ended there (at -n, say) without the target choosing an end token.
    """

    position: int
    baseline_token: int | None
    other_token: int | None
    baseline_text: str
    other_text: str
    top2_margin: float
    near_tie: bool
    batched_flip: bool = False  # the target itself, replaying the run's batches (else batches of 2..16), picks other_token


@dataclass(frozen=True)
class Audit:
    prompt: int
    config: str
    runs: int
    diverged: int
    first: Divergence | None


@dataclass(frozen=True)
class EndpointCheck:
    """How often an endpoint's text was the target alone's (another engine or quantization may
    differ without a bug, so this is reported, not audited)."""

    config: str
    url: str
    model: str
    same_text: int
    runs: int


@dataclass(frozen=True)
class BenchResult:
    """Everything one benchmark measured; `to_dict` is the --json document (docs/bench-json.md)."""

    plan: Plan
    prompts: tuple[BenchPrompt, ...]
    prompt_tokens: tuple[int, ...]
    runs: tuple[RunRecord, ...]
    stats: tuple[Stats, ...]
    audits: tuple[Audit, ...] | None  # None when sampling (temperature > 0)
    distribution: DistributionAudit | None  # when sampling with audit seeds
    verdict: Verdict
    endpoints: tuple[EndpointCheck, ...]
    peak_rss_mib: float
    step_costs: object | None  # costs.StepCosts from the calibration
    memory_mib: dict = field(default_factory=dict)  # resident memory at the end, by kind (Linux)
    machine: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)

    def copy_ceiling(self) -> tuple[int, float] | None:
        """The most a copy kept whole gains on the measured costs: (tokens a pass, speedup)."""
        return self.step_costs.copy_ceiling(LOOKUP_MAX) if self.step_costs is not None else None

    def to_dict(self) -> dict:
        names = [p.name for p in self.prompts]
        audit = None
        if self.audits is not None:
            checks = [{**asdict(a), "prompt": names[a.prompt]} for a in self.audits]
            audit = {"identical": not any(a.diverged for a in self.audits),
                     "suspect": sum(1 for a in self.audits if a.first and not a.first.near_tie),
                     "near_tie_margin": NEAR_TIE, "checks": checks}
        return {
            "schema": SCHEMA,
            "settings": {**self.settings, **_plan_dict(self.plan)},
            "machine": self.machine,
            "peak_rss_mib": self.peak_rss_mib,
            "memory_mib": self.memory_mib,
            "step_costs": _costs_dict(self.step_costs, self.copy_ceiling()),
            "prompts": [{"name": p.name, "kind": p.kind, "prompt_tokens": n, "text": p.text, "prediction": p.prediction}
                        for p, n in zip(self.prompts, self.prompt_tokens)],
            "configs": [asdict(c) for c in self.plan.configs],
            "results": [{**asdict(s), "time_split": s.time_split()} for s in self.stats],
            "audit": audit,
            "distribution_audit": self.distribution.to_dict(names) if self.distribution else None,
            "verdict": asdict(self.verdict),
            "endpoints": [asdict(e) for e in self.endpoints],
            "runs": [{"prompt": names[r.prompt], "config": r.config, "repeat": r.repeat, "rejections": r.rejections,
                      **r.summary.to_dict(), "prediction": r.prediction.to_dict() if r.prediction else None}
                     for r in self.runs],
        }


def benchmark(target, draft, prompts: list[BenchPrompt], plan: Plan, raw: bool, started=None,
              settings: dict | None = None) -> BenchResult:
    """Encode the prompts, time isolated passes, run the plan, audit the outputs, and summarize."""
    tokens = encode_all(target, prompts, raw)
    asks = [Asked(p.json_schema, prompt_grammar(p), p.prediction,
                  tuple(target.continuation(p.prediction)) if p.prediction else None,
                  quoted=p.json_schema is not None or bool(p.tools),
                  example=schema_example(p.json_schema)) for p in prompts]
    records = run_plan(target, draft, tokens, plan, started, [(p.text, raw, p.messages) for p in prompts], asks)
    costs = isolated_costs(target, draft)
    local = [r for r in records if r.config in {c.name for c in plan.local.configs}]
    audits = tuple(audit(target, tokens, local, [a.grammar for a in asks])) if plan.sampling.greedy else None
    sampled = sampled_audit(target, draft, tokens, plan, started, [a.predicted_tokens for a in asks])
    stats = summarize(records, plan.configs, prompts, costs)
    return BenchResult(plan, tuple(prompts), tuple(len(t) for t in tokens), tuple(records), tuple(stats),
                       audits, sampled, verdict(stats), endpoint_checks(target, plan, records), peak_rss_mib(), costs,
                       memory_mib(), machine(target), settings or {})


def isolated_costs(target, draft):
    """Time passes of both models outside the loop, from empty caches, after the runs have warmed
    them up (the first passes after loading fault the weights in and would inflate the unit)."""
    target.truncate(0)
    if draft is not None:
        draft.truncate(0)
    return calibrate(target, draft)


def sampled_audit(target, draft, tokens: list[list[int]], plan: Plan, started=None,
                  predictions: list[tuple[int, ...] | None] = ()) -> DistributionAudit | None:
    """The distribution audit when sampling with audit seeds; its progress continues the runs'
    count; the configurations draft from the prompts' predictions as in the timed runs."""
    if plan.sampling.greedy or not plan.audit_seeds:
        return None
    timed = len(tokens) * (plan.warmup + plan.repeats) * len(plan.configs)
    progress = None if started is None else lambda done, p, config: started(timed + done, p, config, None)
    return distribution_audit(target, draft, tokens, plan.local, make_drafter, progress, predictions)


def _costs_dict(costs, ceiling: tuple[int, float] | None) -> dict | None:
    if costs is None:
        return None
    return {"verify": {str(n): s for n, s in sorted(costs.verify.items())}, "draft_step": costs.draft_step,
            "switch": costs.switch, "copy_ceiling": {"tokens": ceiling[0], "speedup": ceiling[1]}}


def _plan_dict(plan: Plan) -> dict:
    ks = sorted({c.k for c in plan.configs if c.k and not c.adaptive})
    auto = [AUTO] if any(c.adaptive for c in plan.configs) else []
    sampling = plan.sampling
    return {"max_tokens": plan.max_tokens, "draft_tokens": [*ks, *auto],
            "repeats": plan.repeats, "warmup": plan.warmup, "temperature": sampling.temperature,
            "top_k": sampling.top_k, "top_p": sampling.top_p, "seed": sampling.seed,
            "audit_seeds": plan.audit_seeds, "audit_tokens": plan.audit_tokens}


def parse_draft_tokens(text: str) -> tuple[int | str, ...]:
    """'2,4,8,auto' -> (2, 4, 8, 'auto'): the K values to compare; 'auto' is adaptive K."""
    values: list[int | str] = []
    for item in (part.strip().lower() for part in text.split(",")):
        if item != AUTO and (not item.isdigit() or not 1 <= int(item) <= MAX_DRAFT_TOKENS):
            raise UsageError(
                f"--draft-tokens wants numbers from 1 to {MAX_DRAFT_TOKENS} or 'auto', "
                f"separated by commas, not '{text}'"
            )
        values.append(item if item == AUTO else int(item))
    return tuple(dict.fromkeys(values))


def configurations(ks: tuple[int | str, ...], draft_model: bool, lookup: bool,
                   auto_cap: int = DEFAULT_DRAFT_TOKENS, endpoints: tuple[Config, ...] = ()) -> tuple[Config, ...]:
    """The target alone first, the draft model at each K (and auto, up to auto_cap), prompt lookup
    at each K (without a draft model, auto copies only: lookup-auto), then the endpoints."""
    numbers = [k for k in ks if k != AUTO]
    configs = [Config(BASELINE, "none", 0)]
    if draft_model:
        configs += [Config(f"draft-k{k}", "model", k) for k in numbers]
        configs += [Config("draft-auto", "model", auto_cap, adaptive=True)] if AUTO in ks else []
    configs += [Config(f"lookup-k{k}", "lookup", k) for k in numbers if lookup]
    if AUTO in ks and lookup and not draft_model:
        configs.append(Config("lookup-auto", "lookup", auto_cap, adaptive=True))
    configs += endpoints
    if len(configs) == 1:
        raise UsageError(
            "nothing to compare with the target alone: give a draft model, leave out --no-lookup, "
            "or add an --endpoint"
        )
    return tuple(configs)


def prompt_grammar(prompt: BenchPrompt) -> str | None:
    """The grammar of a prompt's JSON schema (None without one); a schema that cannot be one is a
    UsageError naming the prompt."""
    if prompt.json_schema is None:
        return None
    try:
        return schema_grammar(prompt.json_schema)
    except GrammarError as error:
        raise UsageError(f"prompt {prompt.name}: json_schema: {error}") from None


def run_plan(target, draft, prompts: list[list[int]], plan: Plan, started=None,
             texts: list[tuple[str, bool, tuple[tuple[str, str], ...]]] = (),
             asks: list[Asked] = ()) -> list[RunRecord]:
    """All runs, interleaved per prompt, the configurations in turn and in reverse order every
    other repeat, so that neither always runs first (a host that slows down or warms up within
    a prompt's runs favours none); `started(index, prompt, config, repeat)` before each.
    Endpoints are sent `texts[p]`: the prompt's text, whether it is raw, and its conversation;
    every run is asked what `asks[p]` asks."""
    records, index = [], 0
    for p, tokens in enumerate(prompts):
        for repeat in range(-plan.warmup, plan.repeats):
            for config in plan.configs if repeat % 2 == 0 else plan.configs[::-1]:
                if started is not None:
                    started(index, p, config, repeat)
                index += 1
                asked = asks[p] if asks else NOTHING_ASKED
                if config.drafter == ENDPOINT:
                    summary, rejections, output, rounds, fate = run_endpoint(config, *texts[p], plan, asked)
                else:
                    summary, rejections, output, rounds, fate = run_once(target, draft, tokens, config, plan, asked)
                if repeat >= 0:
                    records.append(RunRecord(p, config.name, repeat, summary, rejections, output, rounds, fate))
    return records


def endpoint_configs(endpoints: list[endpoint.Endpoint]) -> tuple[Config, ...]:
    """A configuration per endpoint, named after its host ("endpoint:127.0.0.1:8080")."""
    names = [f"{ENDPOINT}:{urllib.parse.urlsplit(e.url).netloc}" for e in endpoints]
    names = [name if names.count(name) == 1 else f"{name}#{i + 1}" for i, name in enumerate(names)]
    return tuple(Config(name, ENDPOINT, 0, url=e.url, model=e.model) for name, e in zip(names, endpoints))


def run_endpoint(config: Config, text: str, raw: bool, conversation: tuple[tuple[str, str], ...], plan: Plan,
                 asked: Asked = NOTHING_ASKED):
    """Stream the prompt from the endpoint, asking what `asked` asks (OpenAI's `response_format`
    and `prediction`); (Summary, 0, its text, no rounds, the prediction's counts as the server
    reported them)."""
    server = endpoint.Endpoint(config.url, config.model, plan.endpoint_key)
    reply, summary, fate = endpoint.stream(server, text, raw, plan.max_tokens, plan.sampling, conversation,
                                           asked.schema, asked.prediction)
    return summary, 0, reply, (), fate


def endpoint_checks(target, plan: Plan, records: list[RunRecord]) -> tuple[EndpointCheck, ...]:
    """Per endpoint: runs whose text is the target alone's first run's on that prompt."""
    reference = {r.prompt: b"".join(map(target.piece, r.output)).decode("utf-8", errors="replace")
                 for r in records if r.config == BASELINE and r.repeat == 0}
    checks = []
    for config in (c for c in plan.configs if c.drafter == ENDPOINT):
        runs = [r for r in records if r.config == config.name]
        same = sum(r.output == reference.get(r.prompt) for r in runs)
        checks.append(EndpointCheck(config.name, config.url, config.model, same, len(runs)))
    return tuple(checks)


def run_once(target, draft, prompt: list[int], config: Config, plan: Plan, asked: Asked = NOTHING_ASKED):
    """Decode one prompt from an empty cache, consuming the loop's events as `run` does, under
    `asked.grammar` (GBNF) where given, drafting also from `asked.predicted_tokens` where given
    (not the target alone); (Summary, rounds that ended in a rejection, output ids, (drafted ids,
    kept) per round, what became of the prediction)."""
    target.truncate(0)
    if draft is not None:
        draft.truncate(0)
    drafter = make_drafter(config, target, draft)
    predicted = Prediction(asked.predicted_tokens) if asked.predicted_tokens is not None and drafter is not None else None
    output: list[int] = []
    rounds: list[tuple[tuple[int, ...], int]] = []

    def keep(event) -> None:
        output.extend(event.tokens)
        rounds.append((event.drafted, event.accepted))

    settings = GenerationConfig(plan.max_tokens, config.k, plan.sampling)
    with ExitStack() as owned:
        constraint = owned.enter_context(Grammar(target, asked.grammar)) if asked.grammar is not None else None
        drafting = drafter_for(target, drafter, settings, config.adaptive, prediction=predicted, quoted=asked.quoted,
                               example=asked.example)
        _, summary = consume(generate(target, drafting, prompt, settings, constraint), keep)
        recheck_costs(target, drafting)
    if summary.stop_reason == "interrupted":
        raise KeyboardInterrupt
    fate = report(predicted, output, summary.by_source.get(Source.PREDICTION)) if predicted is not None else None
    return summary, summary.rejected_rounds, tuple(output), tuple(rounds), fate


def make_drafter(config: Config, target, draft):
    """A fresh drafter for a configuration (None for the target alone)."""
    if config.drafter == "model":
        return ModelDrafter(draft)
    if config.drafter == "lookup":
        return PromptLookupDrafter()
    return None


def audit(target, prompts: list[list[int]], records: list[RunRecord],
          grammars: list[str | None] | None = None) -> list[Audit]:
    """Compare every run with the target alone's first run on the same prompt (greedy runs only);
    `grammars`: each prompt's GBNF where its output was constrained."""
    reference = {r.prompt: r for r in records if r.config == BASELINE and r.repeat == 0}
    groups: dict[tuple[int, str], list[RunRecord]] = {}
    for record in records:
        groups.setdefault((record.prompt, record.config), []).append(record)
    audits = []
    for (p, config), runs in groups.items():
        base = reference[p]
        bad = [r for r in runs if r.output != base.output]
        gbnf = grammars[p] if grammars else None
        first = (divergence(target, prompts[p], base.output, bad[0].output, bad[0].rounds, base.rounds, gbnf)
                 if bad else None)
        audits.append(Audit(p, config, len(runs), len(bad), first))
    return audits


Rounds = tuple[tuple[tuple[int, ...], int], ...]  # per round: (drafted ids, how many were kept)


def divergence(target, prompt: list[int], expected: tuple[int, ...], got: tuple[int, ...],
               rounds: Rounds = (), expected_rounds: Rounds = (), gbnf: str | None = None) -> Divergence:
    """The first position where `got` leaves `expected`, the target's top-2 margin there, and
    whether the target's own batched passes pick `got`'s token there. Where the runs' rounds are
    known their passes are replayed (the logits of both then are exactly those the runs saw);
    else the target alone's logits come one token at a time and the last 2..16 tokens are tried
    as one batch. A near-tie: both tokens within NEAR_TIE of the best. Under a grammar (`gbnf`)
    only the tokens it allows there compete, as they did in the runs: the margin, the best and
    the batched choice are taken among them."""
    position = next((i for i, (a, b) in enumerate(zip(expected, got)) if a != b), min(len(expected), len(got)))
    prefix = [*prompt, *expected[:position]]
    mask = allowed_mask(target, gbnf, expected[:position]) if gbnf is not None else None
    replayed = replayed_logits(target, prompt, expected, expected_rounds, position) if expected_rounds else None
    logits = _masked(replayed if replayed is not None else logits_after(target, prefix), mask)
    second, first = np.partition(logits, -2)[-2:]
    base, other = _token_at(target, expected, position, logits), _token_at(target, got, position, logits)
    near = None not in (base, other) and bool(max(first - logits[base], first - logits[other]) <= NEAR_TIE)  # ties of 3+ too
    if rounds:
        row = replayed_logits(target, prompt, got, rounds, position) if other is not None else None
        flip = row is not None and int(np.argmax(_masked(row, mask))) == other
    else:
        flip = other is not None and other in batched_choices(target, prefix, mask)
    return Divergence(position, base, other, _piece(target, base), _piece(target, other), float(first - second),
                      near or flip, flip)


def allowed_mask(target, gbnf: str, output: tuple[int, ...]) -> np.ndarray:
    """Which tokens the grammar allows after `output` (a bool per vocabulary id)."""
    with Grammar(target, gbnf) as grammar:
        grammar.accept(output)
        return grammar.round(()).allowed(0, np.arange(target.n_vocab))


def _masked(logits: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    return logits if mask is None else np.where(mask, logits, -np.inf)


def batched_choices(target, tokens: list[int], mask: np.ndarray | None = None,
                    sizes: tuple[int, ...] = (2, 4, 8, 16)) -> set[int]:
    """The target's greedy choices (among `mask`'s tokens) after `tokens` when the last 2, 4, 8 or
    16 of them are decoded as one batch, as a verify pass does: batched kernels round differently
    from one-token ones."""
    choices = set()
    for size in (n for n in sizes if n < len(tokens)):
        target.sync(tokens[:-size])
        choices.add(int(np.argmax(_masked(target.forward(tokens[-size:], all_logits=True)[-1], mask))))
    return choices


def replayed_logits(target, prompt: list[int], output: tuple[int, ...], rounds: Rounds,
                    position: int) -> np.ndarray | None:
    """The target's logits for output `position` with its passes replayed as the run made them:
    the same prefill, then each round's batch [last, drafted...], rolled back to what was kept.
    The cache then holds the numbers the run's did, computed by the same batch shapes, so the
    row is the one the run's verify saw (None past the rounds)."""
    target.truncate(0)
    target.prefill(prompt[:-1])
    last, start = prompt[-1], 0
    for drafted, kept in rounds:
        rows = target.forward([last, *drafted], all_logits=True)
        if start <= position <= start + kept:
            return rows[position - start].copy()
        target.truncate(len(target.tokens) - len(drafted) + kept)
        start += kept + 1
        if start > len(output):
            return None
        last = output[start - 1]
    return None


def _token_at(target, output: tuple[int, ...], position: int, logits: np.ndarray) -> int | None:
    """The output's token there; where it ended, the end token the target chose, else None."""
    if position < len(output):
        return output[position]
    top = int(np.argmax(logits))
    return top if target.is_eog(top) else None


def logits_after(target, tokens: list[int]) -> np.ndarray:
    """The target's next-token logits after `tokens`, as the target alone computes them."""
    target.sync(tokens[:-1])
    return target.forward([tokens[-1]], all_logits=False)[0].copy()


def _piece(target, token: int | None) -> str:
    if token is None or target.is_eog(token):
        return "(end)"
    return target.piece(token).decode("utf-8", errors="replace")


def peak_rss_mib() -> float:
    """This process's peak resident memory (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def memory_mib(status: str = "/proc/self/status") -> dict:
    """Resident memory now, with both models loaded: anonymous (repacked weights, KV caches, Python)
    apart from file-backed (mapped GGUF pages); empty where there is no /proc."""
    fields = {"RssAnon": "anonymous", "RssFile": "file", "VmRSS": "resident", "VmHWM": "peak"}
    out = {}
    try:
        lines = open(status, encoding="ascii").read().splitlines()
    except OSError:
        return out
    for line in lines:
        name, _, value = line.partition(":")
        if name in fields and value.split():
            out[fields[name]] = int(value.split()[0]) / 1024
    return out


def machine(target) -> dict:
    """What the numbers were measured on (the binding's version from the module itself: a copy
    without package metadata, as on the H100 of 2026-11-26, has one too)."""
    from specgen.llama.library import backend_name, build_info

    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "llama_cpp_python": build_info()[0],
        "specgen": __version__,
        "backend": backend_name(),
        "threads": target.threads,
        "target_layers": target.layers,
        "extra_bufts": target.kernels.on,
        "extra_bufts_reason": target.kernels.reason,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def encode_all(target, prompts: list[BenchPrompt], raw: bool) -> list[list[int]]:
    """Token ids of every prompt, chat-templated unless raw (as `specgen run` does); a
    conversation through the chat template whole (as `specgen chat` and serve do); one with
    tools through the template's own Jinja text and its tool prompt (as serve does)."""
    if raw and any(prompt.messages or prompt.tools for prompt in prompts):
        raise UsageError('--raw sends text as is, but a prompt file holds a "messages" conversation or "tools"; '
                         'drop --raw')
    return [encode_tool_chat(target, list(prompt.chat), list(prompt.tools)) if prompt.tools
            else encode_messages(target, list(prompt.messages)) if prompt.messages
            else encode_prompt(target, prompt.text, raw) for prompt in prompts]
