"""The registry of matched target/draft pairs: specgen's models.toml plus the user's own.

A user should never have to find a draft that fits a target or guess a filename, so specgen
ships a checked list of pairs (specgen/models/models.toml, package data). A models.toml in the
user's config directory adds pairs or replaces shipped ones by name. Both files are read
into frozen dataclasses; any mistake is reported as one line naming the file, the line and
what is wrong.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path, PurePosixPath, PureWindowsPath
from types import MappingProxyType

from specgen.decoding.tokens import MAX_DRAFT_TOKENS
from specgen.errors import SpecgenError, UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

CONFIG_DIR_ENV = "SPECGEN_CONFIG_DIR"
DEFAULT_DRAFT_TOKENS = 4
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]*-\d+(\.\d+)?[bm]:\d+(\.\d+)?[bm]$", re.IGNORECASE)
REPO_PART = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?$")  # the hub's rules, in ASCII

_MODEL_KEYS = {"repo", "file", "quant", "size_gb", "license", "gated", "base"}
_PAIR_KEYS = {"description", "draft_tokens", "target", "draft"}
_TOP_KEYS = {"default_pair", "pairs"}


class RegistryError(SpecgenError):
    """A models.toml file is malformed."""


class UnknownPair(UsageError):
    """No pair of that name in the registry."""


@dataclass(frozen=True)
class ModelFile:
    """One GGUF file on the Hugging Face hub."""

    repo: str
    file: str
    quant: str = ""
    size_gb: float = 0.0
    license: str = ""
    gated: bool = False
    base: str = ""  # the original model the GGUF was converted from ("Qwen/Qwen2.5-7B-Instruct"): what vLLM loads


@dataclass(frozen=True)
class Pair:
    """A target and a draft that share a vocabulary, with the draft length that suits them."""

    name: str
    target: ModelFile
    draft: ModelFile
    draft_tokens: int = DEFAULT_DRAFT_TOKENS
    description: str = ""
    source: str = ""  # the models.toml that defined it


@dataclass(frozen=True)
class Registry:
    pairs: Mapping[str, Pair]
    default: str

    def get(self, name: str) -> Pair:
        """The pair called `name`; UnknownPair suggests the closest names."""
        if name in self.pairs:
            return self.pairs[name]
        if not name.strip():
            raise UnknownPair(
                f"the pair's name is empty; name one, such as {self.default} ('specgen pairs' lists them all)"
            )
        raise UnknownPair(f"unknown pair '{name}'{_suggestion(name, list(self.pairs))}; 'specgen pairs' lists them all")


def repo_is_valid(repo: str) -> bool:
    """Whether `repo` is 'owner/name' as the hub allows: see REPO_PART, and no '--' or '..'."""
    parts = repo.split("/")
    return (
        len(parts) == 2
        and all(REPO_PART.match(part) for part in parts)
        and not ("--" in repo or ".." in repo or repo.endswith(".git"))
    )


def file_is_inside(file: str) -> bool:
    """Whether `file` is a name or a relative path that stays inside the folder it is joined to."""
    parts = file.split("/")
    return not (
        "\\" in file
        or PurePosixPath(file).is_absolute()
        or PureWindowsPath(file).drive
        or any(part in ("", ".", "..") for part in parts)
    )


def _suggestion(name: str, names: list[str]) -> str:
    close = [n for n in names if n.startswith(name) or name in n]
    close += [n for n in difflib.get_close_matches(name, names, n=3, cutoff=0.5) if n not in close]
    if not close:
        return ""
    return " (did you mean " + " or ".join(f"'{n}'" for n in close[:3]) + "?)"


def shipped_path() -> Path:
    """specgen's own models.toml, wherever the package is installed."""
    return Path(str(resources.files("specgen.models").joinpath("models.toml")))


def user_path() -> Path:
    """The user's models.toml: $SPECGEN_CONFIG_DIR, else the platform's config directory."""
    folder = os.environ.get(CONFIG_DIR_ENV)
    if not folder:
        from platformdirs import user_config_dir

        folder = user_config_dir("specgen")
    return Path(folder) / "models.toml"


