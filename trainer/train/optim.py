"""The optimizers: each is one builder function, declared with :func:`optimizer`.

Adding an optimizer is one decorated function here; its name becomes a value ``optim.optimizer`` accepts, a
choice in the app, and what it tells the memory plan, the dose and the kohya export. Optimizer state follows
the params' dtype, which is fp32 for LoRA params. torch is imported inside the builders so that registering
costs nothing to a caller that only reads a config.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from trainer.config.choices import OptimizerSpec, optimizer_spec, register_optimizer
from trainer.errors import UserError
from trainer.message import msg


def optimizer(name: str, **spec: Any) -> Callable:
    """Register ``build(param_groups, optim_config, device)`` under ``name``; ``spec`` holds the
    :class:`~trainer.config.choices.OptimizerSpec` fields (``needs``, ``state_bytes``, ``dose_note``…)."""

    def register(build: Callable) -> Callable:
        register_optimizer(OptimizerSpec(name, build, **spec))
        return build

    return register


def build_optimizer(param_groups: list[dict], cfg, device):
    """The configured optimizer over ``param_groups``; a missing package is a :class:`UserError` naming it."""
    spec = optimizer_spec(cfg.optim.optimizer)
    if spec.needs:
        try:
            importlib.import_module(spec.needs)
        except ImportError as e:
            raise UserError(msg("error.optim.import", name=spec.name, needs=spec.needs, error=str(e))) from None
    return spec.build(param_groups, cfg.optim, device)


@optimizer("adamw", smaller_state="adamw8bit", kohya="AdamW")
def adamw(param_groups, o, device):
    import torch

    # fused kernels where the device has them (CUDA, and CPU since torch 2.4: ~3x faster than foreach
    # on a LoRA's few hundred small tensors), foreach (multi-tensor) otherwise
    fused = device.type in ("cuda", "cpu")
    return torch.optim.AdamW(
        param_groups, lr=o.lr, betas=(o.beta1, o.beta2), eps=o.eps, weight_decay=o.weight_decay,
        fused=fused, foreach=None if fused else True,
    )


def _adamw8bit_state(n: int) -> int:
    # two 1-byte moments, an fp32 absmax per block of 256 and two 256-entry fp32 quantization maps for tensors of
    # 4,096 elements or more; bitsandbytes keeps fp32 moments below that
    return 2 * n + 2 * 4 * -(-n // 256) + 2 * 1024 if n >= 4096 else 8 * n


@optimizer("adamw8bit", needs="bitsandbytes", state_bytes=_adamw8bit_state, eight_bit_state=True, kohya="AdamW8bit")
def adamw8bit(param_groups, o, device):
    import bitsandbytes as bnb

    return bnb.optim.AdamW8bit(param_groups, lr=o.lr, betas=(o.beta1, o.beta2), eps=o.eps, weight_decay=o.weight_decay)


@optimizer(
    "prodigy", needs="prodigyopt", kohya="Prodigy",
    state_bytes=lambda n: 16 * n,  # Adam's two moments plus its ``s`` and ``p0``
    dose_note="optim.dose_note.prodigy",
)
def prodigy(param_groups, o, device):
    from prodigyopt import Prodigy

    return Prodigy(
        param_groups, lr=o.lr, betas=(o.beta1, o.beta2), weight_decay=o.weight_decay,
        use_bias_correction=True, safeguard_warmup=True,
    )
