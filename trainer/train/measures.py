"""What a step measures beside its loss and gradients: the LoRA weights' update size (for the 'learning
stalled' detector) and the device's memory (for the slowdown detector)."""

from __future__ import annotations

import torch

from trainer.train.parts import TrainerParts

UPDATE_RATIO_EVERY = 10  # steps between measurements of ‖Δw‖/‖w‖ (one extra copy of the LoRA weights)


class MeasuresMixin(TrainerParts):
    """The Trainer's step measures (``self._update_ref`` is set in its ``__init__``)."""

    def _update_norm(self) -> torch.Tensor | None:
        """‖w_t − w_{t−k}‖ every k applied steps, for the 'learning stalled' detector; None on other steps.
        A step retried after a skip has the same weights: it is measured once, not against itself."""
        step = self.global_step
        if step % UPDATE_RATIO_EVERY != 0 or (self._update_ref is not None and self._update_ref[0] == step):
            return None
        with torch.no_grad():
            current = [p.detach().float().clone() for p in self.trainable]
            ref, self._update_ref = self._update_ref, (step, current)
            if ref is None:
                return None
            return torch.stack(torch._foreach_norm(torch._foreach_sub(current, ref[1]))).norm()

    def _device_memory(self) -> dict[str, int | None]:
        """On CUDA: the bytes this process's allocator holds and the device's free bytes (every process), for
        the slowdown detector. No host sync: the allocator's counter and one driver query."""
        if self.device.type != "cuda":
            return {"device_mem_reserved": None, "device_mem_free": None}
        free, _ = torch.cuda.mem_get_info(self.device)
        return {"device_mem_reserved": torch.cuda.memory_reserved(self.device), "device_mem_free": free}
