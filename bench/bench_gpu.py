"""Real-size SD1.5 on a GPU: it/s and peak VRAM for ours and the reference recipe, in one run.

SD1.5's shipped configs with random weights (no download), saved once as a bf16 diffusers folder that both
sides load; 512 px, bf16, batch 1 and 4, gradient checkpointing off and on, SDPA attention (diffusers'
default processor). Both steps come from ``bench/steppers.py``: "ours" is our Trainer's optimizer step as a
run builds it (latents and text embeddings cached, fp32 LoRA weights and AdamW state, the guard's one sync);
"reference" re-implements the training step of diffusers' ``train_text_to_image_lora.py`` (images, VAE and
text encoder every step). Each side runs in its own process, so its peak VRAM is its own; the sides
alternate (reference, ours, then ours, reference) and each keeps its better round.

    python bench/bench_gpu.py            # on a CUDA GPU: about 3 minutes on one H200
    python bench/bench_gpu.py --cudnn-benchmark   # the same with cuDNN autotuning on for both sides
    python bench/bench_gpu.py --precision fp32 --tf32   # fp32 weights and math, TF32 matmuls on for both sides
    python bench/bench_gpu.py --smoke    # the same path on the CPU: SD1.5 at 1/16 of its widths, 128 px, a few
                                         # steps (what the tests run)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

KINDS = ("reference", "ours")


def build_model(folder: Path, divisor: int) -> None:
    """SD1.5 with random weights (widths divided by ``divisor``; 1 = real size), saved as bf16. Built on the GPU
    where there is one: seconds instead of a minute."""
    from trainer.models.tiny import build_scaled_sd15, save_pipeline

    if (folder / "model_index.json").is_file():
        return
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        pipe = build_scaled_sd15(divisor)
    pipe.to("cpu", torch.bfloat16)
    save_pipeline(pipe, folder)


def measure(kind: str, args) -> list[dict]:
    """One side, in this process: every (checkpointing, batch) cell's it/s and peak VRAM."""
    import steppers

    device = torch.device("cuda" if torch.cuda.is_available() and not args.smoke else "cpu")
    # backend switches under study, set alike for both sides (off is PyTorch's default for both)
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    cfg = steppers.config(Path(args.data), Path(tempfile.mkdtemp(dir=args.work)), args.base, args.res, {
        "train.device": device.type, "train.precision": args.precision, "train.batch_size": 1,
        "dataset.cache_latents": True, "lora.rank": 16, "lora.alpha": 16.0})
    if kind == "ours":
        step, unet = steppers.ours(cfg)
    else:
        step, unet = steppers.reference(cfg, device, torch.bfloat16 if args.precision == "bf16" else torch.float32)
    cuda = device.type == "cuda"
    cells = []
    for ckpt in (False, True):
        unet.enable_gradient_checkpointing() if ckpt else unet.disable_gradient_checkpointing()
        for batch in args.batches:
            for _ in range(2):  # warm-up: allocator growth, kernel selection
                step(batch)
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            times = []
            for _ in range(args.steps):
                t0 = time.perf_counter()
                step(batch)
                if cuda:
                    torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
            cells.append({"batch": batch, "grad_ckpt": ckpt, "it_s": 1.0 / statistics.median(times),
                          "peak_gib": torch.cuda.max_memory_allocated() / 2**30 if cuda else None})
    return cells


