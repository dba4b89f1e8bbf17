"""Resume state on disk: one ``state.pt`` per checkpoint, the :class:`~trainer.train.state.TrainState` snapshot.

The same snapshot, held in memory, is what the guard's rollback restores.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch.utils._pytree import KeyPath, MappingKey, SequenceKey, tree_flatten_with_path

from trainer.io import atomic_target
from trainer.tensor_files import NonFiniteTensorError, first_nonfinite
from trainer.train.state import rng_state

if TYPE_CHECKING:
    from trainer.config.schema import Config
    from trainer.train.distributed import Dist
    from trainer.train.state import TrainState


def _tensors(obj: Any) -> dict[str, torch.Tensor]:
    """The floating-point tensors in nested dicts, lists and tuples, by dotted path ("optimizer.state.0.exp_avg")."""
    leaves, _ = tree_flatten_with_path(obj)
    return {_dotted(path): leaf for path, leaf in leaves
            if isinstance(leaf, torch.Tensor) and leaf.is_floating_point()}


def _dotted(path: KeyPath) -> str:
    name = ""
    for key in path:
        if isinstance(key, MappingKey):
            name = f"{name}.{key.key}" if name else str(key.key)
        else:
            name = f"{name}.{key.idx if isinstance(key, SequenceKey) else getattr(key, 'name', key)}"
    return name or "tensor"


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
