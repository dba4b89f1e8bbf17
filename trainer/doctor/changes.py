"""A prescription's config change: applying exactly one change to a config, saying what it does, and whether
it moves the setting the way it means to. The knowledge base (:mod:`trainer.doctor.kb`) declares the changes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, model_validator

from trainer.config.schema import Config, from_dict
from trainer.message import Msg, msg

if TYPE_CHECKING:
    from trainer.doctor.kb import Prescription

Op = Literal["set", "mul", "min", "max", "preset"]
Intent = Literal["raise", "lower"]
OPS: tuple[str, ...] = get_args(Op)
INTENTS: tuple[str, ...] = get_args(Intent)
# Keys where 0 means "off": capping one at v must switch the feature on, not keep it off.
_ZERO_MEANS_OFF = {"optim.max_grad_norm"}


class FrozenModel(BaseModel):
    # knowledge-base entries are compared and hashed by identity, as the tables hold each once
    model_config = ConfigDict(extra="forbid", frozen=True)
    __eq__ = object.__eq__
    __hash__ = object.__hash__


class Change(FrozenModel):
    key: str
    op: Op
    value: Any = None
    requires: tuple[str, ...] = ()  # capabilities the machine must have (bf16_supported); the caller checks
    intent: Intent | None = None  # which way the change means to move the setting (see :func:`intent`)

    @model_validator(mode="after")
    def _complete(self) -> Change:
        if self.op != "preset" and "value" not in self.model_fields_set:
            raise ValueError("needs a value (none for op = preset)")
        v = self.value
        if self.op == "set" and isinstance(v, int | float) and not isinstance(v, bool) and self.intent is None:
            raise ValueError(f"a change that sets a number needs intent = one of {INTENTS}")
        return self


def apply_change(config: Config | dict, change: Change | Prescription | dict,
                 preset_dirs: list[Path] | None = None) -> Config:
    """A new, validated Config with exactly one change applied (a UserError if the result is out of range).
    A change to ``train.epochs`` goes to ``train.max_steps`` when that is set, since it then decides the length.
    ``preset_dirs``: where presets of the user's own are (a run's workspace), for a change back to the preset."""
    cfg, ch = as_config(config), _as_change(change)
    key = effective_key(cfg, ch.key)
    data = cfg.to_dict()
    preset = data.pop("preset", "")  # already folded into the values; don't re-apply it
    *sections, leaf = key.split(".")
    node = data
    for s in sections:
        node = node[s]
    node[leaf] = _preset_value(cfg, key, preset_dirs) if ch.op == "preset" else _new_value(key, cfg.get(key), ch)
    out = from_dict(data, origin=f"the change to {key}")
    out.preset = preset
    return out


def describe_change(change: Change | Prescription | dict, config: Config | dict | None = None,
                    preset_dirs: list[Path] | None = None) -> Msg:
    """What the change does (``change.<op>``); with a config, also the value it moves from and to."""
    ch = _as_change(change)
    cfg = None if config is None else as_config(config)
    key = ch.key if cfg is None else effective_key(cfg, ch.key)
    line = Msg(f"change.{ch.op}", {"key": key, "value": _fmt(ch.value)})
    if cfg is not None:
        return msg("change.from_to", change=line, old=_fmt(cfg.get(key)), new=_fmt(apply_change(cfg, ch, preset_dirs).get(key)))
    return line


def intent(change: Change | Prescription | dict) -> str | None:
    """Which way a change means to move its setting: declared for a "set" of a number, else from the op (mul by
    more or less than 1, max raises, min lowers); None for a switch, a name, or back to the preset."""
    ch = _as_change(change)
    if ch.intent is not None:
        return ch.intent
    if ch.op == "mul" and isinstance(ch.value, int | float) and ch.value != 1:
        return "raise" if ch.value > 1 else "lower"
    return {"max": "raise", "min": "lower"}.get(ch.op)


def moves_as_meant(config: Config | dict, change: Change | Prescription | dict,
                   preset_dirs: list[Path] | None = None) -> bool:
    """Whether the change, applied to this config, moves the setting the way it means to. "Put LoRA on the
    convolutions" (conv_rank set to 8) to strengthen a run whose conv_rank is 16 would lower it: not offered.
    A change that moves nothing is "as meant" here; callers refuse it as a no-op."""
    cfg, ch = as_config(config), _as_change(change)
    way = intent(ch)
    if way is None:
        return True
    key = effective_key(cfg, ch.key)
    old, new = cfg.get(key), apply_change(cfg, ch, preset_dirs).get(key)
    if key in _ZERO_MEANS_OFF:  # 0 is "off", i.e. no limit at all
        old, new = (math.inf if v == 0 else v for v in (old, new))
    return new == old or (new > old if way == "raise" else new < old)


# ---------------------------------------------------------------------------------------------- helpers


def _preset_value(cfg: Config, key: str, preset_dirs: list[Path] | None) -> Any:
    """``key`` as the run's preset sets it (the defaults' value for a run without a preset; a preset of the user's
    own is looked for in ``preset_dirs`` after the shipped ones)."""
    from trainer.config.presets import preset_config
    from trainer.errors import UserError

    if not cfg.preset:
        return Config().get(key)
    try:
        return preset_config(cfg.preset, preset_dirs).get(key)
    except (UserError, OSError, ValueError) as e:
        raise UserError(msg("error.preset.unreadable", preset=cfg.preset, key=key,
                            error=e.msg if isinstance(e, UserError) else str(e))) from None


def as_config(config: Config | dict) -> Config:
    return config if isinstance(config, Config) else from_dict(dict(config))


def _as_change(change: Change | Prescription | dict) -> Change:
    if not isinstance(change, Change | dict):  # a prescription
        if change.change is None:
            raise ValueError(f"prescription {change.id!r} is not a config change")
        return change.change
    if isinstance(change, dict):
        return Change.model_construct(key=change["key"], op=change["op"], value=change.get("value"),
                                      requires=tuple(change.get("requires", ())), intent=change.get("intent"))
    return change


def effective_key(cfg: Config, key: str) -> str:
    """The setting a change of ``key`` moves in ``cfg``: a change of the epochs moves the steps where they are set."""
    return "train.max_steps" if key == "train.epochs" and cfg.train.max_steps > 0 else key


def _new_value(key: str, current: Any, ch: Change) -> Any:
    if ch.op == "set":
        return ch.value
    if ch.op not in OPS or isinstance(current, bool) or not isinstance(current, int | float):
        raise ValueError(f"{key} = {current!r}: op {ch.op!r} needs a numeric setting and one of {OPS}")
    if ch.op == "mul":
        new = current * ch.value
    elif ch.op == "min":
        new = ch.value if current == 0 and key in _ZERO_MEANS_OFF else min(current, ch.value)
    else:
        new = max(current, ch.value)
    if isinstance(current, int):  # counts stay whole, and a count of 1 or more never rounds down to 0
        new = max(1, round(new)) if current >= 1 else round(new)
    return new


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return f"{v:g}" if isinstance(v, float) else str(v)
