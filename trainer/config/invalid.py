"""A pydantic ValidationError as the one line a user reads: each key, its value and why it was refused, as a
:class:`~trainer.message.Msg` (``error.config.*``) so the app words it in the reader's language."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from trainer.errors import BadValue, in_english
from trainer.message import Msg, chained, msg

# pydantic's (and fieldtypes') error types that words/errors.py words in both languages as ``error.input.<type>``
WORDED_TYPES = frozenset({
    "greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number", "int_type",
    "int_parsing", "int_from_float", "float_type", "float_parsing", "bool_type", "bool_parsing", "string_type",
    "missing", "literal_error", "too_many_steps", "not_text", "nul_text", "too_long", "name_too_long",
})


def input_reason(err: Any) -> Msg | str:
    """Why pydantic refused a value: its own sentence, lower-cased. A message where ``words/`` has one for its type
    that reads the same in English (so the English line never changes), else that sentence as it is."""
    text = str(err["msg"]).lower()
    if err["type"] == "value_error":  # a validator of ours: its message, after pydantic's "Value error, "
        refusal = _validators_message(err)
        return _checked(msg("error.input.value_error", reason=refusal), text) if refusal else text
    if err["type"] not in WORDED_TYPES:
        return text
    # a whole-number bound reads without ".0", as pydantic writes it
    values = {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in (err.get("ctx") or {}).items()}
    if err["type"] == "literal_error":  # "'a', 'b' or 'c'", lower-cased as the whole sentence is
        head, sep, last = str(values.get("expected", "")).lower().rpartition(" or ")
        values["expected"] = msg("error.input.choices", head=head, last=last) if sep else last
    return _checked(msg(f"error.input.{err['type']}", **values), text)


def _checked(reason: Msg, text: str) -> Msg | str:
    try:
        return reason if in_english(reason) == text else text
    except (KeyError, IndexError, ValueError):  # a context this template does not expect
        return text


def _validators_message(err: Any) -> Msg | None:
    """The message a :class:`~trainer.errors.BadValue` from one of the config's validators carries."""
    error = (err.get("ctx") or {}).get("error")
    return error.msg if isinstance(error, BadValue) and isinstance(error.msg, Msg) else None


def format_validation_error(err: ValidationError, origin: str, model: type[BaseModel]) -> Msg:
    """The whole error of validating ``model`` (from the file ``origin``, if any)."""
    lines: list[Any] = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"])
        if e["type"] == "extra_forbidden":
            allowed = sorted(section_fields(model, ".".join(str(p) for p in e["loc"][:-1])))
            lines.append(msg("error.config.unknown_key", key=key, allowed=", ".join(allowed)))
        elif isinstance(e.get("input"), dict):  # a rule across keys: its message names them
            rule: Any = _validators_message(e) or e["msg"].removeprefix("Value error, ")
            lines.append(msg("error.config.rule", key=key, reason=rule) if key else rule)
        else:
            value: Any = repr(e.get("input"))
            if len(value) > 120:
                value = msg("error.config.long_value", head=value[:80], tail=value[-20:], n=len(value))
            lines.append(msg("error.config.bad_value", key=key, value=value, reason=input_reason(e)))
    problems = chained("error.and", lines)
    if origin:
        return msg("error.config.invalid_in", origin=origin, problems=problems)
    return msg("error.config.invalid", problems=problems)


def section_fields(model: type[BaseModel], section: str) -> list[str]:
    if section:
        for part in section.split("."):
            field = model.model_fields.get(part)
            if field is None or not isinstance(field.annotation, type):
                return []
            model = field.annotation
    return list(model.model_fields)
