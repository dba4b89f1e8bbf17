"""Step time, side by side: our trainer vs the diffusers reference recipe, and the guard's cost.

Variants run in one process, alternating A, B, A, B in blocks of steps, on the same tiny SD1.5-shaped model,
data, batch, resolution and precision; medians and spread are printed, never asserted. Peak memory (RSS) is
measured per variant in a fresh subprocess.

    python bench/bench_step.py [--rounds 5] [--steps 8] [--threads 2] [--model tiny-sd15|demo|sd15-quarter] [--no-memory]

``--model tiny-sd15`` is the test suite's tiny model (64 px); ``demo`` the demo base that the README's run command
trains on a CPU (SD1.5's four blocks, 2x VAE, 64 px); ``sd15-quarter`` is SD1.5's own architecture at a
quarter of its widths (8x VAE with mid attention, 12-layer text encoder) at 128 px, whose VAE is a larger
share of a step, as in the real model (see docs/performance.md).

Both steps are built by ``bench/steppers.py``: ours is our Trainer's optimizer step; the reference is the
training step of diffusers' ``train_text_to_image_lora.py`` re-implemented from its documented behaviour.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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

import steppers  # noqa: E402
import torch  # noqa: E402

from tests.helpers import write_toy_dataset  # noqa: E402

BATCH, STEPS_WARMUP = 2, 3
MODELS = {"tiny-sd15": 64, "sd15-quarter": 128, "demo": 64}  # model -> training resolution
MODEL = {"base": "tiny-sd15", "resolution": 64}  # set by main() before anything is built


def _config(data: Path, out: Path, cache: bool, guard: bool):
    return steppers.config(data, out, MODEL["base"], MODEL["resolution"], {
        "train.batch_size": BATCH, "dataset.cache_latents": cache, "guard.enabled": guard, "guard.detectors": guard})


def select_model(name: str, tmp: Path) -> None:
    """Point every variant at ``name``: the scaled SD1.5 is built once and saved, and all variants load it."""
    MODEL["resolution"] = MODELS[name]
    if name in ("tiny-sd15", "demo"):
        MODEL["base"] = name
        return
    from trainer.models.tiny import build_scaled_sd15, save_pipeline

    folder = tmp / name
    if not (folder / "model_index.json").is_file():
        save_pipeline(build_scaled_sd15(4), folder)
    MODEL["base"] = str(folder)


def build(name: str, data: Path, out: Path):
    if name == "reference":
        return steppers.reference(_config(data, Path(tempfile.mkdtemp()), False, False))[0]
    cache = name in ("ours_cached", "ours_cached_noguard")
    guard = name != "ours_cached_noguard"
    return steppers.ours(_config(data, out / name, cache, guard))[0]


def time_block(step, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    return (time.perf_counter() - t0) / n


def _reset_peak_rss() -> bool:
    """Linux: writing 5 to clear_refs resets the process's peak RSS (VmHWM), so the steps' own peak can be read."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _vm_hwm_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mib(name: str, data: Path, steps: int, args) -> dict:
    out = subprocess.run([sys.executable, __file__, "--single", name, "--data", str(data), "--steps", str(steps),
                          "--model", args.model, "--threads", str(args.threads), "--tmp", str(data.parent)],
                         capture_output=True, text=True, cwd=REPO, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=8, help="steps per block")
    ap.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1), help="torch threads (fixed, so "
                    "runs compare)")
    ap.add_argument("--model", choices=sorted(MODELS), default="tiny-sd15")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--single", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--tmp", help=argparse.SUPPRESS)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    if args.single:  # a subprocess measuring one variant's peak memory
        select_model(args.model, Path(args.tmp))
        step = build(args.single, Path(args.data), Path(tempfile.mkdtemp()))
        step()  # the first step allocates what every later one reuses
        reset = _reset_peak_rss()
        for _ in range(args.steps):
            step()
        print(json.dumps({"peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                          "steps_peak_rss_mib": _vm_hwm_mib() if reset else None}))
        return

    tmp = Path(tempfile.mkdtemp())
    select_model(args.model, tmp)
    data = write_toy_dataset(tmp / "data", n=16, size=MODEL["resolution"])
    names = ["reference", "ours_uncached", "ours_cached", "ours_cached_noguard"]
    steppers = {n: build(n, data, tmp) for n in names}
    for n in names:  # warm-up: first calls pay for allocator growth and lazy init
        time_block(steppers[n], STEPS_WARMUP)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(args.rounds):
        order = names if r % 2 == 0 else list(reversed(names))
        for n in order:
            times[n].append(time_block(steppers[n], args.steps))

    med = {n: statistics.median(v) for n, v in times.items()}
    print(f"{args.model}, batch {BATCH}, {MODEL['resolution']} px, fp32, {torch.get_num_threads()} threads; "
          f"{args.rounds} rounds × {args.steps} steps, alternating")
    print(f"{'variant':<22}{'median s/step':>14}{'min':>10}{'max':>10}")
    for n in names:
        print(f"{n:<22}{med[n]:>14.4f}{min(times[n]):>10.4f}{max(times[n]):>10.4f}")

    def ratio(a: str, b: str) -> str:
        per_round = [x / y for x, y in zip(times[a], times[b])]
        return f"{med[a] / med[b]:.3f} (per-round {min(per_round):.3f}–{max(per_round):.3f})"

    print(f"ours (caching on)  / reference : {ratio('ours_cached', 'reference')}   target <= 0.70")
    print(f"ours (caching off) / reference : {ratio('ours_uncached', 'reference')}   target <= 1.02")
    print(f"guard on / guard off           : {ratio('ours_cached', 'ours_cached_noguard')}   target <= 1.03")
    if not args.no_memory:
        print("peak RSS (MiB, a fresh process per variant; 'steps' = the peak over 10 steps after the first)")
        print(f"  {'variant':<22}{'process':>10}{'steps':>10}")
        for n in names:
            m = peak_rss_mib(n, data, 10, args)
            steps_peak = "n/a" if m["steps_peak_rss_mib"] is None else f"{m['steps_peak_rss_mib']:.0f}"
            print(f"  {n:<22}{m['peak_rss_mib']:>10.0f}{steps_peak:>10}")


if __name__ == "__main__":
    main()
