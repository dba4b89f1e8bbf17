"""What the validation loss (``val_loss`` in a run's metric rows) says about each save: a number that turns up
while the training loss keeps falling is the LoRA starting to memorise its pictures."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer.io import read_jsonl
from trainer.message import msg
from trainer.run.rundir import RunPaths

if TYPE_CHECKING:
    from trainer.doctor.evidence import Observation
    from trainer.doctor.verdict import CheckpointVerdict

VAL_RISE = 0.05  # a validation loss this far (relative) above the lowest of an earlier save counts as a rise


def val_loss_by_step(run_dir: str | Path) -> dict[int, float]:
    """Every finite ``val_loss`` of the run's metric rows, by step."""
    out = {}
    for r in read_jsonl(RunPaths(Path(run_dir)).metrics):
        v = r.get("val_loss")
        if isinstance(v, int | float) and math.isfinite(v):
            out[int(r["step"])] = float(v)
    return out


def best_so_far(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The step with the lowest finite validation loss among ``rows`` (metric rows): advisory, nothing is
    deleted."""
    vals = [(float(r["val_loss"]), int(r["step"])) for r in rows
            if isinstance(r.get("val_loss"), int | float) and math.isfinite(r["val_loss"])]
    if not vals:
        return None
    value, step = min(vals)
    return {"step": step, "val_loss": value}


def validation_observation(step: int, values: dict[int, float]) -> Observation | None:
    """"over" (moderate) when this save's validation loss rose past the lowest an earlier save reached; else,
    when it is within :data:`VAL_RISE` of the lowest of all the saves, a line saying so that points nowhere (a
    low validation loss says the LoRA is not memorising, not that it has learned enough), which is why the
    recommendation may be a save other than the lowest one."""
    from trainer.doctor.evidence import Observation

    here = values.get(step)
    if here is None or len(values) < 2:
        return None
    earlier = {s: v for s, v in values.items() if s < step}
    if earlier:
        best_step, best = min(earlier.items(), key=lambda kv: (kv[1], kv[0]))
        if here > best * (1 + VAL_RISE):
            return Observation("numbers", "over", "moderate",
                               msg("verdict.val_rising", val=here, best=best, best_step=best_step))
    low_step, low = min(values.items(), key=lambda kv: (kv[1], kv[0]))
    if low_step == step:
        return Observation("numbers", None, "weak", msg("verdict.val_lowest", val=here))
    if here <= low * (1 + VAL_RISE):
        return Observation("numbers", None, "weak",
                           msg("verdict.val_near_lowest", val=here, best=low, best_step=low_step, share=VAL_RISE))
    return None


def lowest_validation(fits: list[CheckpointVerdict]) -> list[CheckpointVerdict]:
    """The fit saves whose validation loss is within :data:`VAL_RISE` of the lowest among them (all of them when
    a save has no validation loss): the recommendation then picks among these by its usual rule."""
    vals: list[Any] = [c.measures.get("val_loss") for c in fits]
    if not fits or any(v is None for v in vals):
        return fits
    low = min(vals)
    return [c for c, v in zip(fits, vals) if v <= low * (1 + VAL_RISE)]
