"""The fp16 loss scale on synthetic metric rows: the scaler's warm-up is quiet, a collapse after it and a scale
grown without bound are findings; the guard lets a long warm-up run to its end."""

from __future__ import annotations

import math

import pytest

import words
from trainer.doctor.detectors import (
    SCALE_DRIFT_HALVINGS,
    SCALE_HALVINGS,
    SCALE_HIGH,
    loss_scale_finding,
    loss_scale_growth_finding,
    metric_findings,
)
from trainer.doctor.guard import Guard
from trainer.doctor.kb import load_kb
from trainer.doctor.numerics import StepHealth
from trainer.run.events import StepRow


def rows_of(scales: list[tuple[float, bool]]) -> list[StepRow]:
    """Metric rows as the loop writes them: a skipped row carries the step it tried (the next one)."""
    rows, step = [], 0
    for scale, skipped in scales:
        rows.append(StepRow(step=step + 1, loss=0.1, grad_norm=math.inf if skipped else 0.5, lr=1e-4,
                            loss_scale=scale, skipped=skipped, nonfinite=None))
        step += 0 if skipped else 1
    return rows


def halvings(start: float, n: int) -> list[tuple[float, bool]]:
    """``n`` overflowing steps from ``start``, each halving the scale."""
    return [(start / 2**i, True) for i in range(n)]


# GradScaler's default start, halved six times down to a scale that fits (~1024 on SD), then settled
WARMUP = [*halvings(65536.0, 6), *[(1024.0, False)] * 30]


def test_the_scalers_warmup_halvings_raise_nothing():
    rows = rows_of(WARMUP)
    assert loss_scale_finding(rows) is None
    assert loss_scale_growth_finding(rows) is None
    # nor when applied steps come between the halvings, as the scaler meets larger gradients early on
    scales = [(65536.0, False), (65536.0, True), (32768.0, False), (32768.0, True), (16384.0, True),
              (8192.0, False), (8192.0, True), (4096.0, False), (4096.0, True), (2048.0, True),
              *[(1024.0, False)] * 30]  # fmt: skip
    assert loss_scale_finding(rows_of(scales)) is None


def test_a_short_run_still_in_its_warmup_raises_nothing():
    # 2**30 on the tiny model: eight overflowing steps, then a few applied ones and one more overflow
    scales = [*halvings(2.0**30, 6), (2.0**24, False), (2.0**24, False), (2.0**24, True), *[(2.0**23, False)] * 4]
    assert loss_scale_finding(rows_of(scales)) is None


def test_halvings_in_a_row_after_the_warmup_are_a_collapse():
    rows = rows_of([*WARMUP, *halvings(1024.0, SCALE_HALVINGS), *[(1024.0 / 2**SCALE_HALVINGS, False)] * 3])
    f = loss_scale_finding(rows)
    assert f is not None and f.signal == "loss_scale_collapse" and f.level == "warning"
    assert f.values["consecutive_halvings"] == SCALE_HALVINGS
    assert f.steps == [31]  # the step that kept overflowing
    assert "in a row" in words.say(f.message, "en") and "연속" in words.say(f.message, "ko")
    # one fewer is an overflowing batch or two, which GradScaler handles
    calmer = rows_of([*WARMUP, *halvings(1024.0, SCALE_HALVINGS - 1), *[(128.0, False)] * 3])
    assert loss_scale_finding(calmer) is None


def test_a_scale_that_keeps_falling_later_is_a_collapse():
    scales, scale = list(WARMUP), 1024.0
    for _ in range(SCALE_DRIFT_HALVINGS):  # one overflow every few steps, never recovering
        scales += [(scale, True), *[(scale / 2, False)] * 4]
        scale /= 2
    f = loss_scale_finding(rows_of(scales))
    assert f is not None and f.values["consecutive_halvings"] == 1
    assert f.values["fall_from_peak"] == 2**SCALE_DRIFT_HALVINGS
    assert "1/64" in words.say(f.message, "en") and "1/64" in words.say(f.message, "ko")


def test_a_scale_below_one_is_a_collapse_even_before_it_settled():
    f = loss_scale_finding(rows_of(halvings(8.0, 6)))
    assert f is not None and "below 1" in words.say(f.message, "en")
    assert f.steps == [1]


def test_a_scale_grown_to_2_24_is_reported_as_growth_not_collapse():
    growth = [(1024.0 * 2**i, False) for i in range(1, 15)]  # doubling every growth_interval clean steps
    rows = rows_of([*WARMUP, *growth])
    f = loss_scale_growth_finding(rows)
    assert f is not None and f.signal == "loss_scale_growing" and f.level == "info"
    assert f.values["peak_scale"] == SCALE_HIGH and f.values["doublings"] == 14
    assert f.values["overflow_above"] == pytest.approx(65504 / 2**24)
    assert "16,777,216" in words.say(f.message, "en") and "2^24" in words.say(f.message, "ko")
    assert loss_scale_finding(rows) is None
    # one doubling short of it is the scaler doing its job
    assert loss_scale_growth_finding(rows_of([*WARMUP, *growth[:-1]])) is None


def test_an_initial_scale_set_high_is_not_growth():
    rows = rows_of([*halvings(2.0**32, 8), *[(2.0**24, False)] * 30])
    assert loss_scale_growth_finding(rows) is None and loss_scale_finding(rows) is None


def test_the_loss_scale_findings_run_with_the_others_and_name_kb_signals():
    from trainer.config.schema import Config

    rows = rows_of([*WARMUP, *[(1024.0 * 2**i, False) for i in range(1, 15)]])
    found = {f.signal for f in metric_findings(rows, {}, Config())}
    assert "loss_scale_growing" in found and "loss_scale_collapse" not in found
    kb = load_kb()
    fp16 = {"train": {"precision": "fp16"}}
    assert kb.rank_causes({"loss_scale_growing": 0.3}, fp16)[0].cause.id == "loss_scale_unchecked"
    rx = [p.id for p in kb.prescriptions_for("loss_scale_unchecked")]
    assert rx[0] == "longer_growth_interval"


def overflow(scale: float) -> StepHealth:
    return StepHealth(0.1, math.inf, math.inf, scale, True, True, 1.0, None)


def clean(scale: float) -> StepHealth:
    return StepHealth(0.1, 0.5, 0.5, scale, True, True, 1.0, None)


def test_the_guard_lets_a_long_warmup_halve_until_a_step_works():
    guard = Guard("stop", "fp16")
    limit = 4 * guard.max_consecutive_skips
    for i in range(limit + 5):  # a 2**40 start: more overflows in a row than the limit, all the scaler's
        d = guard.decide(overflow(2.0**40 / 2**i))
        assert d.skipped and d.nonfinite is None and d.action == "continue", i
    assert guard.decide(clean(2.0**15)).apply
    # once a step has worked, a long run of overflows is a gradient failure even above the floor
    decisions = [guard.decide(overflow(2.0**40 / 2**i)) for i in range(limit)]
    assert all(d.nonfinite is None for d in decisions[:-1])
    assert decisions[-1].nonfinite == "grad" and decisions[-1].action == "stop"
    # a warm-up that reaches the floor is a collapse, not a search
    d = Guard("stop", "fp16").decide(overflow(0.5))
    assert d.nonfinite == "grad" and d.action == "stop"