def load_registry() -> Registry:
    """The shipped pairs, with the user's file (if any) adding to and overriding them."""
    pairs, default = read_file(shipped_path())
    user = user_path()
    if user.is_file():
        user_pairs, user_default = read_file(user)
        pairs = {**pairs, **user_pairs}
        default = user_default or default
    if default not in pairs:
        raise RegistryError(f"default_pair '{default}' is not a pair in {shipped_path()} or {user}")
    return Registry(MappingProxyType(pairs), default)


def read_file(path: Path) -> tuple[dict[str, Pair], str | None]:
    """Parse and validate one models.toml: its pairs by name and its default_pair, if set."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise RegistryError(f"cannot read {path}: {error}") from error
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise RegistryError(_syntax_message(path, error, text)) from error
    return _Validator(path, text).registry(data)


def _syntax_message(path: Path, error: Exception, text: str) -> str:
    """tomllib's message at the line it names ("at end of document": the last line)."""
    message = str(error)
    found = re.search(r"\(at line (\d+), column (\d+)\)", message)
    if found:
        message = message[: found.start()].strip()
        return f"{path}:{found.group(1)}: {message} (column {found.group(2)}); fix the TOML syntax"
    found = re.search(r"\(at end of document\)", message)
    if found:
        message = message[: found.start()].strip()
        return f"{path}:{max(len(text.splitlines()), 1)}: {message} (at the end); fix the TOML syntax"
    return f"{path}: {message}; fix the TOML syntax"


_KEY_PART = re.compile(r'\s*("(?:[^"\\]|\\.)*"|\'[^\']*\'|[A-Za-z0-9_-]+)\s*')


def key_path(text: str) -> tuple[str, ...] | None:
    """The dotted key of a TOML header (`[a."b"]`, `[[a]]`) or key line (`a.b = 1`), else None."""
    header = re.match(r"\s*\[\[?(.*?)\]\]?\s*(#.*)?$", text)
    body = header.group(1) if header else text.split("=", 1)[0] if "=" in text else None
    if body is None:
        return None
    parts, pos = [], 0
    while True:
        found = _KEY_PART.match(body, pos)
        if not found:
            return None
        parts.append(found.group(1).strip("\"'"))
        pos = found.end()
        if pos == len(body):
            return tuple(parts)
        if body[pos] != ".":
            return None
        pos += 1


def line_of(lines: list[str], path: tuple[str, ...]) -> int:
    """The first line (1-based) that shares the longest leading part with `path`: a key's own line
    where it has one, else the header or inline table that holds it, or a table inside it; 0 if none."""
    best, best_length = 0, 0
    table: tuple[str, ...] = ()
    for number, text in enumerate(lines, 1):
        parts = key_path(text)
        if parts is None:
            continue
        full = parts if text.lstrip().startswith("[") else table + parts
        if text.lstrip().startswith("["):
            table = parts
        length = next(
            (i for i, (a, b) in enumerate(zip(full, path, strict=False)) if a != b), min(len(full), len(path))
        )
        if length > best_length:
            best, best_length = number, length
    return best


