"""Resume state on disk: one ``state.pt`` per checkpoint, the :class:`~trainer.train.state.TrainState` snapshot.

The same snapshot, held in memory, is what the guard's rollback restores.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from trainer.io import atomic_target
from trainer.tensor_files import NonFiniteTensorError, first_nonfinite
from trainer.train.state import rng_state

if TYPE_CHECKING:
    from trainer.config.schema import Config
    from trainer.train.distributed import Dist
    from trainer.train.state import TrainState


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


def snapshot(state: TrainState, dist: Dist, config: Config) -> dict[str, Any]:
    """The :class:`~trainer.train.state.TrainState` snapshot, with every rank's generators and the config.

    Every rank calls it at the same steps (it gathers the generators when there are several).
    """
    snap = state.snapshot(dist.all_gather_object(rng_state()))
    snap["config"] = config.to_toml()
    return snap


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
