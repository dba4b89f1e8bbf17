"""Test seams of the training loop: a no-op base whose methods tests override to inject faults."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from trainer.train.loop import Trainer


class Hooks:
    """Test seams: override to inject faults. Production runs use this no-op base."""

    def before_step(self, trainer: Trainer) -> None: ...

    def after_backward(self, trainer: Trainer) -> None: ...

    def batch_latents(self, trainer: Trainer, latents: torch.Tensor) -> torch.Tensor:
        return latents

    def noise(self, trainer: Trainer, noise: torch.Tensor) -> torch.Tensor:
        return noise

    def after_step(self, trainer: Trainer) -> None: ...