class _Validator:
    """Turns parsed TOML into Pairs, or raises RegistryError with file:line and the problem."""

    _MISSING = object()

    def __init__(self, path: Path, text: str):
        self.path, self.lines = path, text.splitlines()

    def fail(self, problem: str, *where: str):
        """Raise the problem at the line of the key path `where` (as ("pairs", NAME, "target", "repo"))."""
        line = line_of(self.lines, where)
        raise RegistryError(f"{self.path}:{line}: {problem}" if line else f"{self.path}: {problem}")

    def registry(self, data: dict) -> tuple[dict[str, Pair], str | None]:
        for key in data.keys() - _TOP_KEYS:
            self.fail(f"unknown top-level key '{key}' (expected default_pair and [pairs.\"NAME\"] tables)", key)
        default = data.get("default_pair")
        if default is not None and not isinstance(default, str):
            self.fail("default_pair must be a pair name in quotes", "default_pair")
        tables = data.get("pairs", {})
        if not isinstance(tables, dict):
            self.fail("'pairs' must be tables like [pairs.\"llama3-8b:1b\"]", "pairs")
        return {name: self.pair(name, table) for name, table in tables.items()}, default

    def pair(self, name: str, table) -> Pair:
        section = ("pairs", name)
        if not NAME_PATTERN.match(name):
            self.fail(f"pair name '{name}' should look like family-SIZE:SIZE, e.g. 'llama3-8b:1b'", *section)
        if not isinstance(table, dict):
            self.fail(f"pair '{name}' must be a table", *section)
        for key in table.keys() - _PAIR_KEYS:
            self.fail(f"pair '{name}' has an unknown key '{key}'", *section, key)
        for role in ("target", "draft"):
            if not isinstance(table.get(role), dict):
                self.fail(f"pair '{name}' needs a [pairs.\"{name}\".{role}] table with repo and file", *section, role)
        draft_tokens = table.get("draft_tokens", DEFAULT_DRAFT_TOKENS)
        if type(draft_tokens) is not int or not 1 <= draft_tokens <= MAX_DRAFT_TOKENS:
            problem = f"pair '{name}': draft_tokens must be a whole number from 1 to {MAX_DRAFT_TOKENS}"
            self.fail(problem, *section, "draft_tokens")
        description = self.typed(table, "description", str, f"pair '{name}'", section, "")
        target = self.model(table["target"], f"pair '{name}' target", (*section, "target"))
        draft = self.model(table["draft"], f"pair '{name}' draft", (*section, "draft"))
        return Pair(name, target, draft, draft_tokens, description, str(self.path))

    def model(self, table: dict, where: str, section: tuple[str, ...]) -> ModelFile:
        for key in table.keys() - _MODEL_KEYS:
            self.fail(f"{where} has an unknown key '{key}'", *section, key)
        repo = self.typed(table, "repo", str, where, section)
        file = self.typed(table, "file", str, where, section)
        if repo.count("/") != 1 or " " in repo:
            self.fail(
                f"{where}: repo '{repo}' should be 'owner/name' as on the Hugging Face hub; fix it in {self.path.name}",
                *section,
                "repo",
            )
        if not repo_is_valid(repo):
            self.fail(
                f"{where}: repo '{repo}' is not a Hugging Face repo id (letters, digits, '_', '.' and '-', "
                f"no '--' or '..', none first or last but '_', at most 96 a part); fix it in {self.path.name}",
                *section,
                "repo",
            )
        if not file.endswith(".gguf"):
            self.fail(f"{where}: file '{file}' is not a .gguf file", *section, "file")
        if not file_is_inside(file):
            self.fail(
                f"{where}: file '{file}' must be a file name or a relative path inside the repo "
                f"(no '..', '.', empty parts, backslash or leading '/'); fix it in {self.path.name}",
                *section,
                "file",
            )
        size = self.typed(table, "size_gb", (int, float), where, section, 0.0)
        if isinstance(size, bool) or size < 0:
            self.fail(f"{where}: size_gb must be a number of gigabytes", *section, "size_gb")
        quant = self.typed(table, "quant", str, where, section, "")
        license_ = self.typed(table, "license", str, where, section, "")
        gated = self.typed(table, "gated", bool, where, section, False)
        base = self.typed(table, "base", str, where, section, "")
        if base and not repo_is_valid(base):
            self.fail(
                f"{where}: base '{base}' is not a Hugging Face repo id; fix it in {self.path.name}", *section, "base"
            )
        return ModelFile(repo, file, quant, float(size), license_, gated, base)

    def typed(self, table: dict, key: str, kind, where: str, section: tuple[str, ...], default=_MISSING):
        value = table.get(key, default)
        if value is self._MISSING:
            self.fail(f"{where} is missing '{key}'", *section)
        if not isinstance(value, kind):
            self.fail(f"{where}: '{key}' has the wrong type ({type(value).__name__})", *section, key)
        return value
