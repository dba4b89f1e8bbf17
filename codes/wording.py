"""Who puts a message into words. The trainer library holds codes and values (:class:`~codes.message.Msg`) and never
imports ``words/``; where it must hand on text (an error's English, a run folder's files, which people and older
versions of the app read worded in both languages), it asks here. ``words/`` installs itself here when it is
imported, which the app and the CLI do; without it a message stays a code: an error reads ``code {values}``, a file
holds the message's JSON, which ``words.say`` words when it is read."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from codes.message import Msg

Say = Callable[[Any, str], str]  # (message, lang) -> its text
Worded = Callable[[Any], Any]  # an object -> the same with every message in it worded in every language

_say: Say | None = None
_worded: Worded | None = None


def install(say: Say, worded: Worded) -> None:
    """Word messages with these (``words/__init__.py`` calls it as it is imported)."""
    global _say, _worded
    _say, _worded = say, worded


def say(message: Msg | str | Mapping[str, str], lang: str = "en") -> str:
    """``message`` in ``lang``; a plain string is already worded."""
    if isinstance(message, str):
        return message
    if _say is not None:
        return _say(message, lang)
    if isinstance(message, Msg):
        return f"{message.code} {message.plain().values}" if message.values else message.code
    return str(message.get(lang) or message.get("en", ""))


def worded(obj: Any) -> Any:
    """``obj`` with each message in it worded in every language (``{"en": …, "ko": …}``), or as its JSON where no
    words are installed."""
    if _worded is not None:
        return _worded(obj)
    if isinstance(obj, Msg):
        return obj.plain().to_json()
    if isinstance(obj, Mapping):
        return {k: worded(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [worded(v) for v in obj]
    return obj
