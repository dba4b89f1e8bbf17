"""Errors a user can act on.

Anything raised as :class:`UserError` is shown as one line (no traceback) and, from the CLI, ends the
process with exit code 2. The message names the file or the config key and says what to do.
"""

from __future__ import annotations


class UserError(Exception):
    """Bad input: a config key, a file or a folder the user can fix."""

    exit_code = 2

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message
