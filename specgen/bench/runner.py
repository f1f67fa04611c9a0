"""Measure speculative decoding against the target alone, honestly: same engine, interleaved.

For each prompt every configuration (the target alone, the draft model at each K, prompt lookup
at each K, and any OpenAI-compatible endpoint given, see `endpoint`) runs once per repeat, in
turn and in reverse every other repeat (A B C C B A ...), so slow drift of the machine (heat,
other load) hits all of them alike and none always runs first;
warm-up repeats run the same way and are dropped. Every run
starts from an empty KV cache, so prefill is measured alike too. At temperature 0 an audit
checks that each output equals the target alone's token for token and, where it does not,
reads the target's top-2 logit margin at the first difference (`audit`); when sampling, the
distribution audit compares the first tokens over many seeds instead, sampling the very
generations the timed runs make (`plan.generation`). After the runs, isolated passes of both
models are timed (`llama.calibrate`) for the predicted speedups, and the target's again after
each long prompt (`after_prompt`), where its passes run. `stats` turns the runs into the
reported numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from specgen.bench import endpoint
from specgen.bench.audit import NEAR_TIE, Audit, DistributionAudit, audit, distribution_audit
from specgen.bench.machine import machine, memory_mib, peak_rss_mib
from specgen.bench.plan import AUTO, NOTHING_ASKED, Asked, Config, Plan, RunRecord, generation, make_drafter
from specgen.bench.prompts import BenchPrompt
from specgen.bench.stats import BASELINE, ENDPOINT, Stats, Verdict, summarize, verdict
from specgen.decoding.costs import StepCosts
from specgen.decoding.events import Round
from specgen.decoding.loop import GenerationConfig
from specgen.decoding.policy import LOOKUP_MAX
from specgen.engine.attached import attached_text, last_user_text
from specgen.errors import UsageError
from specgen.llama.calibrate import DEPTH_MIN, depth_factors, measured_costs
from specgen.llama.grammar import GrammarError, schema_example, schema_grammar
from specgen.llama.model import Model
from specgen.llama.pair import encode_messages, encode_prompt, encode_tool_chat
from specgen.llama.vocabmap import DraftVocabulary

Started = Callable[[int, int, Config, "int | None"], None]  # (run index, prompt, configuration, repeat)
SCHEMA = "specgen-bench/1"


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
    step_costs: StepCosts | None  # from the calibration
    memory_mib: dict[str, float] = field(default_factory=dict)  # resident memory at the end, by kind (Linux)
    machine: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    prompt_costs: tuple[StepCosts, ...] = ()  # the costs after each prompt (`after_prompt`)

    def copy_ceiling(self) -> tuple[int, float] | None:
        """The most a copy kept whole gains on the measured costs: (tokens a pass, speedup)."""
        return self.step_costs.copy_ceiling(LOOKUP_MAX) if self.step_costs is not None else None

    def prompt_ceilings(self) -> tuple[tuple[int, float], ...]:
        """The most a copy kept whole gains after each prompt (`copy_ceiling` at its costs)."""
        return tuple(costs.copy_ceiling(LOOKUP_MAX) for costs in self.prompt_costs)

    def _ceilings(self) -> tuple[tuple[int, float] | None, ...]:
        """Each prompt's copy ceiling after it, None for every prompt where none was measured."""
        return self.prompt_ceilings() if self.prompt_costs else (None,) * len(self.prompts)

    def to_dict(self) -> dict:
        names = [p.name for p in self.prompts]
        audit = None
        if self.audits is not None:
            checks = [{**asdict(a), "prompt": names[a.prompt]} for a in self.audits]
            audit = {
                "identical": not any(a.diverged for a in self.audits),
                "suspect": sum(1 for a in self.audits if a.first and not a.first.near_tie),
                "near_tie_margin": NEAR_TIE,
                "checks": checks,
            }
        return {
            "schema": SCHEMA,
            "settings": {**self.settings, **_plan_dict(self.plan)},
            "machine": self.machine,
            "peak_rss_mib": self.peak_rss_mib,
            "memory_mib": self.memory_mib,
            "step_costs": _costs_dict(self.step_costs),
            "prompts": [
                {
                    "name": p.name,
                    "kind": p.kind,
                    "prompt_tokens": n,
                    "text": p.text,
                    "prediction": p.prediction,
                    "copy_ceiling": {"tokens": ceiling[0], "speedup": ceiling[1]} if ceiling else None,
                }
                for p, n, ceiling in zip(self.prompts, self.prompt_tokens, self._ceilings(), strict=True)
            ],
            "configs": [asdict(c) for c in self.plan.configs],
            "results": [{**asdict(s), "time_split": s.time_split()} for s in self.stats],
            "audit": audit,
            "distribution_audit": self.distribution.to_dict(names) if self.distribution else None,
            "verdict": asdict(self.verdict),
            "endpoints": [asdict(e) for e in self.endpoints],
            "runs": [
                {
                    "prompt": names[r.prompt],
                    "config": r.config,
                    "repeat": r.repeat,
                    "rejections": r.rejections,
                    **r.summary.to_dict(),
                    "prediction": r.prediction.to_dict() if r.prediction else None,
                }
                for r in self.runs
            ],
        }


