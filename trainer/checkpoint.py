"""Resume state: LoRA, optimizer, scheduler, scaler, EMA, RNG and step, in one ``state.pt`` per checkpoint.

The same snapshot, held in memory, is what the guard's rollback restores.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .export import NonFiniteTensorError, first_nonfinite
from .io import atomic_target


def _tensors(obj: Any, prefix: str = "") -> dict[str, torch.Tensor]:
    out: dict[str, torch.Tensor] = {}
    if isinstance(obj, torch.Tensor):
        if obj.is_floating_point():
            out[prefix or "tensor"] = obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            out.update(_tensors(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            out.update(_tensors(v, f"{prefix}.{i}"))
    return out


def rng_state() -> dict[str, Any]:
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "python": random.getstate(),
        "numpy": np.random.get_state(),
    }


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if state.get("cuda") and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])


def snapshot(trainer) -> dict[str, Any]:
    """Everything needed to continue from this step, copied to the CPU."""
    def cpu(obj):
        if isinstance(obj, torch.Tensor):
            return obj.detach().cpu().clone()
        if isinstance(obj, dict):
            return {k: cpu(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [cpu(v) for v in obj]
        return obj

    return {
        "format": 1,
        "step": trainer.global_step,
        "epoch": trainer.epoch,
        "lora": trainer.lora.state_dicts(),
        "optimizer": cpu(trainer.optimizer.state_dict()),
        "scheduler": trainer.lr_scheduler.state_dict(),
        "scaler": trainer.scaler.state_dict() if trainer.scaler is not None else None,
        "ema": trainer.ema.state_dict() if trainer.ema is not None else None,
        "rng": rng_state(),
        "lr_factor": trainer.lr_factor,
        "config": trainer.config.to_toml(),
    }


def restore(trainer, state: dict[str, Any]) -> None:
    trainer.lora.load_state_dicts(state["lora"])
    trainer.optimizer.load_state_dict(state["optimizer"])
    trainer.lr_scheduler.load_state_dict(state["scheduler"])
    if trainer.scaler is not None and state.get("scaler"):
        trainer.scaler.load_state_dict(state["scaler"])
    if trainer.ema is not None and state.get("ema"):
        trainer.ema.load_state_dict(state["ema"])
    set_rng_state(state["rng"])
    trainer.global_step = int(state["step"])
    trainer.epoch = int(state["epoch"])


def nonfinite_in_state(state: dict[str, Any]) -> str | None:
    """The first non-finite tensor of a resume state (LoRA, optimizer, EMA) by name, or None: a state that holds
    one is neither written nor kept as the rollback target."""
    return first_nonfinite(_tensors({"lora": state["lora"], "optimizer": state["optimizer"], "ema": state["ema"]}))


def save_state(state: dict[str, Any], path: Path) -> None:
    bad = nonfinite_in_state(state)
    if bad is not None:
        raise NonFiniteTensorError(path, bad)
    with atomic_target(path) as tmp:  # torch writes the file itself: no second copy in memory
        torch.save(state, tmp)


def load_state(path: Path) -> dict[str, Any]:
    # weights_only=False: the file holds RNG tuples and numpy state we wrote ourselves.
    return torch.load(path, map_location="cpu", weights_only=False)
