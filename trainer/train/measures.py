"""What a step measures beside its loss and gradients: the LoRA weights' update size (for the 'learning
stalled' detector), the device's memory and the CPU the run got (for the slowdown detector)."""

from __future__ import annotations

import time

import psutil
import torch

UPDATE_RATIO_EVERY = 10  # steps between measurements of ‖Δw‖/‖w‖ (one extra copy of the LoRA weights)


class StepMeasures:
    """A step's measures beside its loss and gradients, read without a host sync (the guard's one sync carries
    the update norm)."""

    def __init__(self, trainable: list[torch.nn.Parameter], device: torch.device):
        self.trainable, self.device = trainable, device
        self.cpu = CpuShare()  # the CPU each step got, for the slowdown detector
        self._ref: tuple[int, list[torch.Tensor]] | None = None  # (step, LoRA weights at that step)

    def reset(self) -> None:
        """Forget the reference weights (after a rollback the next measurement starts afresh)."""
        self._ref = None

    def update_norm(self, step: int) -> torch.Tensor | None:
        """‖w_t − w_{t−k}‖ every k applied steps, for the 'learning stalled' detector; None on other steps.
        A step retried after a skip has the same weights: it is measured once, not against itself."""
        if step % UPDATE_RATIO_EVERY != 0 or (self._ref is not None and self._ref[0] == step):
            return None
        with torch.no_grad():
            current = [p.detach().float().clone() for p in self.trainable]
            ref, self._ref = self._ref, (step, current)
            if ref is None:
                return None
            return torch.stack(torch._foreach_norm(torch._foreach_sub(current, ref[1]))).norm()

    def device_memory(self) -> dict[str, int | None]:
        """On CUDA: the bytes this process's allocator holds and the device's free bytes (every process), for
        the slowdown detector. No host sync: the allocator's counter and one driver query."""
        if self.device.type != "cuda":
            return {"device_mem_reserved": None, "device_mem_free": None}
        free, _ = torch.cuda.mem_get_info(self.device)
        return {"device_mem_reserved": torch.cuda.memory_reserved(self.device), "device_mem_free": free}


class CpuShare:
    """The machine's CPU since the last reading, as shares of all its cores' time: this process's own
    (``cpu_self``, every thread of it) and every other process's (``cpu_others``). A run that slows down while
    ``cpu_others`` rises was crowded out by other programs, not short of device memory. One read of the
    machine's counters (``/proc/stat`` on Linux) and of the process's clock: tens of microseconds a step."""

    def __init__(self) -> None:
        self.last = self._read()

    @staticmethod
    def _read() -> tuple[float, float, float]:
        """(this process's CPU seconds, the machine's busy CPU seconds, its total), every core counted."""
        times = psutil.cpu_times()
        total = sum(times)
        idle = times.idle + getattr(times, "iowait", 0.0)  # waiting for a disk is not using the CPU
        return time.process_time(), total - idle, total

    def __call__(self) -> dict[str, float | None]:
        now = self._read()
        (own0, busy0, total0), (own1, busy1, total1) = self.last, now
        self.last = now
        span = total1 - total0
        if span <= 0:  # the machine's counters tick at 10 ms a core: none since the last reading
            return {"cpu_self": None, "cpu_others": None}
        own = min(1.0, (own1 - own0) / span)
        return {"cpu_self": round(own, 4), "cpu_others": round(max(0.0, (busy1 - busy0) / span - own), 4)}
