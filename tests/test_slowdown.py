"""The slowdown alarm: a step time that jumps several-fold and stays (VRAM spilling into system memory)."""

from __future__ import annotations

import random

import pytest

import words
from tests.helpers import tiny_config, write_toy_dataset
from trainer.doctor.detectors import metric_findings, slowdown_finding
from trainer.doctor.kb import load_kb


def _rows(times, **extra):
    return [{"step": i + 1, "loss": 0.1, "grad_norm": 0.5, "sec_per_step": t, "skipped": False, **extra}
            for i, t in enumerate(times)]


def _noisy(n, mean, seed=0):
    rng = random.Random(seed)
    return [mean * rng.uniform(0.8, 1.25) for _ in range(n)]


def test_fires_on_a_recorded_spill_with_the_device_memory_beside_it():
    times = [2.0, 1.2, *_noisy(40, 0.5), *_noisy(30, 4.0, seed=1)]  # 0.5 s/step, then 4 s/step from step 43 on
    rows = _rows(times, device_mem_reserved=11.5 * 2**30, device_mem_free=0.1 * 2**30)
    f = slowdown_finding(rows)
    assert f is not None and f.signal == "step_slowdown" and f.level == "warning"
    assert f.values["from_step"] == 43 and 6 < f.values["factor"] < 10
    assert "11.50 GiB" in words.say(f.message, "en") and "0.10 GiB left free" in words.say(f.message, "en") and "GiB" in words.say(f.message, "ko")
    assert "step_slowdown" in [x.signal for x in metric_findings(rows, {}, tiny_config(".", "."))]


def test_its_prescription_names_the_cause_and_one_memory_change():
    kb = load_kb()
    top = kb.rank_causes({"step_slowdown": 0.6})[0].cause
    assert top.id == "vram_spill" and "shared system memory" in top.text("explanation")
    first = kb.prescriptions_for(top.id)[0]
    assert first.change.key == "train.gradient_checkpointing"
    assert "Sysmem Fallback" in kb.prescription("sysmem_fallback_off").text("detail")


@pytest.mark.parametrize("times", [
    _noisy(80, 0.5),  # healthy, ±25 % noise
    [3.0, 2.5, *_noisy(80, 0.5)],  # slow first steps (allocator growth, kernel choice)
    [*_noisy(30, 0.5), 6.0, *_noisy(30, 0.5), 5.0, *_noisy(20, 0.5)],  # a save or a sample now and then
    [*_noisy(40, 0.5), *_noisy(3, 3.0), *_noisy(40, 0.5)],  # a short stall that recovers
    [*_noisy(40, 0.5), *_noisy(40, 1.0)],  # twice as slow (another process on the GPU), not a spill
    _noisy(8, 0.5),  # too short to judge
])
def test_quiet_on_healthy_rows(times):
    assert slowdown_finding(_rows(times)) is None


@pytest.mark.slow
def test_quiet_on_a_real_tiny_training(tmp_path):
    from trainer.io import read_jsonl
    from trainer.train.loop import run_training

    cfg = tiny_config(write_toy_dataset(tmp_path / "d", n=4), tmp_path / "o", {"train.max_steps": 16, "train.batch_size": 1})
    result = run_training(cfg, None)
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    assert len(rows) == 16 and all("device_mem_reserved" in r for r in rows)
    assert slowdown_finding(rows) is None
