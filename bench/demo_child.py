"""What the side-by-side demo-run benchmarks share (``bench_measures``, ``bench_masked``): the start of a child
process (``HEAD``: torch's threads, the demo world's character and prior pictures written once into ``root``; a
template for ``str.format`` with ``repo``, ``threads`` and ``root``, each benchmark adding its own run after it), how
a child is run, and the options every such benchmark takes."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HEAD = r"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
import torch
torch.set_num_threads({threads})
from trainer.config.schema import from_dict
from trainer.demo.datasets import write_character_dataset, write_prior_dataset
from trainer.train.loop import run_training
root = Path({root!r})
if not (root / "data").is_dir():
    write_character_dataset(root / "data")
    write_prior_dataset(root / "prior")
"""


def run_child(code: str, threads: int) -> dict:
    """Run one child in its own process (offline, ``threads`` threads): the JSON its last line prints."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(threads)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def demo_parser(doc: str | None) -> argparse.ArgumentParser:
    """The options of a side-by-side demo benchmark: threads, pairs of runs, and steps (0: the preset's)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--steps", type=int, default=0)
    return ap
