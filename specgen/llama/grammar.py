"""A grammar on the output (JSON, a JSON schema, a tool call), over llama.cpp's grammar sampler.

`Grammar` implements the loop's `Constraint` (decoding.constraint): its sampler follows the
accepted tokens, and each round's verify rows are masked by a clone of it advanced through the
draft tokens before each row, so the loop never touches llama.cpp. A row is masked by handing
llama.cpp a `llama_token_data_array` over the whole vocabulary (a numpy structured array, no
copy per token): every token the grammar forbids gets -inf. One token is checked the same way
over a one-element array, which is what greedy decoding needs where the row's own argmax is
allowed.

JSON schemas become grammars through llama.cpp's own converter (`llama_cpp.llama_grammar`, as
`library.llama()` loads it), once `check_schema` has walked the schema within documented
bounds: the converter writes every count out in full (`maxLength: 5000000` took 10 s, and
`minItems: 2000000` a grammar of millions of rules), follows `$ref`s anywhere (even to the
web) and repeats a pattern's groups inline, so a schema is refused, naming the field, where any
length or count passes MAX_COUNT, a pattern would be written out past MAX_PATTERN, it has more
than MAX_NODES schemas, nests deeper than MAX_DEPTH, lists more than MAX_ENUM values, or refers
outside itself; the grammar written must stay under MAX_GBNF characters. Example documents
of their shape for auto's structure copies
(`schema_example`), whose keys are in the order that converter has the grammar write them.
A token the grammar forbids is never handed to llama.cpp's `accept`, which would abort the
process: each is checked first.
"""

from __future__ import annotations

import ctypes
import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from specgen.errors import SpecgenError
from specgen.llama.library import llama

# the converter's string character lets control characters through, which JSON forbids; llama.cpp's
# own converter (C++) writes the rule that keeps them out
_LOOSE_CHAR = r'char ::= [^"\\] |'
_JSON_CHAR = r'char ::= [^"\\\x7F\x00-\x1F] |'
MAX_NESTING = 2000  # llama.cpp rejects most grammars this deep anyway; at about 20,000 its parser crashes
MAX_COUNT = 1000  # the largest minLength, maxLength, minItems, maxItems, min/maxProperties, {n,m}
MAX_PATTERN = 4000  # the most characters a pattern may stand for once its repetitions are written out
MAX_NODES = 5000  # the most schemas (objects) one schema may hold, $ref targets counted once
MAX_DEPTH = 64  # the deepest nesting of schemas
MAX_ENUM = 1000  # the most values of one enum
MAX_GBNF = 1 << 20  # the longest grammar a schema may become, in characters
_COUNTS = (
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
)
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_REPEAT = r"\{\s*([0-9]*)\s*(?:,\s*([0-9]*)\s*)?\}"
_EXAMPLE_DEPTH = 12  # a schema nested deeper (or recursive by $ref) is written as a placeholder there
_EXAMPLE_VALUES = 500  # the most values an example holds; the rest are placeholders
_PLACEHOLDERS = {"string": "A", "integer": 0, "number": 0, "boolean": True, "null": None}
_CANDIDATE = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True)


class GrammarError(SpecgenError):
    """A grammar or schema that llama.cpp cannot use."""


def json_grammar() -> str:
    """GBNF for any JSON object (OpenAI's `json_object`)."""
    gbnf: str = llama().llama_grammar.JSON_GBNF
    return gbnf


def schema_grammar(schema: object) -> str:
    """GBNF for the JSON documents `schema` describes, by llama.cpp's converter, once the schema
    is known to be within bounds (`check_schema`)."""
    check_schema(schema)
    try:
        gbnf: str = llama().llama_grammar.json_schema_to_gbnf(json.dumps(schema)).replace(_LOOSE_CHAR, _JSON_CHAR)
    except Exception as error:  # noqa: BLE001 - any failure of the converter is the schema's (untrusted input)
        raise GrammarError(
            f"the JSON schema cannot be turned into a grammar ({type(error).__name__}: {error}); simplify it"
        ) from None
    if len(gbnf) > MAX_GBNF:
        raise GrammarError(
            f"the JSON schema makes a grammar of {len(gbnf)} characters; specgen takes at most "
            f"{MAX_GBNF}: use fewer or smaller lengths, counts and patterns"
        )
    return gbnf


