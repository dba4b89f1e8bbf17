"""The one place that decides device and precision.

Rules (docs/design.md, "Numerics rules"): frozen weights in the low-precision dtype; LoRA params, optimizer
state and EMA shadow in fp32; fp16 runs through autocast + GradScaler on our own path (accelerate does no fp16
AMP on CPU, ours works everywhere). bf16 asked for where the device lacks it falls back to fp16 on a GPU
(with the scaler) and to fp32 on a CPU without bf16 autocast, with a message that is recorded in the run.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import torch

from trainer.message import Msg, msg

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass
class PrecisionPlan:
    requested: str
    precision: str  # what is actually used
    device: torch.device
    weight_dtype: torch.dtype  # frozen UNet / text encoder weights
    vae_dtype: torch.dtype
    autocast_dtype: torch.dtype | None
    use_scaler: bool
    fallback: Msg | None = None  # the message when the request could not be honoured

    def autocast(self):
        if self.autocast_dtype is None:
            return nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast_dtype)

    def to_json(self) -> dict:
        return {
            "requested": self.requested,
            "precision": self.precision,
            "device": str(self.device),
            "weight_dtype": str(self.weight_dtype).replace("torch.", ""),
            "vae_dtype": str(self.vae_dtype).replace("torch.", ""),
            "trainable_dtype": "float32",
            "autocast_dtype": str(self.autocast_dtype).replace("torch.", "") if self.autocast_dtype else None,
            "grad_scaler": self.use_scaler,
            "fallback": self.fallback.to_json() if self.fallback else "",  # worded where a file holds it
        }


def resolve_device(name: str = "auto") -> torch.device:
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", torch.cuda.current_device())
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if name == "cuda" and not torch.cuda.is_available():
        from trainer.errors import UserError

        raise UserError(msg("error.device.no_cuda"))
    return torch.device(name)


def bf16_supported(device: torch.device) -> bool:
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported(including_emulation=False)
    return device.type == "cpu"  # CPU autocast supports bf16 (slow on old CPUs, but numerically fine)


def decide_precision(requested: str, device: torch.device, vae_force_upcast: bool = False,
                     bf16: bool | None = None) -> PrecisionPlan:
    """``bf16``: whether the device has it (None: ask the device; a plan for a GPU that is not here says)."""
    precision, fallback = requested, None
    if requested == "bf16" and not (bf16_supported(device) if bf16 is None else bf16):
        precision = "fp16" if device.type == "cuda" else "fp32"
        code = "precision.fallback_scaled" if precision == "fp16" else "precision.fallback"
        fallback = msg(code, device=str(device), precision=precision)
    weight_dtype = DTYPES[precision]
    if device.type == "cpu" and precision == "fp16":
        # CPU fp16 kernels are partial; frozen weights stay fp32 and autocast runs the matmuls in fp16,
        # which keeps the overflow behaviour (and the scaler's job) the same as on a GPU.
        weight_dtype = torch.float32
    vae_dtype = torch.float32 if (precision == "fp16" and vae_force_upcast) or device.type == "cpu" else weight_dtype
    return PrecisionPlan(
        requested=requested,
        precision=precision,
        device=device,
        weight_dtype=weight_dtype,
        vae_dtype=vae_dtype,
        autocast_dtype=None if precision == "fp32" else DTYPES[precision],
        use_scaler=precision == "fp16",
        fallback=fallback,
    )


def make_grad_scaler(plan: PrecisionPlan, init_scale: float = 65536.0, growth_interval: int = 2000):
    if not plan.use_scaler:
        return None
    return torch.amp.GradScaler(plan.device.type, init_scale=init_scale, growth_interval=growth_interval)
