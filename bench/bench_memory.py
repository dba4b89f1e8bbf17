"""Estimate vs measured: the memory plan's UNet activations against a real SD1.5 / SDXL training step.

The real architecture at full width (random weights from the shipped configs, no download), a rank-16 attention
LoRA, one forward + backward per cell at small resolutions on the CPU, counted at the allocator
(``bench/memory_probe.py``). Printed side by side: the estimate of :func:`trainer.plan.memory.estimate_memory`'s
``activations + lora_gradients`` and the measured transient peak (tensors the ops created, and the CPU
allocator's own figure, which adds oneDNN's scratch buffers); the static parts (weights, LoRA, optimizer state)
are counted from tensors and equal by construction.

    nice -n 19 python bench/bench_memory.py                      # SD1.5, fp32 and bf16: about 2 minutes
    nice -n 19 python bench/bench_memory.py --family sdxl --precision bf16   # SDXL in bf16 (~6 GB of memory)
    python bench/bench_memory.py --json                          # one JSON line per cell

Cells: 64 to 384 px at batch 1, 64, 128 and 256 px at batch 2, 128 px at batch 4, gradient checkpointing off
and on (about 2 minutes for SD1.5). The coefficients in each family adapter's ``activations``
(``trainer/models/families/sd15.py``, ``sdxl.py``) were fitted on the 256 and 320 px batch-1 cells and the 128 px
batch-4 cell, and, with gradient checkpointing, a second (small-latent) regime on the 64 px batch-1 and -2 cells and
the 128 px batch-1 cell (``--fit`` prints both); every other cell is held out. ``--from FILE`` prints the table again from the JSON lines of an
earlier ``--json`` run, with the estimates of the code as it is now.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import torch  # noqa: E402

CELLS = ((64, 1), (128, 1), (192, 1), (64, 2), (128, 2), (128, 4), (256, 1), (256, 2), (320, 1), (384, 1))
FIT_CELLS = ((256, 1), (320, 1), (128, 4))  # what --fit fits through; every other cell is held out
SMALL_FIT_CELLS = ((64, 1), (64, 2), (128, 1))  # the small-latent regime's (gradient checkpointing only)


def estimate(configs: str, precision: str, resolution: int, batch: int, checkpointing: bool,
             family: str | None = None) -> int:
    """The plan's transient part for this cell: activations plus the LoRA's gradients. ``configs``: the shipped
    config folder (``sd15``, ``sdxl``, ``sd3``, ``sd3-large``); ``family``: its family when the name is not it."""
    from trainer.config.schema import from_dict
    from trainer.plan.memory import estimate_memory

    base = f"trainer/models/model_configs/{configs}"
    cfg = from_dict({"model": {"base": str(REPO / base), "family": family or configs},
                     "dataset": {"resolution": resolution}, "lora": {"rank": 16, "alpha": 16.0, "targets": "attn"},
                     "train": {"precision": precision, "batch_size": batch, "gradient_checkpointing": checkpointing,
                               "device": "cpu"}})
    plan = estimate_memory(cfg, device=torch.device("cpu"), free=None)
    return plan.parts["activations"] + plan.parts["lora_gradients"]


def measure(family: str, precisions: list[str], cells=CELLS, checkpointing=(False, True)):
    """Yield one dict per (precision, checkpointing, resolution, batch) cell."""
    import memory_probe as mp

    t0 = time.perf_counter()
    unet = mp.build_unet(family, torch.float32 if precisions[0] == "fp32" else torch.bfloat16)
    lora = mp.attach(unet, family)
    grads = 4 * sum(p.numel() for p in lora.trainable(next(iter(lora.models))))
    print(f"  {family} UNet built, LoRA attached: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    for precision in precisions:
        if precision == "bf16":  # the frozen weights, as the trainer holds them; LoRA stays fp32
            for p in unet.parameters():
                if not p.requires_grad:
                    p.data = p.data.to(torch.bfloat16)
        for ckpt in checkpointing:
            for res, batch in cells:
                peak = mp.step_peak(unet, family, res, batch, precision, ckpt)
                yield {"family": family, "precision": precision, "ckpt": ckpt, "res": res, "batch": batch,
                       "lora_grads": grads, "measured": peak["tensors"], "allocator": peak["allocator"],
                       "estimate": estimate(family, precision, res, batch, ckpt)}


def fit(rows: list[dict]) -> dict:
    """``(per_step, per_sample, per_pixel)`` per (family, precision, checkpointing): the transient beyond the LoRA
    gradients is ``per_step + batch × (per_sample + per_pixel × latent pixels)``, through the 256 and 320 px
    batch-1 cells (where it is linear in the pixels) and the 128 px batch-4 cell (what a sample more costs)."""
    out = {}
    for key in sorted({(r["family"], r["precision"], r["ckpt"]) for r in rows}):
        cells = {(r["res"], r["batch"]): r for r in rows if (r["family"], r["precision"], r["ckpt"]) == key}
        if not all(c in cells for c in FIT_CELLS):
            continue
        beyond = {cell: r["measured"] - r["lora_grads"] for cell, r in cells.items()}  # the transient past them
        per_pixel = (beyond[320, 1] - beyond[256, 1]) / (_pixels(320) - _pixels(256))
        one = beyond[256, 1] - per_pixel * _pixels(256)  # per_step + per_sample
        per_sample = (beyond[128, 4] - one - 4 * per_pixel * _pixels(128)) / 3
        out[key] = (round(one - per_sample), round(per_sample), round(per_pixel, 1))
        if key[2] and all(c in cells for c in SMALL_FIT_CELLS):
            out[(*key, "small latents")] = _through(beyond, SMALL_FIT_CELLS)
    return out


def _through(beyond: dict, cells) -> tuple:
    """The ``(per_step, per_sample, per_pixel)`` whose plane passes through the three cells."""
    import numpy as np

    a = np.array([[1, batch, batch * _pixels(res)] for res, batch in cells], dtype=float)
    c = np.linalg.solve(a, np.array([beyond[cell] for cell in cells], dtype=float))
    return round(c[0]), round(c[1]), round(float(c[2]), 1)


def _pixels(res: int) -> int:
    return (res // 8) ** 2


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", choices=("sd15", "sdxl", "sd3"), default="sd15")
    ap.add_argument("--precision", default="fp32,bf16", help="comma-separated: fp32, bf16 (fp32 first)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--cells", default="", help="cells to measure instead of the default ones, e.g. 256x1,256x2")
    ap.add_argument("--fit", action="store_true", help="also print the coefficients fitted on the fit cells")
    ap.add_argument("--from", dest="source", metavar="FILE", help="JSON lines of an earlier --json run")
    args = ap.parse_args()
    precisions = args.precision.split(",")
    if args.source:
        stored = [json.loads(line) for line in Path(args.source).read_text().splitlines() if line.startswith("{")]
        cells = iter([{**r, "estimate": estimate(r["family"], r["precision"], r["res"], r["batch"], r["ckpt"])}
                      for r in stored])
    else:
        chosen = tuple(tuple(int(n) for n in c.split("x")) for c in args.cells.split(",") if c) or CELLS
        cells = measure(args.family, precisions, chosen)
    print("full width, rank-16 attention LoRA, SDPA, CPU; MiB of activations + LoRA gradients (the step's transient)")
    print(f"{'model':>5} {'prec':>5} {'ckpt':>5} {'px':>4} {'batch':>5} {'estimate':>9} {'measured':>9} {'error':>7} "
          f"{'allocator':>10}")
    rows = []
    for r in cells:
        rows.append(r)
        if args.json:
            print(json.dumps(r), flush=True)
            continue
        err = r["estimate"] / r["measured"] - 1
        print(f"{r['family']:>5} {r['precision']:>5} {r['ckpt']!s:>5} {r['res']:>4} {r['batch']:>5} {r['estimate'] / 2**20:>9.1f} "
              f"{r['measured'] / 2**20:>9.1f} {err:>+7.1%} {r['allocator'] / 2**20:>10.1f}", flush=True)
    if args.fit:
        for key, coefficients in fit(rows).items():
            print(f"    {key}: {coefficients},")


if __name__ == "__main__":
    main()