def check_schema(schema: object, where: str = "schema") -> None:
    """Walk a JSON schema (and what its local `$ref`s name, once each) before any work on it;
    GrammarError naming the field (`where` and its path) at the first bound it passes."""
    if not isinstance(schema, dict):
        raise GrammarError(f'{where}: a JSON schema must be an object, such as {{"type": "object", "properties": ...}}')
    walked: set[str] = set()
    stack: list[tuple[object, str, int]] = [(schema, where, 0)]
    nodes = 0
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, list):
            stack.extend((item, f"{path}[{index}]", depth) for index, item in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        nodes += 1
        if nodes > MAX_NODES:
            raise GrammarError(f"{where}: the JSON schema holds more than {MAX_NODES} schemas; simplify it")
        if depth > MAX_DEPTH:
            raise GrammarError(f"{_named(path)}: the JSON schema nests deeper than {MAX_DEPTH} levels; flatten it")
        _check_node(node, path)
        ref = node.get("$ref")
        if isinstance(ref, str) and ref not in walked:
            walked.add(ref)
            stack.append((_resolve(schema, ref), f"{path}.$ref", depth + 1))
        for key, value in node.items():
            if isinstance(value, (dict, list)) and key not in ("enum", "const", "examples", "default", "required"):
                stack.append((value, f"{path}.{key}", depth + 1))


def _check_node(node: dict[str, Any], path: str) -> None:
    """The bounds of one schema's own keywords."""
    for key in _COUNTS:
        value = node.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not 0 <= value <= MAX_COUNT:
            raise GrammarError(
                f"{_named(path)}.{key} is {value}; specgen takes 0 to {MAX_COUNT}: bound it lower (or leave it out)"
            )
    for key in _BOUNDS:
        value = node.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**18:
            raise GrammarError(f"{_named(path)}.{key} is {value}; specgen takes numbers under 10^18 there")
    enum = node.get("enum")
    if isinstance(enum, list) and len(enum) > MAX_ENUM:
        raise GrammarError(f"{_named(path)}.enum lists {len(enum)} values; specgen takes at most {MAX_ENUM}")
    ref = node.get("$ref")
    if ref is not None and (not isinstance(ref, str) or not ref.startswith("#")):
        raise GrammarError(
            f"{_named(path)}.$ref is {json.dumps(ref)[:80]}; specgen follows only references inside the "
            "schema (#/$defs/...): put the schema it names in $defs"
        )
    pattern = node.get("pattern")
    if isinstance(pattern, str) and pattern_size(pattern) > MAX_PATTERN:
        raise GrammarError(
            f"{_named(path)}.pattern stands for more than {MAX_PATTERN} characters once its repetitions "
            f"are written out; specgen takes at most {MAX_PATTERN}: use smaller {{n,m}} counts"
        )


def _named(path: str) -> str:
    """A field's path, its middle left out where it is long (a schema nested a hundred deep)."""
    return path if len(path) <= 120 else f"{path[:50]}...{path[-60:]}"


def pattern_size(pattern: str) -> int:
    """How many characters a regular expression stands for once every {n,m} is written out (a
    character class, an escape or `.` counts one; `*`, `+` and `?` count once, as the converter
    writes them as rules): the sum of a group's parts, times its largest count."""
    groups: list[list[int]] = [[]]  # the sizes of the atoms of each open group
    at = 0
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            groups[-1].append(1)
            at += 2
            continue
        if char == "[":
            close = pattern.find("]", at + 2 if pattern[at + 1 : at + 2] == "]" else at + 1)
            groups[-1].append(1)
            at = len(pattern) if close < 0 else close + 1
            continue
        if char == "(":
            groups.append([])
        elif char == ")" and len(groups) > 1:
            inner = groups.pop()
            groups[-1].append(sum(inner))
        elif char == "{" and groups[-1]:
            repeat = re.match(_REPEAT, pattern[at:])
            if repeat:
                counts = [int(n) if len(n) < 10 else 10**9 for n in repeat.groups() if n]
                groups[-1][-1] *= max(counts, default=1) or 1
                at += repeat.end()
                continue
            groups[-1].append(1)
        elif char not in "|*+?^$":
            groups[-1].append(1)
        at += 1
    return sum(sum(group) for group in groups)


def schema_example(schema: object) -> str:
    """Documents of the shape `schema` describes, for the structure source to align a reply's
    first record with: its keys in the order llama.cpp's converter has the grammar write them
    (required properties in the schema's order, then the others), two elements per array (so
    that it shows what comes between them), each value a placeholder. The grammar lets a model
    put a space inside brackets or not, so the document is written both ways (`{"a": 1}`, then
    `{ "a": 1 }`), a line apart. "" for a schema that describes no object or array (or None)."""
    example = _example(schema, schema, 0, [_EXAMPLE_VALUES])
    if not isinstance(example, (dict, list)):
        return ""
    return _written(example, "") + "\n" + _written(example, " ")


def _written(value: Any, inner: str) -> str:
    """`value` as JSON with `", "` and `": "` between items, and `inner` inside brackets."""
    if isinstance(value, dict) and value:
        items = ", ".join(
            f"{json.dumps(key, ensure_ascii=False)}: {_written(item, inner)}" for key, item in value.items()
        )
        return "{" + inner + items + inner + "}"
    if isinstance(value, list) and value:
        return "[" + inner + ", ".join(_written(item, inner) for item in value) + inner + "]"
    return json.dumps(value, ensure_ascii=False)  # a placeholder, {} or []


def _example(schema: Any, root: Any, depth: int, budget: list[int]) -> Any:
    """A placeholder value of `schema` (refs resolved in `root`); `budget`: how many more values
    may be written (references can make a small schema describe a vast document)."""
    budget[0] -= 1
    if not isinstance(schema, dict) or depth > _EXAMPLE_DEPTH or budget[0] < 0:
        return "A"
    if isinstance(schema.get("$ref"), str):
        return _example(_resolve(root, schema["$ref"]), root, depth + 1, budget)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for combined in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(combined), list) and schema[combined]:
            return _example(schema[combined][0], root, depth + 1, budget)
    kind = schema.get("type")
    kind = next((k for k in kind if k != "null"), "null") if isinstance(kind, list) else kind
    if kind == "object" or isinstance(schema.get("properties"), dict):
        properties: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
        required: list[Any] = schema["required"] if isinstance(schema.get("required"), list) else []
        order = [k for k in properties if k in required] + [k for k in properties if k not in required]
        return {key: _example(properties[key], root, depth + 1, budget) for key in order}
    if kind == "array" or "items" in schema:
        items = schema.get("items")
        return [_example(items, root, depth + 1, budget) for _ in range(2)] if isinstance(items, dict) else []
    return _PLACEHOLDERS.get(kind, "A") if isinstance(kind, str) else "A"


