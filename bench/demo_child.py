"""The start of a demo-run child process that the side-by-side benchmarks share (``bench_measures``,
``bench_masked``): torch's threads, and the demo world's character and prior pictures written once into ``root``.
A template for ``str.format`` with ``repo``, ``threads`` and ``root``; each benchmark adds its own run after it."""

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
