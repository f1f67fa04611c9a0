"""The one exception type that carries a message meant for the user.

Library code raises SpecgenError (or a subclass) with a single line that names the problem
and the way out; the CLI's main() prints that line and exits non-zero, with no traceback.
"""

from __future__ import annotations


class SpecgenError(Exception):
    """A problem the user can fix; str(error) is the one line they will read."""

    exit_code = 1


class UsageError(SpecgenError):
    """Bad arguments or input: exit code 2, like other command-line usage errors."""

    exit_code = 2