def benchmark(
    target: Model,
    draft: Model | DraftVocabulary | None,
    prompts: list[BenchPrompt],
    plan: Plan,
    raw: bool,
    started: Started | None = None,
    settings: dict[str, Any] | None = None,
) -> BenchResult:
    """Encode the prompts, time isolated passes, run the plan, audit the outputs, and summarize."""
    tokens = encode_all(target, prompts, raw)
    asks = [
        Asked(
            p.json_schema,
            prompt_grammar(p),
            p.prediction,
            tuple(target.continuation(p.prediction)) if p.prediction else None,
            quoted=p.json_schema is not None or bool(p.tools),
            example=schema_example(p.json_schema),
            attached=attached_tokens(target, p, raw),
        )
        for p in prompts
    ]
    records = run_plan(target, draft, tokens, plan, started, [(p.text, raw, p.messages) for p in prompts], asks)
    costs = isolated_costs(target, draft)
    prompt_costs = tuple(after_prompt(target, t, costs) for t in tokens)
    local = [r for r in records if r.config in {c.name for c in plan.local.configs}]
    audits = tuple(audit(target, tokens, local, [a.grammar for a in asks])) if plan.sampling.greedy else None
    sampled = sampled_audit(target, draft, tokens, plan, started, asks)
    stats = summarize(records, plan.configs, prompts, costs, prompt_costs)
    return BenchResult(
        plan,
        tuple(prompts),
        tuple(len(t) for t in tokens),
        tuple(records),
        tuple(stats),
        audits,
        sampled,
        verdict(stats),
        endpoint_checks(target, plan, records),
        peak_rss_mib(),
        costs,
        memory_mib(),
        machine(target),
        settings or {},
        prompt_costs,
    )


def isolated_costs(target: Model, draft: Model | DraftVocabulary | None) -> StepCosts:
    """Time passes of both models outside the loop, from empty caches, after the runs have warmed
    them up (the first passes after loading fault the weights in and would inflate the unit);
    kept as this machine's cached costs, which later runs decide from (`measured_costs`)."""
    target.truncate(0)
    if draft is not None:
        draft.truncate(0)
    return measured_costs(target, draft)


def after_prompt(target: Model, prompt: list[int], costs: StepCosts) -> StepCosts:
    """The costs of the target's passes after `prompt` (`calibrate.depth_factors`, in the
    calibration's one-token unit), which price its runs' rounds and bound what a copy gains on
    it: after a long prompt a batched pass costs more against a one-token pass than the
    calibration, timed after an empty cache, says. `costs` themselves after a short prompt
    (nothing is timed or decoded for it)."""
    if len(prompt) < DEPTH_MIN:
        return costs
    target.truncate(0)
    target.prefill(prompt)
    try:
        return costs.scaled(depth_factors(target, costs))
    finally:
        target.truncate(0)


def sampled_audit(
    target: Model,
    draft: Model | DraftVocabulary | None,
    tokens: list[list[int]],
    plan: Plan,
    started: Started | None = None,
    asks: Sequence[Asked] = (),
) -> DistributionAudit | None:
    """The distribution audit when sampling with audit seeds; its progress continues the runs'
    count; every configuration is asked what the timed runs were (`asks`: grammar, prediction, JSON)."""
    if plan.sampling.greedy or not plan.audit_seeds:
        return None
    timed = len(tokens) * (plan.warmup + plan.repeats) * len(plan.configs)
    progress = None if started is None else lambda done, p, config: started(timed + done, p, config, None)
    return distribution_audit(target, draft, tokens, plan.local, make_drafter, progress, asks)


def _costs_dict(costs: StepCosts | None) -> dict[str, Any] | None:
    if costs is None:
        return None
    ceiling = costs.copy_ceiling(LOOKUP_MAX)
    return {
        "verify": {str(n): s for n, s in sorted(costs.verify.items())},
        "draft_step": costs.draft_step,
        "switch": costs.switch,
        "copy_ceiling": {"tokens": ceiling[0], "speedup": ceiling[1]},
    }


def _plan_dict(plan: Plan) -> dict:
    ks = sorted({c.k for c in plan.configs if c.k and not c.adaptive})
    auto = [AUTO] if any(c.adaptive for c in plan.configs) else []
    sampling = plan.sampling
    return {
        "max_tokens": plan.max_tokens,
        "draft_tokens": [*ks, *auto],
        "repeats": plan.repeats,
        "warmup": plan.warmup,
        "temperature": sampling.temperature,
        "top_k": sampling.top_k,
        "top_p": sampling.top_p,
        "seed": sampling.seed,
        "audit_seeds": plan.audit_seeds,
        "audit_tokens": plan.audit_tokens,
    }


