"""The run state: everything that moves while a LoRA trains, in one typed object.

Rollback, resume and the checkpoint file are three uses of one pair of methods, so they cannot drift apart:
:meth:`TrainState.snapshot` makes a deep copy on the CPU that nothing live can alias (``tensor.cpu()`` on a
CPU tensor is the same tensor, and ``optimizer.load_state_dict`` keeps the tensors it is given), and
:meth:`TrainState.restore` loads a copy of a snapshot back, with a fresh loss scaler (a ``GradScaler`` whose
``unscale_`` ran for a step that was never taken stays armed and refuses the next ``unscale_``).

The data position is counted in batches consumed, not in optimizer steps: a step the fp16 scaler or the guard
skipped still used its batches, and a resumed run must see the batches the uninterrupted one saw.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import torch
from torch.utils._pytree import tree_map

if TYPE_CHECKING:
    from trainer.run.events import RunEvent

FORMAT = 2


class Emit(Protocol):
    """How a part of the trainer reports: an event object (``Stopped(reason=...)``); the ``time`` and the ``step``
    it leaves out are stamped with now and the current step."""

    def __call__(self, ev: RunEvent, /) -> None: ...


def detached_copy(obj: Any) -> Any:
    """A deep copy with every tensor cloned onto the CPU: shares no storage with ``obj``, whatever its device."""
    return tree_map(_detached_leaf, obj)


def _detached_leaf(leaf: Any) -> Any:
    if isinstance(leaf, torch.Tensor):
        return leaf.detach().to("cpu", copy=True)
    return copy.deepcopy(leaf)


def rng_state() -> dict[str, Any]:
    """This process's random generators (dropout and anything else that draws from the global ones)."""
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state() if torch.cuda.is_available() else None,  # this rank's device only
        "python": random.getstate(),
        "numpy": np.random.get_state(),
    }


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        cuda = state["cuda"]
        torch.cuda.set_rng_state(cuda[0] if isinstance(cuda, list) else cuda)  # format 1 kept every device's
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])


@dataclass
class DataPosition:
    """Where the data stream stands on this rank: the epoch, and the next batch of the rank's share of it."""

    epoch: int = 0
    batch: int = 0
    consumed: int = 0  # batches consumed since the run began, skipped steps included

    def advance(self, n: int) -> None:
        self.batch += n
        self.consumed += n

    def next_epoch(self) -> None:
        self.epoch += 1
        self.batch = 0


@dataclass
class TrainState:
    """The trainable tensors (through ``lora``), optimizer, scheduler, loss scaler, EMA, counters and the
    data position of one rank. ``new_scaler`` builds a fresh scaler for the current precision (None when
    the precision has none)."""

    lora: Any  # trainer.models.lora.LoraModules
    optimizer: torch.optim.Optimizer
    lr_scheduler: Any
    scaler: torch.amp.GradScaler | None
    ema: Any  # trainer.train.ema.LoraEMA | None
    precision: str
    new_scaler: Callable[[], torch.amp.GradScaler | None]
    global_step: int = 0
    lr_factor: float = 1.0
    position: DataPosition = field(default_factory=DataPosition)
    world_size: int = 1
    rank: int = 0

    @property
    def epoch(self) -> int:
        return self.position.epoch

    def snapshot(self, rng_per_rank: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Everything needed to continue from here, deep-copied to the CPU. ``rng_per_rank`` (every rank's
        generators, gathered for a checkpoint file) defaults to this rank's alone."""
        return {
            "format": FORMAT,
            "step": self.global_step,
            "epoch": self.position.epoch,
            "position": {"epoch": self.position.epoch, "batch": self.position.batch,
                         "consumed": self.position.consumed},
            "world_size": self.world_size,
            "precision": self.precision,
            "lora": self.lora.state_dicts(),  # detached fp32 CPU clones
            "optimizer": detached_copy(self.optimizer.state_dict()),
            "scheduler": detached_copy(self.lr_scheduler.state_dict()),
            "scaler": detached_copy(self.scaler.state_dict()) if self.scaler is not None else None,
            "ema": detached_copy(self.ema.state_dict()) if self.ema is not None else None,
            "rng": detached_copy(rng_per_rank if rng_per_rank is not None else [rng_state()]),
            "lr_factor": self.lr_factor,
        }

    def restore(self, snap: dict[str, Any],
                legacy_position: Callable[[int], DataPosition] | None = None) -> None:
        """Put a snapshot back. The snapshot itself stays untouched (loaded from a copy), so it can be
        restored again. ``legacy_position`` places the data position of a format-1 file, which had none."""
        snap = detached_copy(snap)
        self.lora.load_state_dicts(snap["lora"])
        self.optimizer.load_state_dict(snap["optimizer"])
        self.lr_scheduler.load_state_dict(snap["scheduler"])
        self.scaler = self.new_scaler()  # a fresh per-optimizer stage, never one armed by an unscale_
        if self.scaler is not None and snap.get("scaler"):
            self.scaler.load_state_dict(snap["scaler"])
        if self.ema is not None and snap.get("ema"):
            self.ema.load_state_dict(snap["ema"])
        rng = snap["rng"]
        if isinstance(rng, dict):  # format 1: one process's generators
            rng = [rng]
        set_rng_state(rng[self.rank] if self.rank < len(rng) else rng[0])
        self.global_step = int(snap["step"])
        self.lr_factor = float(snap.get("lr_factor", 1.0))
        pos = snap.get("position")
        if pos is not None:
            self.position = DataPosition(int(pos["epoch"]), int(pos["batch"]), int(pos["consumed"]))
        elif legacy_position is not None:  # format 1 counted steps only (it assumed none was skipped)
            self.position = legacy_position(self.global_step)
        else:
            self.position = DataPosition(int(snap.get("epoch", 0)))
