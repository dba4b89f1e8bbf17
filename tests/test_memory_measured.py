"""The memory plan against measured peaks: SD1.5's real UNet (full width, random weights from the shipped config)
with a rank-16 attention LoRA, one forward + backward on the CPU, counted at the allocator (bench/memory_probe.py).
The cells are ones the coefficients were not fitted on. About two minutes and ~4.5 GB of memory."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sd15_unet():
    import memory_probe

    unet = memory_probe.build_unet("sd15", __import__("torch").float32)
    memory_probe.attach(unet, "sd15")
    return unet


@pytest.mark.parametrize(("resolution", "batch", "checkpointing"),
                         [(96, 1, False), (128, 2, False), (160, 1, True), (288, 1, True), (192, 3, False),
                          (80, 2, True)])
def test_sd15_full_width_step_peak_is_within_15_percent_of_the_estimate(sd15_unet, resolution, batch, checkpointing):
    import memory_probe
    from bench_memory import estimate

    measured = memory_probe.step_peak(sd15_unet, "sd15", resolution, batch, "fp32", checkpointing)["tensors"]
    est = estimate("sd15", "fp32", resolution, batch, checkpointing)
    assert est == pytest.approx(measured, rel=0.15), f"estimate {est / 2**20:.1f} MiB, measured {measured / 2**20:.1f} MiB"