def _resolve(root: Any, ref: str) -> Any:
    """The schema a local `#/...` reference names; None where it names none."""
    if not ref.startswith("#"):
        return None
    found = root
    for part in ref.lstrip("#").strip("/").split("/") if ref.strip("#/") else ():
        found = found.get(part) if isinstance(found, dict) else None
    return found


def nesting(gbnf: str) -> int:
    """The deepest nesting of parentheses in a grammar, outside its literals and character classes."""
    depth = deepest = 0
    quote = None  # the character that ends the literal or class being read
    escaped = False
    for char in gbnf:
        if quote is not None:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
        elif char in '"[':
            quote = '"' if char == '"' else "]"
        elif char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth -= 1
    return deepest


class Grammar:
    """The constraint of one generation: a grammar sampler that follows the accepted output.

    Owns two native samplers, the accepted state and one scratch clone per round, freed by
    `close` (a context manager)."""

    def __init__(self, model: Any, gbnf: str, root: str = "root"):
        if nesting(gbnf) > MAX_NESTING:  # llama.cpp's parser recurses per level: deep enough, it overflows the stack
            raise GrammarError(
                f"the grammar nests deeper than {MAX_NESTING} levels (a length or count in the "
                "schema, or a repetition in a pattern, in the thousands); bound it lower"
            )
        self._lib = llama()
        self._vocab = model.vocab_handle
        sampler = self._lib.llama_sampler_init_grammar(self._vocab, gbnf.encode(), root.encode())
        if not sampler:
            raise GrammarError("llama.cpp could not parse the grammar; run with SPECGEN_DEBUG=1 to see why")
        self.state = sampler  # the grammar after the accepted output
        self._scratch = None

    def close(self) -> None:
        self._drop_scratch()
        if self.state:
            self._lib.llama_sampler_free(self.state)
            self.state = None

    def __enter__(self) -> Grammar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the Constraint protocol --------------------------------------------------------------

    def round(self, drafted: Sequence[int]) -> GrammarRows:
        self._drop_scratch()
        return GrammarRows(self, list(drafted))

    def accept(self, tokens: Sequence[int]) -> None:
        for token in tokens:
            self.advance(self.state, token)

    # -- on a sampler -------------------------------------------------------------------------

    def advance(self, sampler: Any, token: int) -> None:
        """Feed `token` to `sampler`, once checked: llama.cpp aborts on a token its grammar forbids."""
        if not self.allowed(sampler, np.array([token]))[0]:
            raise SpecgenError(f"token {token} does not fit the grammar here; this is a bug in specgen")
        self._lib.llama_sampler_accept(sampler, token)

    def allowed(self, sampler: Any, tokens: np.ndarray) -> np.ndarray:
        """Which of `tokens` the grammar in `sampler`'s state allows next."""
        candidates = np.zeros(tokens.shape[0], dtype=_CANDIDATE)
        candidates["id"] = tokens
        lib = self._lib
        data = candidates.ctypes.data_as(ctypes.POINTER(lib.llama_token_data))
        array = lib.llama_token_data_array(data, candidates.shape[0], -1, False)
        lib.llama_sampler_apply(sampler, ctypes.byref(array))
        allowed: np.ndarray = candidates["logit"] == 0.0
        return allowed

    def scratch(self) -> Any:
        """A clone of the accepted state for this round's draft (made on first use)."""
        if self._scratch is None:
            self._scratch = self._lib.llama_sampler_clone(self.state)
        return self._scratch

    def _drop_scratch(self) -> None:
        if self._scratch is not None:
            self._lib.llama_sampler_free(self._scratch)
            self._scratch = None


class GrammarRows:
    """One round's masks (decoding.constraint.RowMasks): row 0 in the accepted state, row i in a
    scratch clone advanced through the draft's first i tokens."""

    def __init__(self, grammar: Grammar, drafted: list[int]):
        self.grammar, self.drafted = grammar, drafted
        self._advanced = 0  # draft tokens the scratch clone has taken

    def _sampler(self, row: int) -> Any:
        if row == 0:
            return self.grammar.state
        scratch = self.grammar.scratch()
        while self._advanced < row:
            self.grammar.advance(scratch, self.drafted[self._advanced])
            self._advanced += 1
        return scratch

    def allowed(self, row: int, tokens: np.ndarray) -> np.ndarray:
        return self.grammar.allowed(self._sampler(row), tokens)
