"""Something to tell a person, as a code and the values it names; the words themselves live in ``words/``.

The trainer library returns :class:`Msg` where it used to return finished sentences, so it holds no language:
the app and the CLI word a message in the reader's language with ``words.say(msg, lang)``; the library itself asks
:mod:`codes.wording` where it must put a message into words (an error's English, a run folder's files).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Msg:
    """A message: ``code`` names a template in the word tables, ``values`` fill its ``{fields}``. A value may be
    another :class:`Msg` (worded in the same language)."""

    code: str
    values: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "values": {k: v.to_json() if isinstance(v, Msg) else v for k, v in self.values.items()}}

    def plain(self) -> Msg:
        """This message with values JSON holds: a path, an exception or another object becomes its text."""
        def one(v: Any) -> Any:
            if isinstance(v, Msg):
                return v.plain()
            return v if v is None or isinstance(v, str | int | float | bool | list | dict) else str(v)

        return Msg(self.code, {k: one(v) for k, v in self.values.items()})

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Msg:
        values = {k: cls.from_json(v) if isinstance(v, dict) and "code" in v else v
                  for k, v in data.get("values", {}).items()}
        return cls(str(data["code"]), values)


def msg(code: str, **values: Any) -> Msg:
    return Msg(code, values)


def chained(code: str, items: list[Any]) -> Any:
    """``items`` joined two at a time by the template ``code`` (fields ``first`` and ``rest``), like ``a; b; c`` or
    ``a or b or c``; one item is itself."""
    out = items[-1]
    for item in reversed(items[:-1]):
        out = msg(code, first=item, rest=out)
    return out
