"""The per-step numbers, read with one host sync, and the details that are paid for only when something broke.

The healthy path builds every value as a device tensor (loss, total grad-norm before and after clipping, the
loss scale, whether the params and the EMA shadow left by the previous step are finite, the LoRA weight norm)
and reads them all with a single ``.tolist()``. Only when a value is non-finite does :func:`first_bad_module`
walk the modules to say where it began.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass
class StepHealth:
    loss: float
    grad_norm: float  # before clipping (inf/nan when any gradient is)
    grad_norm_clipped: float
    loss_scale: float | None
    params_finite: bool  # after the previous optimizer step
    ema_finite: bool
    weight_norm: float
    update_ratio: float | None  # ‖w_t − w_{t−k}‖ / ‖w_t‖ when measured this step
    ema_drift: float | None = None  # ‖EMA − live‖ / ‖live‖ when measured this step

    @property
    def loss_finite(self) -> bool:
        return math.isfinite(self.loss)

    @property
    def grad_finite(self) -> bool:
        return math.isfinite(self.grad_norm)


def grad_norms(params: list[torch.nn.Parameter], max_norm: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Total grad-norm before clipping, and after (clipping in place when ``max_norm`` > 0). No host sync."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        zero = torch.zeros((), device=params[0].device)
        return zero, zero
    if max_norm > 0:
        total = torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=True)
        coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)  # the factor clip_grad_norm_ applied
        return total, total * coef
    total = torch.nn.utils.get_total_norm(grads, foreach=True)
    return total, total


@torch.no_grad()
def weight_norm_flag(params: list[torch.nn.Parameter]) -> tuple[torch.Tensor, torch.Tensor]:
    """(total weight norm, all finite) as tensors, from one fused norm over every LoRA tensor."""
    norms = torch.stack(torch._foreach_norm([p.detach() for p in params])).float()
    return norms.norm(), norms.isfinite().all()


def read_health(
    loss_sum: torch.Tensor,
    micro_steps: int,
    grad_norm: torch.Tensor,
    clipped: torch.Tensor,
    scale: torch.Tensor | None,
    params_finite: torch.Tensor,
    ema_finite: torch.Tensor | None,
    weight_norm: torch.Tensor,
    update_norm: torch.Tensor | None,
    all_reduce=None,
    ema_drift: torch.Tensor | None = None,
) -> StepHealth:
    """The one host sync of the step: stack every number and read them together."""
    device = grad_norm.device
    one = torch.ones((), device=device)
    values = torch.stack([
        (loss_sum / micro_steps).float(),
        grad_norm.float(),
        clipped.float(),
        (scale.float() if scale is not None else one.neg()),
        params_finite.float(),
        (ema_finite.float() if ema_finite is not None else one),
        weight_norm.float(),
        (update_norm.float() if update_norm is not None else one.neg()),
        (ema_drift.float() if ema_drift is not None else one.neg()),
    ])
    if all_reduce is not None:
        values = all_reduce(values)
    loss, gn, gc, sc, pf, ef, wn, un, ed = values.tolist()
    return StepHealth(
        loss=loss,
        grad_norm=gn,
        grad_norm_clipped=gc,
        loss_scale=None if scale is None else sc,
        params_finite=pf > 0.5,
        ema_finite=ef > 0.5,
        weight_norm=wn,
        update_ratio=None if update_norm is None else un / max(wn, 1e-12),
        ema_drift=None if ema_drift is None else ed,
    )


@torch.no_grad()
def first_bad_module(named: list[tuple[str, torch.nn.Parameter]], what: str) -> str | None:
    """Which module's gradient (``what="grad"``) or weight (``"param"``) is non-finite first, in model order."""
    for name, p in named:
        t = p.grad if what == "grad" else p
        if t is not None and not bool(torch.isfinite(t).all()):
            return _module_of(name)
    return None


@torch.no_grad()
def first_bad_tensor(named: list[tuple[str, torch.Tensor]]) -> str | None:
    for name, t in named:
        if not bool(torch.isfinite(t).all()):
            return _module_of(name)
    return None


def _module_of(param_name: str) -> str:
    # "unet.down_blocks.0.….to_q.lora_A.default.weight" → "unet.down_blocks.0.….to_q"
    return param_name.split(".lora_")[0]
