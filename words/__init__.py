"""Every word LoRA Doctor shows people, in English and Korean: one table of templates keyed by code.

The trainer library returns codes and values (:class:`codes.message.Msg`); the app and the CLI word them here with
:func:`say`, and the library through :mod:`codes.wording`, where this package installs itself. Each module of this package holds one area's templates as ``TEXTS = {code: (english, korean)}``;
:data:`TEXTS` is all of them, and a code defined twice is an error at import.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from codes import wording
from codes.message import Msg

from .korean import resolve

LANGS = ("en", "ko")

TEXTS: dict[str, tuple[str, str]] = {}


def register(area: str, texts: Mapping[str, tuple[str, str]]) -> None:
    """Add one area's templates; a code another area already defined is a developer's error."""
    clash = sorted(set(texts) & set(TEXTS))
    if clash:
        raise ValueError(f"words/{area}: codes defined twice: {', '.join(clash)}")
    TEXTS.update(texts)


def say(message: Msg | str | Mapping[str, str], lang: str = "en", **values: Any) -> str:
    """A message in ``lang`` ("en" or "ko"; anything else reads as English).

    ``message`` is a :class:`Msg`, its JSON (``{"code", "values"}``), a bare code (with ``values``), or an already
    worded ``{"en": …, "ko": …}`` (what run folders hold); a value may be any of these as well."""
    if is_msg_json(message):
        message = Msg.from_json(dict(message))  # type: ignore[arg-type]
    if isinstance(message, Mapping):
        return str(message.get(lang) or message.get("en", ""))
    if isinstance(message, Msg):
        values = {**message.values, **values}
        code = message.code
    else:
        code = message
    en, ko = TEXTS[code]
    text = ko if lang == "ko" else en
    if not values:
        return text
    filled = {k: say(v, lang) if isinstance(v, Msg | Mapping) else v for k, v in values.items()}
    if lang == "ko":  # "{dose}은(는)" becomes "{dose}은" or "{dose}는", whichever fits the value (words/korean.py)
        text = resolve(text, filled)
    return text.format(**filled)


def both(message: Msg | str | Mapping[str, str], **values: Any) -> dict[str, str]:
    """``{"en": …, "ko": …}``: a message worded in both languages, for a file both kinds of reader open."""
    return {lang: say(message, lang, **values) for lang in LANGS}


def is_msg_json(value: Any) -> bool:
    """``value`` is a :class:`Msg` as ``Msg.to_json`` (and ``dataclasses.asdict``) leave it."""
    return isinstance(value, Mapping) and "code" in value and set(value) <= {"code", "values"}


def worded(obj: Any) -> Any:
    """``obj`` with every message in it (a :class:`Msg` or its JSON) worded by :func:`both`: what a file that people
    and older versions of the app read holds."""
    if isinstance(obj, Msg) or is_msg_json(obj):
        return both(obj)
    if isinstance(obj, Mapping):
        return {k: worded(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [worded(v) for v in obj]
    return obj


def _load() -> None:
    from importlib import import_module
    from pkgutil import iter_modules

    for info in iter_modules(__path__):
        mod = import_module(f"{__name__}.{info.name}")
        register(info.name, getattr(mod, "TEXTS", {}))


_load()
wording.install(say, worded)  # the library words what it must hand on as text with these
