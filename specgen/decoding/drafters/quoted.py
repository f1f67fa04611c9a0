"""The prompt's text as a JSON string writes it: a copy source for replies written in JSON.

A reply in JSON (a tool call's arguments, the records a schema asks for) quotes the text it was
given inside JSON strings, where a line ends in `\\n` and a quote is `\\"`. Its tokens there are
not the prompt's, so copies from the prompt break at every line end and every quote. The
prompt's text escaped as JSON escapes it, then tokenized, is a source whose copies run on across
them: an agent's tool call that writes a file back, edited, copies it line after line.
"""

from __future__ import annotations

from specgen.decoding.drafters.base import Vocabulary
from specgen.decoding.drafters.suffix import SuffixIndex
from specgen.decoding.tokens import Utf8Stream

# what JSON writes for the characters a string cannot hold as they are (RFC 8259, section 7)
_ESCAPES = {
    ord('"'): '\\"',
    ord("\\"): "\\\\",
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
    ord("\b"): "\\b",
    ord("\f"): "\\f",
    **{c: f"\\u{c:04x}" for c in range(0x20) if c not in (8, 9, 10, 12, 13)},
}


def json_escaped(text: str) -> str:
    """`text` as it stands between the quotes of a JSON string; non-ASCII characters kept as they
    are, as models write them."""
    return text.translate(_ESCAPES)


def quoted_source(prompt: list[int], vocabulary: Vocabulary) -> SuffixIndex | None:
    """An index over the prompt's text escaped as JSON, in the target's tokens; None where
    escaping changes nothing (the prompt's own index serves)."""
    text = Utf8Stream().feed(b"".join(vocabulary.piece(t) for t in prompt))
    escaped = json_escaped(text)
    if escaped == text:
        return None
    return SuffixIndex(vocabulary.tokenize(escaped))
