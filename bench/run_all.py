"""Every CPU figure of the performance section, printed by one command (about 12 minutes on 2 cores).

    python bench/run_all.py [--threads 2] [--quick]

1. ``bench_step.py --model tiny-sd15``: ours (latent/text caching on, off) vs the diffusers reference recipe,
   guard on vs off, peak RSS; on the test suite's tiny model.
2. ``bench_step.py --model demo``: the same on the demo base (the model the README's run command trains on a CPU).
3. ``bench_step.py --model sd15-quarter``: the same on SD1.5's own architecture at a quarter of its widths.
4. ``bench_polling.py``: training throughput with the app and one tab polling at 1 Hz vs headless.
5. Where a reference step's work goes in the real SD1.5 at 512 px (FLOPs counted on the meta device, no
   weights): what caching can save on real hardware, the ceiling the small models only approach.

Each part runs in its own process with torch's threads fixed (``--threads``); the summary at the end repeats
every ratio line. Nothing is asserted: these are measurements, not tests.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def real_sd15_shares(resolution: int = 512, batch: int = 1) -> dict[str, float]:
    """FLOPs of the reference step's parts for SD1.5 itself, counted on the meta device (no weights, ~10 s)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from trainer.models.tiny import build_scaled_sd15

    def flops(fn) -> int:
        with FlopCounterMode(display=False) as counter:
            fn()
        return counter.get_total_flops()

    with torch.device("meta"):
        pipe = build_scaled_sd15(1)  # SD1.5 itself, shapes only
        unet, vae, te = pipe.unet, pipe.vae, pipe.text_encoder
        unet.requires_grad_(False)
        pixels = torch.randn(batch, 3, resolution, resolution)
        ids = torch.zeros(batch, 77, dtype=torch.long)
        latents = torch.randn(batch, 4, resolution // 8, resolution // 8, requires_grad=True)
        hidden = torch.randn(batch, 77, te.config.hidden_size)
        t = torch.zeros(batch, dtype=torch.long)
        vae_f = flops(lambda: vae.encode(pixels))
        te_f = flops(lambda: te(ids))
        # frozen UNet: forward plus the backward to its input (what a LoRA's backward pays, give or take the
        # LoRA's own small weight gradients)
        unet_f = flops(lambda: unet(latents, t, hidden).sample.sum().backward())
    total = vae_f + te_f + unet_f
    return {"vae": vae_f / total, "te": te_f / total, "unet": unet_f / total, "tflops": total / 1e12}


def run(cmd: list[str], env: dict[str, str]) -> list[str]:
    print("\n$ " + " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if "gemm_4bit" in line or "torchvision" in line:
            continue  # import noise of bitsandbytes / transformers
        print(line, end="", flush=True)
        lines.append(line.rstrip())
    if proc.wait() != 0:
        print(f"(exit status {proc.returncode})")
    print(f"({time.perf_counter() - t0:.0f} s)", flush=True)
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1), help="torch threads in every part")
    ap.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
    args = ap.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(args.threads), "PYTHONPATH": str(REPO)}
    py = sys.executable
    rounds = ["--rounds", "3", "--steps", "4"] if args.quick else ["--rounds", "7", "--steps", "6"]
    summary: list[str] = []
    for model in ("tiny-sd15", "demo", "sd15-quarter"):
        out = run([py, "bench/bench_step.py", "--model", model, "--threads", str(args.threads), *rounds], env)
        summary += [f"[{model}] {line}" for line in out if "target" in line]
    pairs = ["--pairs", "2", "--steps", "30"] if args.quick else ["--pairs", "3", "--steps", "40"]
    out = run([py, "bench/bench_polling.py", "--threads", str(args.threads), *pairs], env)
    summary += [f"[polling] {line.strip()}" for line in out if "target" in line]

    shares = real_sd15_shares()
    print(f"\nreal SD1.5, 512 px, batch 1, one reference step = {shares['tflops']:.2f} TFLOPs: VAE encode "
          f"{100 * shares['vae']:.0f}%, text encoder {100 * shares['te']:.1f}%, UNet forward+backward "
          f"{100 * shares['unet']:.0f}%")
    summary.append(f"[real SD1.5 512 px] caching removes {100 * (shares['vae'] + shares['te']):.0f}% of a "
                   f"reference step's FLOPs: ratio ceiling about {shares['unet']:.2f} where FLOPs set the pace")
    print("\nsummary")
    for line in summary:
        print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
