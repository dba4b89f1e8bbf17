"""Several processes (``torchrun`` / ``accelerate launch``): DDP over the LoRA-carrying models, rank 0 writes.

With one process every method is a cheap no-op, so the loop reads the same either way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as torch_dist


@dataclass
class Dist:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @classmethod
    def from_env(cls) -> Dist:
        world = int(os.environ.get("WORLD_SIZE", "1"))
        if world <= 1:
            return cls()
        if not torch_dist.is_initialized():
            backend = "nccl" if torch.cuda.is_available() else "gloo"
            torch_dist.init_process_group(backend=backend)
        return cls(torch_dist.get_rank(), torch_dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")))

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def device(self) -> torch.device:
        if torch.cuda.is_available():
            torch.cuda.set_device(self.local_rank)
            return torch.device("cuda", self.local_rank)
        return torch.device("cpu")

    def broadcast_object(self, obj):
        if self.world_size == 1:
            return obj
        box = [obj]
        torch_dist.broadcast_object_list(box, src=0)
        return box[0]

    def all_gather_object(self, obj) -> list:
        """``obj`` from every rank, in rank order (a one-item list with one process)."""
        if self.world_size == 1:
            return [obj]
        out = [None] * self.world_size
        torch_dist.all_gather_object(out, obj)
        return out

    def any(self, *flags: bool) -> list[bool]:
        """Each flag set on any rank, so every rank takes the same branch (a save, a stop): a collective
        that one rank enters alone waits forever."""
        if self.world_size == 1:
            return list(flags)
        t = torch.tensor([float(f) for f in flags], device=self.device)
        torch_dist.all_reduce(t, op=torch_dist.ReduceOp.MAX)
        return [v > 0.5 for v in t.tolist()]

    def shard(self, batches: list) -> list:
        """This rank's share of an epoch's batches: every world_size-th one, after the list is padded with
        batches from its start to a multiple of world_size (as accelerate's ``even_batches`` does), so every
        rank takes the same number of steps and none waits alone in an all-reduce."""
        if self.world_size == 1:
            return batches
        return padded_to_multiple(batches, self.world_size)[self.rank :: self.world_size]

    def wrap(self, models: dict[str, torch.nn.Module]) -> dict[str, torch.nn.Module]:
        """Averages LoRA gradients across ranks after each backward (DDP would also work; this needs no wrapper
        around modules whose forward signatures the pipeline relies on)."""
        if self.world_size == 1:
            return models
        for m in models.values():
            for p in m.parameters():
                if p.requires_grad:
                    torch_dist.broadcast(p.data, src=0)  # identical start on every rank
        self._grad_params = [p for m in models.values() for p in m.parameters() if p.requires_grad]
        return models

    def average_gradients(self) -> None:
        if self.world_size == 1:
            return
        grads = [p.grad for p in self._grad_params if p.grad is not None]
        if not grads:
            return
        flat = torch.cat([g.reshape(-1) for g in grads])
        torch_dist.all_reduce(flat, op=torch_dist.ReduceOp.SUM)
        flat /= self.world_size
        offset = 0
        for g in grads:
            n = g.numel()
            g.copy_(flat[offset : offset + n].view_as(g))
            offset += n

    def all_reduce_health(self, values: torch.Tensor) -> torch.Tensor:
        """Loss averaged; a non-finite anything on one rank is non-finite for all (max of NaN-aware flags)."""
        from trainer.doctor.numerics import ALL_FINITE_SLOTS, AVERAGED_SLOTS

        values = values.clone()
        bad = (~torch.isfinite(values)).float()
        finite_vals = torch.where(torch.isfinite(values), values, torch.zeros_like(values))
        torch_dist.all_reduce(bad, op=torch_dist.ReduceOp.MAX)
        averaged = finite_vals[list(AVERAGED_SLOTS)].clone()
        torch_dist.all_reduce(averaged, op=torch_dist.ReduceOp.SUM)
        flags = values[list(ALL_FINITE_SLOTS)].clone()
        torch_dist.all_reduce(flags, op=torch_dist.ReduceOp.MIN)  # params/EMA finite only if finite everywhere
        out = values.clone()
        out[list(AVERAGED_SLOTS)] = averaged / self.world_size
        out[list(ALL_FINITE_SLOTS)] = flags
        out = torch.where(bad > 0, torch.full_like(out, float("nan")), out)
        return out

    def barrier(self) -> None:
        if self.world_size > 1:
            torch_dist.barrier()


def padded_to_multiple(batches: list, world_size: int) -> list:
    """``batches`` followed by its first few again, up to a multiple of ``world_size``."""
    missing = -len(batches) % world_size
    return batches + [batches[i % len(batches)] for i in range(missing)] if batches else batches


