"""Optimizers and lr schedules. Optimizer state follows the params' dtype, which is fp32 for LoRA params."""

from __future__ import annotations

import torch

from trainer.errors import UserError


def build_optimizer(param_groups: list[dict], cfg, device: torch.device):
    o = cfg.optim
    if o.optimizer == "adamw":
        # fused kernels where the device has them (CUDA, and CPU since torch 2.4: ~3x faster than foreach
        # on a LoRA's few hundred small tensors), foreach (multi-tensor) otherwise
        fused = device.type in ("cuda", "cpu")
        return torch.optim.AdamW(
            param_groups, lr=o.lr, betas=(o.beta1, o.beta2), eps=o.eps, weight_decay=o.weight_decay,
            fused=fused, foreach=None if fused else True,
        )
    if o.optimizer == "adamw8bit":
        try:
            import bitsandbytes as bnb
        except ImportError as e:
            raise UserError(f"optim.optimizer = 'adamw8bit' needs bitsandbytes, which failed to import: {e}") from None
        return bnb.optim.AdamW8bit(param_groups, lr=o.lr, betas=(o.beta1, o.beta2), eps=o.eps, weight_decay=o.weight_decay)
    if o.optimizer == "prodigy":
        from prodigyopt import Prodigy

        return Prodigy(
            param_groups, lr=o.lr, betas=(o.beta1, o.beta2), weight_decay=o.weight_decay,
            use_bias_correction=True, safeguard_warmup=True,
        )
    raise UserError(f"optim.optimizer: unknown optimizer {o.optimizer!r}")


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
