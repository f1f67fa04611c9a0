"""Files put into a prompt: read as UTF-8 text and fenced under their name.

A file attached to a prompt (chat's /file, and `specgen run -f`) reaches the model in one
format: the name as the user wrote it, a colon, and the text in a Markdown code fence longer
than any run of backticks inside it, so nothing in the file can close the fence early. It lives
in terminal/, the layer under the command line, so chat and `run` (cli/generate.py) share it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from specgen.errors import UsageError


@dataclass(frozen=True)
class Attachment:
    """A file's text and the name the prompt gives it (the path as the user wrote it)."""

    name: str
    text: str

    @property
    def fenced(self) -> str:
        return fence(self.name, self.text)

    @property
    def lines(self) -> int:
        return self.text.count("\n") + (not self.text.endswith("\n") and bool(self.text))

    @property
    def size(self) -> int:
        """Bytes of UTF-8."""
        return len(self.text.encode("utf-8"))


def fence(name: str, text: str) -> str:
    """`name:` and the text in a fence of backticks longer than the longest run in it (3 at
    least), tagged with the name's extension (`py`, `md`) where it has one."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    marks = "`" * max(3, longest + 1)
    suffix = Path(name).suffix[1:]
    language = suffix if suffix.isalnum() else ""
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{name}:\n{marks}{language}\n{body}{marks}"


def attach(path: str) -> Attachment:
    """The file at `path` as an Attachment; UsageError (one line) when it cannot be read as text."""
    return Attachment(path, read_text(path))


def read_text(path: str) -> str:
    """A file's UTF-8 text (line ends as `\\n`); UsageError naming the file and the problem."""
    try:
        return Path(path).expanduser().read_text(encoding="utf-8")
    except FileNotFoundError:
        problem = "no such file"
    except IsADirectoryError:
        problem = "it is a folder; name a file in it"
    except PermissionError:
        problem = "permission denied"
    except UnicodeDecodeError:
        problem = "it is not UTF-8 text"
    except OSError as error:
        problem = error.strerror or str(error)
    raise UsageError(f"cannot read {path}: {problem}")
