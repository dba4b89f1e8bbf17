"""Settings whose allowed values are registered by a layer above the config: the optimizers.

``trainer/train/optim.py`` declares each optimizer once, with ``@optimizer(...)`` on its builder; the decorator
records an :class:`OptimizerSpec` here, where the config (which validates ``optim.optimizer``), the plan (memory,
dose) and the doctor can read it without importing the training code. ``trainer/__init__.py`` imports
``trainer.train.optim`` so the registry is full whenever any part of the library is in use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class OptimizerSpec:
    """One optimizer: how to build it and what the rest of the app needs to know about it."""

    name: str
    build: Callable[..., Any]
    """``build(param_groups, optim_config, device)`` → a ``torch.optim.Optimizer``."""
    needs: str = ""
    """The pip package it imports beyond torch (listed in requirements.txt); empty for torch's own."""
    state_bytes: Callable[[int], int] = lambda n: 8 * n
    """Bytes of optimizer state for one trainable tensor of ``n`` fp32 elements (the memory plan's estimate);
    the default is Adam's two fp32 moments."""
    eight_bit_state: bool = False
    """Its moments are stored in 8 bits (a numerics risk the doctor names)."""
    smaller_state: str = ""
    """A registered optimizer with the same update and a smaller state: the memory fit's suggestion."""
    dose_note: str = ""
    """Set for optimizers that choose their own step size: the lr is a multiplier and the dose
    (lr × steps × alpha / rank) is not comparable to AdamW's. The code of its words in ``words/``."""
    kohya: str = ""
    """Its name in kohya_ss / sd-scripts' ``optimizer_type``."""


OPTIMIZERS: dict[str, OptimizerSpec] = {}
"""Registered optimizers by config name, in registration order (the UI lists them in this order)."""


def register_optimizer(spec: OptimizerSpec) -> OptimizerSpec:
    if spec.name in OPTIMIZERS:
        raise ValueError(f"optimizer {spec.name!r} is registered twice")
    OPTIMIZERS[spec.name] = spec
    return spec


def unregister_optimizer(name: str) -> None:
    del OPTIMIZERS[name]


def optimizer_spec(name: str) -> OptimizerSpec:
    """The spec of a registered optimizer (the config only accepts registered names)."""
    return OPTIMIZERS[name]


def optimizer_names() -> tuple[str, ...]:
    return tuple(OPTIMIZERS)


@dataclass(frozen=True)
class OneOf:
    """Annotation marker: a str setting whose allowed values come from ``names()`` (read by the UI and by
    :func:`trainer.config.schema.allowed_values`)."""

    names: Callable[[], tuple[str, ...]]