def prompt_grammar(prompt: BenchPrompt) -> str | None:
    """The grammar of a prompt's JSON schema (None without one); a schema that cannot be one is a
    UsageError naming the prompt."""
    if prompt.json_schema is None:
        return None
    try:
        return schema_grammar(prompt.json_schema)
    except GrammarError as error:
        raise UsageError(f"prompt {prompt.name}: json_schema: {error}") from None


def run_plan(
    target: Model,
    draft: Model | DraftVocabulary | None,
    prompts: list[list[int]],
    plan: Plan,
    started: Started | None = None,
    texts: Sequence[tuple[str, bool, tuple[tuple[str, str], ...]]] = (),
    asks: Sequence[Asked] = (),
) -> list[RunRecord]:
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
                    record = run_endpoint(config, *texts[p], plan, asked, p, repeat)
                else:
                    record = run_once(target, draft, tokens, config, plan, asked, p, repeat)
                if repeat >= 0:
                    records.append(record)
    return records


def run_endpoint(
    config: Config,
    text: str,
    raw: bool,
    conversation: tuple[tuple[str, str], ...],
    plan: Plan,
    asked: Asked = NOTHING_ASKED,
    prompt: int = 0,
    repeat: int = 0,
) -> RunRecord:
    """Stream the prompt from the endpoint, asking what `asked` asks (OpenAI's `response_format`
    and `prediction`): its Summary, its text, no rounds or rejections, and the prediction's counts
    as the server reported them."""
    server = endpoint.Endpoint(config.url, config.model, plan.endpoint_key)
    reply, summary, fate = endpoint.stream(
        server, text, raw, plan.max_tokens, plan.sampling, conversation, asked.schema, asked.prediction
    )
    return RunRecord(prompt, config.name, repeat, summary, 0, reply, (), fate)


def endpoint_checks(target: Model, plan: Plan, records: list[RunRecord]) -> tuple[EndpointCheck, ...]:
    """Per endpoint: runs whose text is the target alone's first run's on that prompt."""
    reference = {
        r.prompt: b"".join(map(target.piece, r.ids())).decode("utf-8", errors="replace")
        for r in records
        if r.config == BASELINE and r.repeat == 0
    }
    checks = []
    for config in (c for c in plan.configs if c.drafter == ENDPOINT):
        runs = [r for r in records if r.config == config.name]
        same = sum(r.output == reference.get(r.prompt) for r in runs)
        checks.append(EndpointCheck(config.name, config.url, config.model, same, len(runs)))
    return tuple(checks)


def run_once(
    target: Model,
    draft: Model | DraftVocabulary | None,
    tokens: list[int],
    config: Config,
    plan: Plan,
    asked: Asked = NOTHING_ASKED,
    prompt: int = 0,
    repeat: int = 0,
) -> RunRecord:
    """Decode one prompt from an empty cache, consuming the loop's events as `run` does, as the
    generation `plan.generation` builds (under `asked.grammar` where given, drafting also from
    `asked.predicted_tokens` where given); its record as run `repeat` of prompt number `prompt`."""
    target.truncate(0)
    if draft is not None:
        draft.truncate(0)
    output: list[int] = []
    rounds: list[tuple[tuple[int, ...], int]] = []

    def keep(event: Round) -> None:
        output.extend(event.tokens)
        rounds.append((event.drafted, event.accepted))

    settings = GenerationConfig(plan.max_tokens, config.k, plan.sampling)
    with generation(target, make_drafter(config, target, draft), tokens, config, settings, asked) as timed:
        _, summary = timed.consume(keep)
    if summary.stop_reason == "interrupted":
        raise KeyboardInterrupt
    fate = timed.report(output, summary)
    return RunRecord(prompt, config.name, repeat, summary, summary.rejected_rounds, tuple(output), tuple(rounds), fate)


def encode_all(target: Model, prompts: list[BenchPrompt], raw: bool) -> list[list[int]]:
    """Token ids of every prompt, chat-templated unless raw (as `specgen run` does); a
    conversation through the chat template whole (as `specgen chat` and serve do); one with
    tools through the template's own Jinja text and its tool prompt (as serve does)."""
    if raw and any(prompt.messages or prompt.tools for prompt in prompts):
        raise UsageError(
            '--raw sends text as is, but a prompt file holds a "messages" conversation or "tools"; drop --raw'
        )
    return [
        encode_tool_chat(target, list(prompt.chat), list(prompt.tools))
        if prompt.tools
        else encode_messages(target, list(prompt.messages))
        if prompt.messages
        else encode_prompt(target, prompt.text, raw)
        for prompt in prompts
    ]


def attached_tokens(target: Model, prompt: BenchPrompt, raw: bool) -> tuple[int, ...] | None:
    """The text a prompt attached (the fenced blocks of its last user message, `engine.attached`),
    in the target's tokens, as `run`, `chat` and `serve` follow it; None in raw mode, beside a
    prediction, or where it attached none."""
    if raw or prompt.prediction:
        return None
    text = attached_text(last_user_text(prompt.messages) if prompt.messages else prompt.text)
    return tuple(target.continuation(text)) if text else None
