"""The loss-trend warning: a diffusion loss varies about as much as its mean from step to step, so "the last third
is 1.25x the first" is chance on a short run; the warning needs the rise to stand out of that noise as well."""

from __future__ import annotations

import random

from trainer.doctor.detectors import LOSS_UP_RATIO, loss_trend_finding
from trainer.run.events import StepRow

WARMUP = 5


def _rows(losses: list[float]) -> list[StepRow]:
    return [StepRow(step=i + 1, loss=v, grad_norm=0.5, skipped=False) for i, v in enumerate(losses)]


def _noise(rng: random.Random, mean: float) -> float:
    # as the demo runs' loss: a standard deviation about the mean's (0.9-1.1 there), skewed (a few far-out steps)
    return mean * rng.expovariate(1.0) * rng.choice([0.3, 1.0, 1.7])


def _warned(losses: list[float], every: int = 25) -> int | None:
    """The first step at which the live check (it reads the rows so far) would warn, or None."""
    for n in range(40 + WARMUP, len(losses) + 1, every):
        if loss_trend_finding(_rows(losses[:n]), WARMUP) is not None:
            return n
    return None


def test_a_flat_noisy_loss_does_not_warn_that_it_trends_up():
    runs = [[_noise(rng, 0.03) for _ in range(400)] for rng in (random.Random(seed) for seed in range(200))]
    warned = [r for r in runs if _warned(r) is not None]
    assert len(warned) <= 4, len(warned)  # 1 in 50 at most (the ratio alone warned on most of them)
    first_third_apart = 0
    for r in runs:  # the ratio alone would have: the thirds of a short run are often that far apart by chance
        third = (45 - WARMUP) // 3
        early, late = r[WARMUP:WARMUP + third], r[45 - third:45]
        first_third_apart += sum(late) >= LOSS_UP_RATIO * sum(early)
    assert first_third_apart > 40


def test_a_loss_that_keeps_rising_is_found():
    found = []
    for seed in range(50):
        rng = random.Random(seed)
        found.append(_warned([_noise(rng, 0.03 * (1 + 3 * i / 400)) for i in range(400)]))
    assert sum(f is not None for f in found) >= 45  # a loss that quadruples is found, on the way up
    assert loss_trend_finding(_rows([0.03] * 30 + [0.09] * 30), WARMUP) is not None  # no noise at all: found too


def test_the_replay_script_reads_runs_as_the_live_checks_would(tmp_path):
    """``scripts/replay_detectors.py``: a run folder's rows cut at each live reading, today's detectors on them."""
    import json
    import sys
    from pathlib import Path

    from trainer.config.schema import Config, save_config

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    from replay_detectors import replay, run_folders

    rng = random.Random(0)
    for name, rise in (("flat", 0.0), ("rising", 3.0)):
        run = tmp_path / name / "lora" / "20260101-000000"
        run.mkdir(parents=True)
        save_config(Config(), run / "config.toml")
        losses = [_noise(rng, 0.03 * (1 + rise * i / 400)) for i in range(400)]
        (run / "metrics.jsonl").write_text("".join(
            json.dumps({"type": "step", "step": i + 1, "loss": v, "grad_norm": 0.5, "skipped": False}) + "\n"
            for i, v in enumerate(losses)), encoding="utf-8")
    flat, rising = run_folders([tmp_path])
    assert replay(flat) == []
    ((step, signal, level, said),) = replay(rising)
    assert signal == "loss_trending_up" and level == "warning" and step % Config().guard.detect_every == 0
    assert said.startswith("the loss is trending up")
