#!/usr/bin/env python
"""How well the demo base model follows prompts: colour and shape (and background, position, size) rates.

    python scripts/demo_base_report.py                     # demo/base, 64 random world prompts, one seed each
    python scripts/demo_base_report.py --seeds 32 --grid /tmp/base.png --rows

Each prompt is a random world caption ("a red circle on grass, left, small") drawn with its own seed; the
picture is read back with the demo measures (``detect_colour``, ``detect_shape``, ``detect_background``,
position/size adherence over 0.5). The targets are 80% for colour and for shape. Also printed: the mean
likeness of pictures of the bare trigger "zxc", which must stay near 0 (the base never saw the character).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import torch
from PIL import Image

from trainer.config.schema import ModelConfig
from trainer.demo import evaluation as ev
from trainer.models.base import load_pipeline

TARGET = 0.8


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="demo", help='"demo" (demo/base) or a diffusers folder')
    ap.add_argument("--seeds", type=int, default=64, help="how many prompts, one seed each (at least 32)")
    ap.add_argument("--seed", type=int, default=0, help="which set of prompts and seeds")
    ap.add_argument("--steps", type=int, default=ev.EVAL_STEPS, help="DDIM steps")
    ap.add_argument("--guidance", type=float, default=ev.EVAL_GUIDANCE)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rows", action="store_true", help="print every prompt and what was read back")
    ap.add_argument("--grid", help="also save the pictures as one PNG grid here")
    args = ap.parse_args(argv)
    if args.seeds < 32:
        ap.error("--seeds must be at least 32: fewer is too noisy to compare with the 80% target")
    torch.set_num_threads(args.threads)

    t0 = time.perf_counter()
    pipe, _ = load_pipeline(ModelConfig(base=args.base))
    pipe.set_progress_bar_config(disable=True)
    f = ev.adherence_figures(pipe, n_seeds=args.seeds, seed=args.seed, steps=args.steps, guidance=args.guidance)
    print(f"demo base {args.base!r}: {args.seeds} random world prompts, one seed each, "
          f"{args.steps} DDIM steps, guidance {args.guidance:g} ({time.perf_counter() - t0:.0f} s)")
    for key in ("colour", "shape", "background", "position", "size"):
        verdict = ("  (target 80%: " + ("met)" if f[key] >= TARGET else "NOT met)")) if key in ("colour", "shape") else ""
        print(f"  {key:<10} {100 * f[key]:5.1f}%{verdict}")
    print(f"  likeness of 'zxc' pictures: {f['trigger_likeness']:.3f} (should be near 0)")
    if args.rows:
        for r in f["rows"]:
            print(f"    {r['prompt']:<45} -> {r['colour']} {r['shape']} on {r['background']}"
                  f"{'' if r['position_ok'] else ', position off'}{'' if r['size_ok'] else ', size off'}")
    if args.grid:
        images = f["images"]
        cols = 8
        rows = [np.concatenate([np.asarray(i) for i in images[r : r + cols]], 1) for r in range(0, len(images), cols)]
        rows[-1] = np.pad(rows[-1], ((0, 0), (0, rows[0].shape[1] - rows[-1].shape[1]), (0, 0)))
        Image.fromarray(np.concatenate(rows, 0)).save(args.grid)
        print(f"pictures: {args.grid}")
    return 0 if f["colour"] >= TARGET and f["shape"] >= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
