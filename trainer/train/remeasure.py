"""``python -m trainer measure RUN_DIR``: the doctor's model measures of a finished run, after the fact.

The same measures the run takes while it trains (:mod:`trainer.train.probes`), read from its checkpoints: the
base model and the run's data are loaded as the run loaded them, and each complete checkpoint's LoRA (and
trigger embedding) is put in turn into the same model. Useful for a run trained before the measures existed or
with them off, and to measure again with more pictures or timesteps (the numbers then move less from one save to
the next). The earlier ``measures.jsonl`` is kept beside the new one, never lost.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from trainer.config.overrides import read_toml
from trainer.config.schema import from_dict
from trainer.errors import UserError, error_line, is_out_of_memory
from trainer.io import atomic_write_text
from trainer.message import msg
from trainer.run.rundir import RunPaths, complete_checkpoints


def measure_run(run_dir: str | Path, timesteps: int | None = None, pictures: int | None = None,
                progress: Callable[[int, dict[str, Any]], None] | None = None,
                device: Literal["auto", "cpu", "cuda", "mps"] | None = None) -> Path:
    """Measure step 0 and every complete checkpoint of ``run_dir`` and write ``measures.jsonl`` (an earlier one is
    renamed ``measures.before-<time>.jsonl``). ``device``: where (the run's ``train.device`` when None; every step
    is measured there, so the file's numbers compare with each other). Returns the file written."""
    from trainer.data.batches import samples_from_report
    from trainer.train import checkpoint as ckpt
    from trainer.train.distributed import Dist
    from trainer.train.modelset import load_models
    from trainer.train.preparation import foreseen_text, scan_and_plan
    from trainer.train.probes import ModelMeasures

    paths = RunPaths(Path(run_dir))
    if not paths.config.is_file():
        raise UserError(msg("error.run.not_a_run", run_dir=run_dir))
    saves = complete_checkpoints(paths)
    if not saves:
        raise UserError(msg("error.measure.no_checkpoint", root=paths.root))
    cfg = from_dict(read_toml(paths.config), origin=str(paths.config))
    cfg.measure.enabled = True
    if timesteps is not None:
        cfg.measure.timesteps = timesteps
    if pictures is not None:
        cfg.measure.pictures = pictures
    cfg.dataset.cache_latents = False  # the probes encode their own pictures; nothing trains
    if device is not None:
        cfg.train.device = device
    dist = Dist()
    report, plan, held_out = scan_and_plan(cfg, dist)
    models = load_models(cfg, dist, foreseen_text(cfg, report, held_out))
    samples = samples_from_report(report, cfg.dataset.trigger)
    measures = ModelMeasures(cfg, dist, plan, models, paths, samples, report, held_out)
    rows = []
    for step, folder in [(0, None), *saves]:
        if folder is not None:
            state = ckpt.load_state(folder / "state.pt")
            models.lora.load_state_dicts(state["lora"])
        try:
            row = measures.measure(step, write=False)
        except RuntimeError as e:  # one picture a pass did not fit either (ModelMeasures.measure)
            if not is_out_of_memory(e):
                raise
            raise UserError(msg("error.measure.out_of_memory", step=step, device=str(models.device),
                                error=error_line(e))) from None
        assert row is not None  # measures without ``emit`` raise when the device's memory runs out
        rows.append(row)
        if progress is not None:
            progress(step, row)
    if paths.measures.is_file():
        stamp, n = time.strftime("%Y%m%d-%H%M%S"), 1
        keep = paths.root / f"measures.before-{stamp}.jsonl"
        while keep.exists():
            n += 1
            keep = paths.root / f"measures.before-{stamp}-{n}.jsonl"
        paths.measures.rename(keep)
    atomic_write_text(paths.measures, "".join(json.dumps(r) + "\n" for r in rows))
    return paths.measures


def measures_table(table: dict[int, dict[str, Any]]) -> str:
    """:func:`trainer.doctor.model_measures.measures_by_step`'s rows as a text table, a step a line."""
    cols = ["trigger_hold", "trigger_gain", "prior_drift", "memorisation"]
    if any(m.get("trigger_share") is not None for m in table.values()):  # a masked run's
        cols.insert(3, "trigger_share")
    lines = [f"{'step':>7}  " + "  ".join(f"{k.replace('_', ' '):>13}" for k in cols)]
    for step, m in table.items():
        lines.append(f"{step:>7}  " + "  ".join(f"{'—' if m.get(k) is None else f'{m[k]:.3f}':>13}" for k in cols))
    return "\n".join(lines)
