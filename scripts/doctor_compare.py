"""Train runs on the demo world's pictures as a user's folder and set the app's verdict beside the truth, save by
save: shared by ``scripts/doctor_masked.py`` and ``scripts/doctor_settings.py``.

The truth is the demo's own picture measures read on 16 pictures a prompt drawn again from each save
(``scripts/doctor_calibration.py``'s, kept in WORK/truth/, so a second print draws nothing).
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from doctor_calibration import VERDICT_HEADER, cached_truth, verdict_row

SAVE_HEADER = ["| run | step | trigger hold | prior drift | trigger share | likeness | adherence | leakage | truth | app |",
               "|---|---|---|---|---|---|---|---|---|---|"]


def compare(work: Path, todo: list[tuple[str, Callable[[Path], Any]]], print_only: bool) -> int:
    """``todo``: (run name, a function of the run's output folder giving its config). Trains the runs with no
    finished run in ``work/runs/<name>`` (unless ``print_only``), then prints per save the model measures, the
    truth and both verdicts, each run's verdict and first cause, and how many saves agree."""
    from trainer.demo.judge import demo_labels
    from trainer.doctor.model_measures import measures_by_step
    from trainer.doctor.verdict import checkpoint_verdicts
    from trainer.train.loop import run_training

    lines, verdicts = list(SAVE_HEADER), list(VERDICT_HEADER)
    agree = total = 0
    for name, make_config in todo:
        folder = work / "runs" / name
        if not print_only and not any(folder.glob("*/*/final/lora.safetensors")):
            shutil.rmtree(folder, ignore_errors=True)
            t0 = time.perf_counter()
            result = run_training(make_config(folder))
            print(f"{name}: {result.status} in {time.perf_counter() - t0:.0f} s", flush=True)
        finished = sorted(folder.glob("*/*/final/lora.safetensors"))
        if not finished:
            print(f"{name}: no finished run in {work}", file=sys.stderr)
            continue
        run_dir = finished[-1].parent.parent
        truth = cached_truth(work, run_dir, 16)
        labels = demo_labels([{"step": step, **r} for step, r in sorted(truth.items())])
        model = measures_by_step(run_dir)
        for cv in checkpoint_verdicts(run_dir):
            m, t = model.get(cv.step, {}), truth.get(cv.step, {})
            ok = labels.get(cv.step) == cv.label
            agree, total = agree + ok, total + (cv.step in labels)
            cells = [m.get("trigger_hold"), m.get("prior_drift"), m.get("trigger_share"), t.get("likeness"),
                     t.get("adherence"), t.get("leakage")]
            lines.append(f"| {name} | {cv.step} | " + " | ".join("—" if v is None else f"{v:.2f}" for v in cells)
                         + f" | {labels.get(cv.step)} | {cv.label}{'' if ok else ' ✗'} |")
        verdicts.append(verdict_row(name, run_dir))
    print("\n".join(lines) + "\n\n" + "\n".join(verdicts))
    print(f"\nthe app's verdict = the truth's at {agree} of {total} saves")
    return 0
