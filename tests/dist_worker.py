"""Run under ``torchrun --nproc_per_node 2``: trains each config given (TOML paths) in turn and writes, per rank,
``OUT/<config stem>-rank<R>.pt`` with the final LoRA tensors, the steps applied, the first noise value of every
micro-batch and the files of every batch, for tests/test_distributed.py to compare across ranks."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from trainer.config.schema import load_config
from trainer.run.events import MemorySink
from trainer.train.loop import Hooks, run_training


class Record(Hooks):
    def __init__(self):
        self.noise_heads: list[float] = []
        self.batches: list[list[str]] = []
        self.applied = 0
        self.trainer = None

    def before_step(self, trainer):
        self.trainer = trainer

    def noise(self, trainer, noise):
        self.noise_heads.append(float(noise.flatten()[0]))
        return noise

    def after_backward(self, trainer):
        self.batches.append(list(trainer.last_batch_files))


def main(out: Path, configs: list[str]) -> int:
    for path in configs:
        hooks = Record()
        result = run_training(load_config(path), MemorySink(), hooks=hooks)
        t = hooks.trainer
        torch.save({
            "status": result.status,
            "run_dir": str(result.run_dir),
            "rank": t.dist.rank,
            "world_size": t.dist.world_size,
            "global_step": t.state.global_step,
            "plan_total_steps": t.plan.total_steps,
            "epochs_seen": t.state.position.epoch,
            "lora": t.models.lora.state_dicts(),
            "noise_heads": hooks.noise_heads,
            "batches": hooks.batches,
        }, out / f"{Path(path).stem}-rank{t.dist.rank}.pt")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2:]))
