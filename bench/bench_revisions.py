"""Is the working tree's training step slower than an earlier revision's? Our optimizer step (latents cached,
the guard on, as ``bench_step.py``'s ``ours_cached``) in the working tree against the same step in a git revision
checked out beside it, on the same model, data, batch and threads; several rounds alternating which tree goes
first, each tree's step timed in a process of its own. Prints each tree's median seconds per step, the ratio
working tree / revision per round and pooled, and the spread. Nothing is asserted; run it alone.

    python bench/bench_revisions.py [--rev HEAD] [--rounds 6] [--steps 40] [--model tiny-sd15] [--threads 2]

A refactor that must not slow the step (the model-family adapter owning the forward pass) is checked with it:
target working tree / revision <= 1.03.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"}

# Run in a tree (its own trainer package and bench/steppers.py): build our step, warm up, time ``steps`` steps one
# by one and print the per-step seconds as JSON.
CHILD = r"""
import json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, "."); sys.path.insert(0, "bench")
import torch
torch.set_num_threads(int(sys.argv[1]))
import bench_step, steppers
from tests.helpers import write_toy_dataset
tmp = Path(tempfile.mkdtemp())
bench_step.select_model(sys.argv[3], tmp)
data = write_toy_dataset(tmp / "data", n=16, size=bench_step.MODEL["resolution"])
step = bench_step.build("ours_cached", data, tmp)
for _ in range(5):
    step()
times = []
for _ in range(int(sys.argv[2])):
    t0 = time.perf_counter(); step(); times.append(time.perf_counter() - t0)
print(json.dumps(times))
"""


def time_tree(tree: Path, args) -> list[float]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(args.threads), str(args.steps), args.model], cwd=tree,
                         env=ENV, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"{tree}: {out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rev", default="HEAD", help="the revision to compare the working tree with")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--steps", type=int, default=40, help="timed steps per tree and round")
    ap.add_argument("--model", default="tiny-sd15", choices=["tiny-sd15", "demo", "sd15-quarter"])
    ap.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    args = ap.parse_args()

    old = Path(tempfile.mkdtemp()) / "rev"
    subprocess.run(["git", "worktree", "add", "--detach", str(old), args.rev], cwd=REPO, check=True,
                   capture_output=True)
    demo_base = REPO / "demo" / "base"
    if demo_base.is_dir() and not (old / "demo" / "base" / "model_index.json").is_file():
        (old / "demo").mkdir(exist_ok=True)
        subprocess.run(["cp", "-r", str(demo_base), str(old / "demo")], check=True)
    rev = subprocess.run(["git", "rev-parse", "--short", args.rev], cwd=REPO, capture_output=True, text=True).stdout.strip()
    trees = {"working tree": REPO, f"revision {rev}": old}
    medians: dict[str, list[float]] = {name: [] for name in trees}
    ratios = []
    try:
        for r in range(args.rounds):
            order = list(trees) if r % 2 == 0 else list(reversed(list(trees)))
            round_medians = {}
            for name in order:
                round_medians[name] = statistics.median(time_tree(trees[name], args))
                medians[name].append(round_medians[name])
            ratio = round_medians["working tree"] / round_medians[f"revision {rev}"]
            ratios.append(ratio)
            print(f"round {r + 1}: " + ", ".join(f"{n} {round_medians[n] * 1000:.1f} ms" for n in trees)
                  + f"  ratio {ratio:.3f}", flush=True)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=REPO, capture_output=True)
    print(f"{args.model}, {args.threads} threads, {args.steps} steps per tree and round, {args.rounds} rounds")
    for name in trees:
        print(f"  {name:<22} median {statistics.median(medians[name]) * 1000:.1f} ms/step")
    pooled = statistics.median(medians["working tree"]) / statistics.median(medians[f"revision {rev}"])
    spread = statistics.pstdev(ratios) if len(ratios) > 1 else 0.0
    print(f"working tree / revision {rev}: pooled {pooled:.3f} (rounds {min(ratios):.3f}-{max(ratios):.3f}, "
          f"sd {spread:.3f})   target <= 1.03")


if __name__ == "__main__":
    main()
