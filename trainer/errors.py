"""Errors a user can act on.

Anything raised as :class:`UserError` is shown as one line (no traceback) and, from the CLI, ends the
process with exit code 2. The message names the file or the config key and says what to do.

A :class:`UserError` carries a :class:`~trainer.message.Msg` (a code in ``words/`` and its values), so the app
words it in the reader's language with :meth:`UserError.say`; ``str(e)`` is its English, what the CLI prints, in
the words :mod:`codes.wording` has installed (the app's and the CLI's).
A plain string is still taken (the app's own errors, already worded for the reader).
"""

from __future__ import annotations

from codes import wording
from trainer.message import Msg


def _word(message: Msg | str, lang: str) -> str:
    return wording.say(message, lang)


def in_english(message: Msg | str) -> str:
    """``message`` in English: what ``str()`` of an error carrying it reads."""
    return _word(message, "en")


class UserError(Exception):
    """Bad input: a config key, a file or a folder the user can fix."""

    exit_code = 2

    def __init__(self, message: Msg | str):
        super().__init__(message)  # args keep the Msg: a pickled error (another process) still words itself
        self.msg = message

    @property
    def message(self) -> str:
        """The message in English, worded when it is read."""
        return _word(self.msg, "en")

    def say(self, lang: str) -> str:
        """The message in ``lang`` ("en" or "ko")."""
        return _word(self.msg, lang)

    def __str__(self) -> str:
        return self.message


class BadValue(ValueError):
    """A config validator's refusal: pydantic shows ``str()`` (the English), and the config's error words the
    message it carries in the reader's language."""

    def __init__(self, message: Msg | str):
        super().__init__(_word(message, "en"))
        self.msg = message


def error_reason(error: BaseException) -> str:
    """An unexpected error as a message names it: its type and its text, at most 300 characters."""
    return f"{type(error).__name__}: {error}"[:300]


def error_line(error: BaseException | str, limit: int = 200) -> str:
    """An error's first line, at most ``limit`` characters: what a message quotes of torch's long texts."""
    return str(error).split("\n")[0][:limit]


# How torch says a device ran out of memory: CUDA and ROCm ("CUDA out of memory", "HIP out of memory"), Apple's
# ("MPS backend out of memory"), the CPU allocator ("DefaultCPUAllocator: can't allocate memory"), the error's type.
OUT_OF_MEMORY_WORDS = ("out of memory", "can't allocate memory", "OutOfMemoryError")


def is_out_of_memory(error: BaseException | str) -> bool:
    """Whether ``error`` (an exception, or the text a run's status.json kept of one) is a device running out of memory."""
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    return any(w.lower() in text.lower() for w in OUT_OF_MEMORY_WORDS)
