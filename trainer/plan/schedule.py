"""The lr schedule and the batches per rank: what the plan counts and the loop applies alike."""

from __future__ import annotations

import torch


def build_scheduler(optimizer, cfg, total_steps: int):
    from diffusers.optimization import get_scheduler

    o = cfg.optim
    warmup = min(o.warmup_steps, max(total_steps - 1, 0))
    kwargs = {"num_cycles": o.num_cycles} if o.scheduler == "cosine_with_restarts" else {}
    name = o.scheduler
    if name == "constant" and warmup:
        name = "constant_with_warmup"  # a warmup that was asked for is honoured, whatever the name
    return get_scheduler(name, optimizer=optimizer, num_warmup_steps=warmup, num_training_steps=total_steps, **kwargs)


SCHEDULE_SAMPLES = 20_000  # longer runs are averaged over this many evenly spaced steps


def schedule_mean(cfg, total_steps: int) -> float:
    """The mean of the lr multiplier over a run's steps under ``cfg.optim``'s schedule, as the loop applies it
    (1.0 for constant, about 0.5 for cosine): ``lr × this`` is the average lr the steps really use."""
    if total_steps <= 0:
        return 1.0
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = build_scheduler(opt, cfg, total_steps)
    factor = sched.lr_lambdas[0]  # diffusers' schedules are all LambdaLR
    n = min(total_steps, SCHEDULE_SAMPLES)
    steps = range(total_steps) if n == total_steps else (int(i * total_steps / n) for i in range(n))
    return sum(factor(t) for t in steps) / n


def per_rank_batches(n_batches: int, world_size: int) -> int:
    """How many of an epoch's ``n_batches`` each of ``world_size`` ranks takes (the padded share)."""
    return -(-n_batches // world_size)
