"""What a front end asks of one generation, as one frozen value: the prompt's tokens, the
settings, what the reply must follow (a grammar, from a JSON schema or a tool-call format, with a
document of the schema's shape), the text it is expected to resemble, and the copy sources
shared with other generations. Each front end turns its own input (a --json-schema file, a
`response_format`, a bench prompt's "json_schema") into one, naming its own errors."""

from __future__ import annotations

from dataclasses import dataclass

from specgen.decoding.drafters.suffix import SuffixIndex
from specgen.decoding.loop import GenerationConfig
from specgen.decoding.sampling import SamplingParams


@dataclass(frozen=True)
class Rules:
    """A grammar the reply must follow: GBNF text and its start rule."""

    gbnf: str
    root: str = "root"


@dataclass(frozen=True)
class Request:
    """One generation's inputs.

    `auto`: the auto policy chooses each round, up to `config.draft_tokens`; `grammar`: what every
    token of the reply must fit; `prediction`: the text the reply is expected to resemble, in the
    target's tokens; `quoted`: the reply is written in JSON (a schema, tool calls), so auto copies
    also from the prompt's text as JSON escapes it; `example`: a document of the reply's JSON shape
    (`grammar.schema_example`), whose keys auto copies in the reply's first record; `shared`: copy
    sources kept beyond this generation (a chat's earlier replies, a `--lookup-cache`); `repeats`:
    the reply an earlier request with this very prompt got, followed like a prediction, in the
    place of `prediction` where both are given (`Source.REPEAT`), but not reported as one;
    `attached`: the text the prompt attached for the reply to work on (`engine.attached`),
    followed like a prediction where neither of those is given (`Source.ATTACHED`)."""

    prompt: tuple[int, ...]
    config: GenerationConfig
    auto: bool = False
    grammar: Rules | None = None
    prediction: tuple[int, ...] | None = None
    quoted: bool = False
    example: str = ""
    shared: tuple[SuffixIndex, ...] = ()
    repeats: tuple[int, ...] | None = None
    attached: tuple[int, ...] | None = None


def followed_reply(earlier: list[int] | None, predicted: bool, sampling: SamplingParams) -> tuple[int, ...] | None:
    """A request's `repeats`: the reply an earlier request with this very prompt got (`earlier`,
    None: none), where it is followed: greedy even in the place of the request's prediction (the
    same prompt gives the same reply), sampled only where the request gives none (`predicted`)."""
    if earlier is None or (predicted and not sampling.greedy):
        return None
    return tuple(earlier)
