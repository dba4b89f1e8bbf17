"""SD3.5's transformer activations at full width, measured on 2 and 3 of its blocks and carried to its depth.

A full SD3.5 Medium step on this machine's two cores takes many minutes per cell (2.5 B parameters, and bf16
matmuls emulated on a CPU without AMX). Its activations are a sum over blocks, each of the model's full width:
a step's transient peak is ``c + Σ d(block)``, where ``c`` is the patch embedding, the text projections, the
final layer, the loss and the last block (lighter: it leaves the text alone), and ``d`` what one block saves
for the backward (with gradient checkpointing: the block's inputs, plus one block's recompute in ``c``). Medium
has two kinds of block (13 with a second, dual attention and 10 plain before the last); Large has 37 plain blocks
of another width before its last. So each cell is measured on four truncated models (2 and 3 blocks, each kind),
``c`` and both ``d`` are solved from them, and the full model's figure is ``c + 13·d_dual + 10·d_plain``. The LoRA's gradients are counted from the adapted layers the same way.

    python bench/memory_depth.py --precision fp32 --fit       # fit and held-out cells, both checkpointing modes
    python bench/memory_depth.py --precision bf16 --ckpt off --cells 256x1,320x1   # bf16 (~6x slower on a CPU)
    python bench/memory_depth.py --size sd3-large --cells 128x1                    # Large, 2 and 3 blocks, vs the plan
    python bench/memory_depth.py --size flux --precision fp32 --cells 256x1,320x1,128x4 --json   # FLUX.1-dev

``--size flux`` measures FLUX.1-dev on three truncated models per cell (2 double + 2 single blocks, one double more,
one single more; :func:`flux_full_depth`): 5-6 GB of memory each in fp32 and 7-10 minutes a cell on two shared cores.

On this machine's two cores an fp32 128 px cell (its eight truncated models) takes about a minute of CPU time,
a bf16 one about six. ``--size sd3-large`` measures Large's own blocks (width 2432, no dual attention) and compares its extrapolated
figure with the plan's estimate, which scales Medium's coefficients by width: the held-out check.
``--full CELL`` measures the whole Medium at one cell (slow) to check the extrapolation itself.
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

FIT_CELLS = ((256, 1), (320, 1), (128, 4))
HELD_OUT = ((128, 1), (192, 1), (256, 2), (384, 1))


def family_of(size: str) -> str:
    return "zimage" if size.startswith("zimage") else "flux" if size == "flux" else "sd3"


def build(size: str, layers: int, dual: bool, dtype: torch.dtype):
    """SD3.5 ``size`` ("sd3" Medium or "sd3-large") at full width with ``layers`` blocks, random weights, LoRA on
    the attention (rank 16) as the plan's coefficients assume. As in the real model, the last block is a plain one
    that does not update the text (``context_pre_only``); with ``dual`` the others have the second attention.
    Z-Image (``zimage``): ``layers`` main blocks after its real refiners (2 for the picture, 2 for the text)."""
    import memory_probe as mp

    if family_of(size) == "zimage":
        model = mp.build_unet("zimage", dtype, configs=size, n_layers=layers)
    else:
        model = mp.build_unet("sd3", dtype, configs=size, num_layers=layers,
                              dual_attention_layers=list(range(layers - 1)) if dual else [])
    lora = mp.attach(model, family_of(size))
    return model, 4 * sum(p.numel() for p in lora.trainable("transformer"))


def cell(size: str, layers: int, dual: bool, precision: str, ckpt: bool, res: int, batch: int) -> dict:
    import memory_probe as mp

    model, grads = build(size, layers, dual, torch.float32 if precision == "fp32" else torch.bfloat16)
    peak = mp.step_peak(model, family_of(size), res, batch, precision, ckpt)
    return {"measured": peak["tensors"], "lora_grads": grads}


def full_depth(size: str, precision: str, ckpt: bool, res: int, batch: int) -> dict:
    """The full model's figures from truncated ones: ``c + n_dual·d_dual + (n_plain - 1)·d_plain``, where ``c``
    holds the last block. Each kind's ``d`` is the difference between 2 and 3 blocks, never 1 and 2: the last block
    (which leaves the text alone) is lighter than the others, and with checkpointing the step's peak holds one
    block's recompute besides the saved inputs, so a 1-block model's peak has the lighter block's recompute in it
    and a 2-block model's the heavier one's (measured: 1 → 2 blocks adds 23-26 MiB at 128 px, 2 → 3 adds 2.3)."""
    config = json.loads((REPO / "trainer/models/model_configs" / size / "transformer/config.json").read_text())
    n_dual = len(config.get("dual_attention_layers") or [])
    # SD3.5's last block is in c (lighter); Z-Image's main blocks are all alike: c holds the refiners alone
    n_plain = int(config.get("num_layers") or config["n_layers"]) - n_dual + (family_of(size) == "zimage")
    kinds = [True, False] if n_dual else [False]
    per: dict[bool, tuple[dict, dict]] = {}
    for dual in kinds:
        per[dual] = (cell(size, 2, dual, precision, ckpt, res, batch), cell(size, 3, dual, precision, ckpt, res, batch))
    out = {}
    for key in ("measured", "lora_grads"):
        slopes = {dual: three[key] - two[key] for dual, (two, three) in per.items()}
        base = sum(two[key] - slopes[dual] for dual, (two, _) in per.items()) / len(per)  # c and the last block
        out[key] = round(base + n_dual * slopes.get(True, 0) + (n_plain - 1) * slopes[False])
        out[f"{key}_per_block"] = {("dual" if d else "plain"): s for d, s in slopes.items()}
        out[f"{key}_base"] = round(base)
    return out


def flux_cell(double: int, single: int, precision: str, ckpt: bool, res: int, batch: int) -> dict:
    """FLUX.1-dev at full width with ``double`` double-stream and ``single`` single-stream blocks, rank-16 attention
    LoRA (the double blocks' both streams, the single blocks' q, k, v)."""
    import memory_probe as mp

    model = mp.build_unet("flux", torch.float32 if precision == "fp32" else torch.bfloat16, num_layers=double,
                          num_single_layers=single)
    lora = mp.attach(model, "flux")
    grads = 4 * sum(p.numel() for p in lora.trainable("transformer"))
    peak = mp.step_peak(model, "flux", res, batch, precision, ckpt)
    del model, lora
    return {"measured": peak["tensors"], "lora_grads": grads}


def flux_full_depth(precision: str, ckpt: bool, res: int, batch: int) -> dict:
    """FLUX.1-dev's figures from three truncated models: 2 double + 2 single blocks, one more double, one more single.
    Each kind's per-block ``d`` is a difference at 2 → 3 blocks (never 1 → 2: with checkpointing the peak holds one
    block's recompute besides the saved inputs); ``c`` (the embedders, the final layer, the loss, and that
    recompute) is what the 2 + 2 model holds beyond its four blocks; the full model is ``c + 19·d_double +
    38·d_single``."""
    config = json.loads((REPO / "trainer/models/model_configs/flux/transformer/config.json").read_text())
    two = flux_cell(2, 2, precision, ckpt, res, batch)
    more_double = flux_cell(3, 2, precision, ckpt, res, batch)
    more_single = flux_cell(2, 3, precision, ckpt, res, batch)
    out: dict = {}
    for key in ("measured", "lora_grads"):
        d_double, d_single = more_double[key] - two[key], more_single[key] - two[key]
        base = two[key] - 2 * d_double - 2 * d_single
        out[key] = round(base + config["num_layers"] * d_double + config["num_single_layers"] * d_single)
        out[f"{key}_per_block"] = {"double": d_double, "single": d_single}
        out[f"{key}_base"] = round(base)
    return out


def main() -> None:
    from bench_memory import estimate, fit

    ap = argparse.ArgumentParser()
    ap.add_argument("--precision", default="bf16", choices=("bf16", "fp32"))
    ap.add_argument("--cells", default="", help="e.g. 256x1,128x4 (default: the fit cells and the held-out ones)")
    ap.add_argument("--size", default="sd3", choices=("sd3", "sd3-large", "flux", "zimage"))
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--full", default="", help="also measure the whole Medium at this cell, e.g. 128x1 (slow)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--ckpt", default="both", choices=("both", "off", "on"), help="gradient checkpointing cells")
    args = ap.parse_args()
    cells = tuple(tuple(int(n) for n in c.split("x")) for c in args.cells.split(",") if c) or FIT_CELLS + HELD_OUT
    print(f"{args.size}, full width, rank-16 attention LoRA, {args.precision}, CPU; MiB of activations + LoRA "
          "gradients (the step's transient), from 2 and 3 blocks carried to the model's depth")
    print(f"{'ckpt':>5} {'px':>4} {'batch':>5} {'estimate':>9} {'measured':>9} {'error':>7}  (fit cell?)")
    rows = []
    t0 = time.perf_counter()
    for ckpt in {"both": (False, True), "off": (False,), "on": (True,)}[args.ckpt]:
        for res, batch in cells:
            family = family_of(args.size)
            r = (flux_full_depth(args.precision, ckpt, res, batch) if family == "flux"
                 else full_depth(args.size, args.precision, ckpt, res, batch))
            est = estimate(args.size, args.precision, res, batch, ckpt, family=family)
            row = {"family": family, "size": args.size, "precision": args.precision, "ckpt": ckpt, "res": res,
                   "batch": batch, "estimate": est, **r}
            rows.append(row)
            if args.json:
                print(json.dumps(row), flush=True)
                continue
            print(f"{ckpt!s:>5} {res:>4} {batch:>5} {est / 2**20:>9.1f} {r['measured'] / 2**20:>9.1f} "
                  f"{est / r['measured'] - 1:>+7.1%}  {'fit' if (res, batch) in FIT_CELLS else 'held out'}", flush=True)
    print(f"  {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    if args.full:
        import memory_probe as mp

        res, batch = (int(n) for n in args.full.split("x"))
        model = mp.build_unet("sd3", torch.float32 if args.precision == "fp32" else torch.bfloat16)  # Medium
        mp.attach(model, "sd3")
        for ckpt in {"both": (False, True), "off": (False,), "on": (True,)}[args.ckpt]:
            whole = mp.step_peak(model, "sd3", res, batch, args.precision, ckpt)["tensors"]
            part = full_depth("sd3", args.precision, ckpt, res, batch)["measured"]
            print(f"whole model at {res}x{batch}, checkpointing {ckpt}: {whole / 2**20:.1f} MiB; from 2-3 blocks: "
                  f"{part / 2**20:.1f} MiB ({part / whole - 1:+.1%})", flush=True)
    if args.fit:
        for key, coefficients in fit(rows).items():
            print(f"    {key}: {coefficients},")


if __name__ == "__main__":
    main()
