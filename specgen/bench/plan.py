"""What a benchmark runs: the configurations a command line asks for, the plan over them, what
each prompt asks of every run, and the one generation a configuration makes of a prompt, which
the timed runs and the distribution audit both build (so that the audit checks the drafter that
was timed). A run's result is a `RunRecord`."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, replace
from typing import Any

from specgen.bench import endpoint
from specgen.bench.stats import BASELINE, ENDPOINT
from specgen.decoding.drafters.base import Drafter
from specgen.decoding.drafters.lookup import PromptLookupDrafter
from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.drafters.prediction import PredictionReport
from specgen.decoding.events import Summary
from specgen.decoding.loop import GenerationConfig
from specgen.decoding.sampling import SamplingParams
from specgen.decoding.tokens import MAX_DRAFT_TOKENS
from specgen.engine.generation import Generation
from specgen.engine.request import Request, Rules
from specgen.errors import UsageError
from specgen.llama.model import Model
from specgen.llama.vocabmap import DraftVocabulary
from specgen.models.registry import DEFAULT_DRAFT_TOKENS

AUTO = "auto"

Rounds = tuple[tuple[tuple[int, ...], int], ...]  # per round: (drafted ids, how many were kept)


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

    schema: dict[str, Any] | None = None
    grammar: str | None = None
    prediction: str | None = None
    predicted_tokens: tuple[int, ...] | None = None
    quoted: bool = False
    example: str = ""  # of the schema's shape, for auto's structure copies (`schema_example`)
    attached: tuple[int, ...] | None = None  # the text the prompt attached (`engine.attached`), in tokens


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
    rounds: Rounds = ()
    prediction: PredictionReport | None = None  # what became of the prompt's prediction, if it has one

    def ids(self) -> tuple[int, ...]:
        """A local run's output ids (only an endpoint's output is text)."""
        assert not isinstance(self.output, str), f"{self.config} is an endpoint: its output is text"
        return self.output


def make_drafter(config: Config, target: Model, draft: Model | DraftVocabulary | None) -> Drafter | None:
    """A fresh drafter for a configuration (None for the target alone)."""
    if config.drafter == "model":
        assert draft is not None, "a plan has draft-model configurations only with a draft model"
        return ModelDrafter(draft)
    if config.drafter == "lookup":
        return PromptLookupDrafter()
    return None


def generation(
    target: Model, drafter: Drafter | None, prompt: list[int], config: Config, settings: GenerationConfig, asked: Asked
) -> Generation:
    """The generation a configuration makes of a prompt, drafted by `drafter` (`make_drafter`'s)
    under what the prompt asks: its grammar, its prediction, its JSON."""
    request = Request(
        tuple(prompt),
        settings,
        config.adaptive,
        Rules(asked.grammar) if asked.grammar else None,
        asked.predicted_tokens,
        quoted=asked.quoted,
        example=asked.example,
        attached=asked.attached,
    )
    return Generation(target, drafter, request)


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


def configurations(
    ks: tuple[int | str, ...],
    draft_model: bool,
    lookup: bool,
    auto_cap: int = DEFAULT_DRAFT_TOKENS,
    endpoints: tuple[Config, ...] = (),
) -> tuple[Config, ...]:
    """The target alone first, the draft model at each K (and auto, up to auto_cap), prompt lookup
    at each K (without a draft model, auto copies only: lookup-auto), then the endpoints."""
    numbers = [k for k in ks if isinstance(k, int)]
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
            "nothing to compare with the target alone: give a draft model, leave out --no-lookup, or add an --endpoint"
        )
    return tuple(configs)


def endpoint_configs(endpoints: list[endpoint.Endpoint]) -> tuple[Config, ...]:
    """A configuration per endpoint, named after its host ("endpoint:127.0.0.1:8080")."""
    names = [f"{ENDPOINT}:{urllib.parse.urlsplit(e.url).netloc}" for e in endpoints]
    names = [name if names.count(name) == 1 else f"{name}#{i + 1}" for i, name in enumerate(names)]
    return tuple(Config(name, ENDPOINT, 0, url=e.url, model=e.model) for name, e in zip(names, endpoints, strict=True))