def run_side(kind: str, args) -> list[dict]:
    cmd = [sys.executable, __file__, "--single", kind, "--base", args.base, "--res", str(args.res),
           "--data", args.data, "--work", args.work, "--steps", str(args.steps),
           "--batches", ",".join(map(str, args.batches)), "--precision", args.precision]
    cmd += [flag for flag, on in (("--smoke", args.smoke), ("--tf32", args.tf32),
                                  ("--cudnn-benchmark", args.cudnn_benchmark)) if on]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{proc.stderr[-3000:]}")
    print(f"  {kind}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true", help="SD1.5 at 1/16 of its widths on the CPU, a few steps")
    ap.add_argument("--steps", type=int, default=None, help="timed steps per cell (12 on a GPU, 2 smoke)")
    ap.add_argument("--rounds", type=int, default=2, help="runs of each side, alternating")
    ap.add_argument("--work", help="folder for the model, data and run folders (default: a new temp folder)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--precision", choices=("bf16", "fp32"), default="bf16", help="on a GPU (the CPU smoke is fp32)")
    ap.add_argument("--tf32", action="store_true", help="both sides: TF32 matmuls (matter for fp32 work)")
    ap.add_argument("--cudnn-benchmark", action="store_true", help="both sides: cuDNN picks convolution "
                    "algorithms by timing them (once per shape)")
    ap.add_argument("--single", choices=KINDS, help=argparse.SUPPRESS)
    ap.add_argument("--base", help=argparse.SUPPRESS)
    ap.add_argument("--res", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--batches", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.steps = args.steps or (2 if args.smoke else 12)

    if args.single:  # a child measuring one side
        args.batches = [int(b) for b in args.batches.split(",")]
        print(json.dumps(measure(args.single, args)))
        return

    gpu = torch.cuda.is_available() and not args.smoke
    if not gpu and not args.smoke:
        raise SystemExit("bench_gpu.py needs a CUDA GPU; --smoke runs the same path on the CPU, SD1.5 at 1/16 width")
    args.precision = args.precision if gpu else "fp32"  # what both sides run, told to each child
    from tests.helpers import write_toy_dataset

    work = Path(args.work or tempfile.mkdtemp())
    work.mkdir(parents=True, exist_ok=True)
    args.work = str(work)
    divisor = 1 if gpu else 16
    folder = work / f"sd15-random-{divisor}"
    t0 = time.perf_counter()
    build_model(folder, divisor)
    print(f"  SD1.5 (widths / {divisor}) with random weights built and saved: {time.perf_counter() - t0:.0f} s",
          file=sys.stderr)
    args.base, args.res, args.batches = str(folder), 512 if gpu else 128, [1, 4] if gpu else [1, 2]
    args.data = str(write_toy_dataset(work / "data", n=8, size=args.res))

    best: dict[tuple, dict] = {}
    for r in range(args.rounds):
        for kind in (KINDS if r % 2 == 0 else KINDS[::-1]):
            for cell in run_side(kind, args):
                key = (cell["batch"], cell["grad_ckpt"], kind)
                if key not in best or cell["it_s"] > best[key]["it_s"]:
                    best[key] = {"it_s": cell["it_s"], "peak_gib": cell["peak_gib"]}
    results = [{"batch": batch, "grad_ckpt": ckpt, **{k: best[(batch, ckpt, k)] for k in KINDS}}
               for ckpt in (False, True) for batch in args.batches]
    name = torch.cuda.get_device_name() if gpu else "cpu (smoke)"
    if args.json:
        print(json.dumps({"device": name, "torch": torch.__version__, "precision": args.precision, "tf32": args.tf32,
                          "cudnn_benchmark": args.cudnn_benchmark, "results": results}))
        return
    print(f"device: {name}; torch {torch.__version__}; SD1.5 {'real size' if gpu else 'at 1/16 width'} at "
          f"{args.res} px, {args.precision}, SDPA; median of {args.steps} steps, best of {args.rounds}; "
          f"TF32 matmuls {'on' if args.tf32 else 'off'}, cuDNN autotuning {'on' if args.cudnn_benchmark else 'off'}")
    print(f"{'batch':>5} {'ckpt':>5} {'ref it/s':>9} {'ours it/s':>10} {'speed-up':>9} {'ref VRAM':>9} {'ours VRAM':>10}")

    def gib(v: float | None) -> str:
        return f"{v:.2f}G" if v is not None else "-"

    for r in results:
        ref, ours = r["reference"], r["ours"]
        print(f"{r['batch']:>5} {r['grad_ckpt']!s:>5} {ref['it_s']:>9.2f} {ours['it_s']:>10.2f} "
              f"{ours['it_s'] / ref['it_s']:>8.2f}x {gib(ref['peak_gib']):>9} {gib(ours['peak_gib']):>10}")


if __name__ == "__main__":
    main()
