"""The one change a rollback applies (docs/training-guide.md, "Change one thing at a time").

The change fits what broke first (the collapse seed). A non-finite loss or gradient points at fp16 overflow,
the loss scaling or the inputs, so any setting that can change mid-run may do (bf16 where the machine has
it, the learning rate, the clipping norm). A weight that broke while its gradients were finite points at the
optimizer's update, so the change is to the step (learning rate or clipping), never the precision. An EMA
that broke points at its own accumulation, so only an EMA setting fits; while none of those can change
mid-run, the safest step change (halving the learning rate) stands in. Among the fitting changes the one
taken is the top prescription the knowledge base ranks for the evidence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainer.doctor.guard import MIN_LOSS_SCALE
from trainer.errors import UserError
from trainer.message import msg
from trainer.models.precision import bf16_supported
from trainer.run.events import as_float

MID_RUN_KEYS = ("train.precision", "optim.lr", "optim.max_grad_norm")
# What broke first → the settings a rollback's change may touch (None: any of MID_RUN_KEYS).
FITTING_KEYS: dict[str, tuple[str, ...] | None] = {
    "loss": None,
    "grad": None,
    "param": ("optim.lr", "optim.max_grad_norm"),
    "ema": ("ema.enabled", "ema.decay"),
}
FALLBACK = "lower_lr"


def rollback_signals(precision: str, failure: dict[str, Any]) -> dict[str, float]:
    """The knowledge-base evidence a failure gives: what broke first, plus a collapsed fp16 loss scale only
    where the loss or the gradient broke first and the scale recorded with it had fallen below the guard's
    floor. A weight or EMA that breaks says nothing about the scaler, whatever the precision."""
    first = failure.get("first") or "grad"
    signals = {f"nonfinite_{first}": 1.0}
    scale = as_float(failure.get("loss_scale"))
    if precision == "fp16" and first in ("loss", "grad") and scale is not None and scale < MIN_LOSS_SCALE:
        signals["loss_scale_collapse"] = 0.5
    return signals


def rollback_change(
    config, precision_plan, failure: dict[str, Any], mid_run_keys: tuple[str, ...] = MID_RUN_KEYS,
    bf16: bool | None = None, preset_dirs: list[Path] | None = None,
) -> dict[str, Any]:
    """``{key, old, new, prescription, cause, reason, signals}`` (and a ``note`` when no change that fits the failure
    can be made mid-run) for a non-finite failure described by
    ``failure`` (its ``first`` and ``loss_scale``). ``bf16``: whether the machine has it (default: ask the
    device); ``preset_dirs``: where the run's own presets are, for a change back to its preset."""
    from trainer.doctor.kb import load_kb

    kb = load_kb()
    first = failure.get("first") or "grad"
    signals = rollback_signals(precision_plan.precision, failure)
    fitting = FITTING_KEYS.get(first)
    keys = tuple(k for k in mid_run_keys if fitting is None or k in fitting)
    bf16 = bf16_supported(precision_plan.device) if bf16 is None else bf16
    ranked = kb.rank_causes(signals, config)
    for rc in ranked:
        for p in kb.prescriptions_for(rc.cause.id):
            change = _one_change(config, p, keys, bf16, preset_dirs)
            if change is not None:
                return {**change, "cause": rc.cause.id, "signals": signals}
    change = _one_change(config, kb.prescription(FALLBACK), mid_run_keys, bf16, preset_dirs)
    if change is None:  # the knowledge base lost its lr prescription: a developer's error, said plainly
        raise RuntimeError(f"prescription {FALLBACK!r} cannot be applied mid-run")
    change["note"] = msg("rollback.nothing_fits_mid_run", first=first)
    return {**change, "cause": ranked[0].cause.id if ranked else None, "signals": signals}


def _one_change(config, prescription, keys: tuple[str, ...], bf16: bool,
                preset_dirs: list[Path] | None = None) -> dict[str, Any] | None:
    """The prescription as ``{key, old, new, prescription, reason}`` if it changes exactly one of ``keys`` here
    (None too when it cannot be made: out of range, or back to a preset that cannot be read)."""
    from trainer.config.schema import diff_configs
    from trainer.doctor.kb import apply_change

    ch = prescription.change
    if ch is None or ch.key not in keys:
        return None
    if "bf16_supported" in ch.requires and not bf16:
        return None
    try:
        diff = diff_configs(config, apply_change(config, ch, preset_dirs))
    except (UserError, ValueError):
        return None
    if list(diff) != [ch.key]:
        return None
    old, new = diff[ch.key]
    return {"key": ch.key, "old": old, "new": new, "prescription": prescription.id,
            "reason": {lang: prescription.text("title", lang) for lang in ("en", "ko")}}  # the KB's own words
