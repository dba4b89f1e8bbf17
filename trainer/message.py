"""Something to tell a person, as a code and the values it names: :class:`~codes.message.Msg`, under the library's
name for it. The words themselves live in ``words/``; the trainer never words a message, it hands it on."""

from __future__ import annotations

from codes.message import Msg, chained, msg

__all__ = ["Msg", "chained", "msg"]
