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


