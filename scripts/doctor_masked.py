#!/usr/bin/env python
"""Masked training on the demo character's pictures as a user's folder: how does the doctor read it?

    python scripts/doctor_masked.py                          # train what is missing, then print the table
    python scripts/doctor_masked.py --print-only
    python scripts/doctor_masked.py --seeds 42 1 2 3 4 5 --subject-seeds 2 42
    python scripts/doctor_masked.py --seeds 42 --subject-seeds 42 --factors 0.1 10

The character's 20 pictures get a mask each (``name-masklabel.png``: the pixels unlike the picture's flat background,
as a mask maker would give them) and the ``demo-character`` preset trains on them with ``dataset.masked_loss`` on
at 1x its lr (``--factors``: other multiples) and the given training seeds; ``--subject-seeds`` trains the same with
captions that name the subject alone (the trigger and its hat: no background, place or size). The truth is the
demo's own picture measures read on 16 pictures a prompt (``scripts/doctor_calibration.py``'s, kept in WORK/truth/).
Printed per save: the trigger hold, prior drift and trigger share (the run's own model, with the masks weighing the
subject's pictures as training does), likeness, adherence and leakage, the truth's verdict and the app's; then each
run's verdict and first cause. A run measured before the trigger share existed shows "—" there until
``python -m trainer measure RUN_DIR`` measures it again.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from calibration_folders import write_plain_folders
from doctor_calibration import run_config
from doctor_compare import compare
from PIL import Image

import words  # noqa: F401  run folders hold their messages worded, as the app and the CLI write them


def masked_folder(data: Path, out: Path, subject_only: bool) -> Path:
    """A copy of ``data`` with a mask beside each picture (and, ``subject_only``, captions cut to the subject)."""
    if out.is_dir():
        return out
    shutil.copytree(data, out)
    for p in sorted(out.rglob("*.png")):
        a = np.asarray(Image.open(p).convert("RGB"), np.int16)
        corners = np.concatenate([a[:2, :2], a[:2, -2:], a[-2:, :2], a[-2:, -2:]]).reshape(-1, 3)
        ground = np.median(corners, axis=0)  # the demo world's backgrounds are one flat colour
        mask = (np.abs(a - ground).max(axis=2) > 14).astype(np.uint8) * 255
        Image.fromarray(mask, "L").save(p.with_name(p.stem + "-masklabel.png"))
        if subject_only:  # "zxc, wearing a red hat, on sky, center, small" -> "zxc, wearing a red hat"
            cap = p.with_suffix(".txt")
            cap.write_text(", ".join(cap.read_text(encoding="utf-8").strip().split(", ")[:2]) + "\n", encoding="utf-8")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=Path("runs/doctor-calibration"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[42, 1, 2, 3, 4, 5])
    ap.add_argument("--subject-seeds", type=int, nargs="*", default=[2, 42])
    ap.add_argument("--factors", type=float, nargs="+", default=[1.0],
                    help="the preset's lr times these (1: the runs above; 0.1 and 10 name their runs masked-lr10x-...)")
    ap.add_argument("--print-only", action="store_true")
    args = ap.parse_args()
    data, prior = write_plain_folders(args.work)

    def config(subject_only: bool, seed: int, factor: float):
        def make(folder: Path):
            source = masked_folder(data, args.work / ("my-character-masked" + ("-subject" if subject_only else "")),
                                   subject_only)
            return run_config(source, prior, folder, factor, seed, {"dataset.masked_loss": True})
        return make

    todo = [(f"masked{'-subject' if sub else ''}{'' if f == 1 else f'-lr{f:g}x'}-seed{s}", config(sub, s, f))
            for f in args.factors for sub, seeds in ((False, args.seeds), (True, args.subject_seeds)) for s in seeds]
    return compare(args.work, todo, args.print_only)

if __name__ == "__main__":
    raise SystemExit(main())
