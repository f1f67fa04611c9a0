"""The one exception type that carries a message meant for the user, and the one line it becomes.

Library code raises SpecgenError (or a subclass) with a single line that names the problem
and the way out; the CLI's main() prints that line and exits non-zero, with no traceback.
Where Python cannot unwind (ggml aborting inside C), `exit_now` prints the same line and ends
the process at once.
"""

from __future__ import annotations

import os
import sys


class SpecgenError(Exception):
    """A problem the user can fix; str(error) is the one line they will read."""

    exit_code = 1


class UsageError(SpecgenError):
    """Bad arguments or input: exit code 2, like other command-line usage errors."""

    exit_code = 2


def error_line(message: str) -> str:
    return f"specgen: error: {message}"


def exit_now(error: SpecgenError) -> None:
    """Print the error's line on stderr and end the process now, from any thread (no unwinding:
    for a C library about to abort, whose state no Python cleanup could use)."""
    sys.stderr.write(error_line(str(error)) + "\n")
    sys.stderr.flush()
    os._exit(error.exit_code)
