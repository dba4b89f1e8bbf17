"""Settings to confirm before a run starts, and to name first when a run fails: a dose many times above the
preset's zone, a learning rate far from the preset's. Pure functions of the config and plan, so Start, the
diagnosis and the tests read the same numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainer.config.choices import optimizer_spec
from trainer.config.schema import Config
from trainer.doctor.detectors import Finding
from trainer.doctor.registry import detector
from trainer.errors import UserError
from trainer.message import Msg, msg

LR_FAR = 10.0  # an lr more than this many times the preset's, or that many times smaller, asks first
LR_FIRST = 100.0  # this far off it is an error, not a warning (from LR_FAR on, the preset's lr is the first prescription)
DOSE_FAR = 3.0  # a dose this many times the top of the preset's zone asks first
# The diagnosis's weight for an lr far from the preset's. An lr more than ten times off the preset's explains more than
# anything it caused, the non-finite values included: a model measure saying "under" on a run at 100x the lr (the
# weights wrecked before the trigger learned anything) must not put "train longer" before "back to the preset's lr",
# nor "halve the lr" when halving is still far off.
LR_FIRST_WEIGHT = 6.0


def baseline(cfg: Config, extra_dirs: list[Path] | None = None) -> tuple[Config, str] | None:
    """The config the run's settings are measured against, and its name: the preset's (the defaults without
    one); None when the preset cannot be read (a user preset from a workspace not given)."""
    from trainer.config.presets import preset_config

    if not cfg.preset:
        return Config(), "defaults"
    try:
        return preset_config(cfg.preset, extra_dirs), cfg.preset
    except (UserError, OSError, ValueError):
        return None


def subject_of(cfg: Config, extra_dirs: list[Path] | None = None) -> str | None:
    """What the run's preset trains (``[preset] subject``: character, concept or style); None without a preset the
    doctor can read (``extra_dirs``: where presets of the user's own are, beside the shipped ones)."""
    from trainer.config.presets import load_preset

    if not cfg.preset:
        return None
    try:
        return load_preset(cfg.preset, extra_dirs).subject
    except (UserError, OSError, ValueError):
        return None


def sets_own_step(cfg: Config) -> bool:
    """The optimizer sets its own step size (Prodigy): its lr is a multiplier, and the dose is not comparable."""
    return bool(optimizer_spec(cfg.optim.optimizer).dose_note)


def lr_ratio(cfg: Config, extra_dirs: list[Path] | None = None) -> tuple[float, float, str] | None:
    """(the run's lr ÷ the preset's, the preset's lr, the preset's name), or None without a readable preset or when
    one optimizer sets its own step size and the other does not (Prodigy's lr 1 beside AdamW's 3e-3 is no ratio)."""
    base = baseline(cfg, extra_dirs)
    if base is None or base[0].optim.lr <= 0 or sets_own_step(cfg) != sets_own_step(base[0]):
        return None
    return cfg.optim.lr / base[0].optim.lr, base[0].optim.lr, base[1]


def _far(ratio: float, limit: float) -> bool:
    slack = 1 + 1e-9  # 0.03 / 0.003 is 10.000000000000002: exactly 10× is not "more than 10×"
    return ratio > limit * slack or ratio < 1.0 / (limit * slack)


def _times(ratio: float) -> Msg:
    return msg("risk.times_more", ratio=ratio) if ratio >= 1 else msg("risk.times_less", inverse=1 / ratio)


@detector("lr_far_from_preset", group="settings", reads=("config", "preset_dirs"), weight=LR_FIRST_WEIGHT)
def lr_far_finding(cfg: Config, extra_dirs: list[Path] | None = None) -> Finding | None:
    """The lr more than ``LR_FAR`` times the preset's (or that many times smaller): a warning, an error past
    ``LR_FIRST``; either way the diagnosis names it before anything it caused."""
    found = lr_ratio(cfg, extra_dirs)
    if found is None or not _far(found[0], LR_FAR):
        return None
    ratio, preset_lr, name = found
    return Finding(
        "lr_far_from_preset", "error" if _far(ratio, LR_FIRST) else "warning",
        msg("risk.lr_far", lr=cfg.optim.lr, times=_times(ratio), preset_lr=preset_lr, name=name),
        [], {"lr": cfg.optim.lr, "preset_lr": preset_lr, "ratio": ratio, "preset": name})


def start_risks(cfg: Config, plan: Any, extra_dirs: list[Path] | None = None) -> list[Msg]:
    """What Start asks to confirm, each naming the number and the preset's value: a dose more than
    ``DOSE_FAR`` times the top of the zone, an lr more than ``LR_FAR`` times off the preset's. Empty: start at once."""
    out = []
    dose, high = plan.dose, plan.dose_high
    if high > 0 and dose > DOSE_FAR * high and not plan.dose_note:  # Prodigy's dose is a multiplier's
        out.append(msg("risk.dose_far", dose=dose, times=dose / high, low=plan.dose_low, high=high))
    lr = lr_far_finding(cfg, extra_dirs)
    if lr is not None:
        v = lr.values
        advice = msg("risk.breaks") if v["ratio"] > 1 else msg("risk.learns_nothing")
        out.append(msg("risk.lr_far_start", lr=v["lr"], times=_times(v["ratio"]), preset_lr=v["preset_lr"],
                       name=v["preset"], advice=advice))
    return out
