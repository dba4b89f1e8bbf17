"""Run-folder files are read by people, by the app in either language and by older versions of it: every message
in them (a :class:`~trainer.message.Msg`) is written worded in both languages, ``{"en": …, "ko": …}``, as
before messages had codes, by the words the app or the CLI installed in :mod:`codes.wording` (the library itself
words nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codes import wording
from trainer.io import atomic_write_json


def worded(obj: Any) -> Any:
    """``obj`` with each message in it worded in both languages."""
    return wording.worded(obj)


def write_worded_json(path: str | Path, obj: Any) -> None:
    atomic_write_json(path, wording.worded(obj))
