"""What a front end asks of one generation, as one frozen value: the prompt's tokens, the
settings, what the reply must follow (a grammar, from a JSON schema or a tool-call format), the
text it is expected to resemble, and the copy sources shared with other generations."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from specgen.decoding.drafters.suffix import SuffixIndex
from specgen.decoding.loop import GenerationConfig
from specgen.llama.grammar import schema_example, schema_grammar


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
    sources kept beyond this generation (a chat's earlier replies, a `--lookup-cache`)."""

    prompt: tuple[int, ...]
    config: GenerationConfig
    auto: bool = False
    grammar: Rules | None = None
    prediction: tuple[int, ...] | None = None
    quoted: bool = False
    example: str = ""
    shared: tuple[SuffixIndex, ...] = ()

    def with_schema(self, schema: dict[str, Any]) -> Request:
        """The request answered in JSON that fits `schema`: its grammar, its example, quoted
        (a `GrammarError` when the schema cannot be a grammar)."""
        return replace(self, grammar=Rules(schema_grammar(schema)), example=schema_example(schema), quoted=True)
