"""The OpenAI wire format of `specgen serve`: check request bodies, shape replies and chunks.

Pure Python, no server and no model, so every rule about what a client may send and what it
gets back sits in one package, one module per part of a body: `fields` (the typed-field readers
and ApiError), `request` (a whole OpenAI body, and what each endpoint reads), `messages`,
`sampling`, `structured` (response_format and tools), `prompts` (prompt, suffix, prediction),
`infill` (llama-server's /infill body) and `reply` (bodies, chunks, usage, the `specgen` object).
The names the server uses are gathered here.
"""

from specgen.serve.wire.fields import ApiError
from specgen.serve.wire.infill import parse_infill
from specgen.serve.wire.prompts import Infill
from specgen.serve.wire.reply import Logprob, Outcome, Reply, finish_reason, stats
from specgen.serve.wire.request import GenRequest, parse_request
from specgen.serve.wire.structured import ResponseFormat

__all__ = [
    "ApiError",
    "GenRequest",
    "Infill",
    "Logprob",
    "Outcome",
    "Reply",
    "ResponseFormat",
    "finish_reason",
    "parse_infill",
    "parse_request",
    "stats",
]
