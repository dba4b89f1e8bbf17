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


HEALTH_SLOTS = ("loss", "grad_norm", "grad_norm_clipped", "loss_scale", "params_finite", "ema_finite", "weight_norm",
                "update_norm", "ema_drift")
"""The order of the step's numbers in the one vector that is read (and, across processes, all-reduced)."""
AVERAGED_SLOTS = (HEALTH_SLOTS.index("loss"),)  # averaged over the processes
ALL_FINITE_SLOTS = (HEALTH_SLOTS.index("params_finite"), HEALTH_SLOTS.index("ema_finite"))  # true only if on every one


@dataclass
class HealthTensors:
    """The step's numbers as device tensors, before the one host sync. An optional number left None reads as
    None (the loss scale without fp16, the EMA's flag without an EMA, the update and drift when not measured)."""

    loss_sum: torch.Tensor  # the micro-batches' losses summed
    micro_steps: int
    grad_norm: torch.Tensor
    clipped: torch.Tensor
    params_finite: torch.Tensor
    weight_norm: torch.Tensor
    scale: torch.Tensor | None = None
    ema_finite: torch.Tensor | None = None
    update_norm: torch.Tensor | None = None
    ema_drift: torch.Tensor | None = None

    def vector(self) -> torch.Tensor:
        """The numbers in :data:`HEALTH_SLOTS` order (an absent optional one as -1, an absent flag as 1)."""
        one = torch.ones((), device=self.grad_norm.device)
        slots = {
            "loss": (self.loss_sum / self.micro_steps).float(),
            "grad_norm": self.grad_norm.float(),
            "grad_norm_clipped": self.clipped.float(),
            "loss_scale": self.scale.float() if self.scale is not None else one.neg(),
            "params_finite": self.params_finite.float(),
            "ema_finite": self.ema_finite.float() if self.ema_finite is not None else one,
            "weight_norm": self.weight_norm.float(),
            "update_norm": self.update_norm.float() if self.update_norm is not None else one.neg(),
            "ema_drift": self.ema_drift.float() if self.ema_drift is not None else one.neg(),
        }
        return torch.stack([slots[name] for name in HEALTH_SLOTS])

    def read(self, all_reduce=None) -> StepHealth:
        """The one host sync of the step: every number read together (all-reduced first across processes)."""
        values = self.vector()
        if all_reduce is not None:
            values = all_reduce(values)
        v = dict(zip(HEALTH_SLOTS, values.tolist()))
        return StepHealth(
            loss=v["loss"],
            grad_norm=v["grad_norm"],
            grad_norm_clipped=v["grad_norm_clipped"],
            loss_scale=None if self.scale is None else v["loss_scale"],
            params_finite=v["params_finite"] > 0.5,
            ema_finite=v["ema_finite"] > 0.5,
            weight_norm=v["weight_norm"],
            update_ratio=None if self.update_norm is None else v["update_norm"] / max(v["weight_norm"], 1e-12),
            ema_drift=None if self.ema_drift is None else v["ema_drift"],
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
