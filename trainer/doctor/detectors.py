"""Detectors short of NaN: pure functions over a run's metric rows, events and plan (the sample pictures' findings
are :func:`trainer.doctor.pictures.sample_findings`), each registered with :func:`trainer.doctor.registry.detector`.

Each finding names a knowledge-base signal and carries its evidence (steps and values), so the same code
serves the live run (findings as events while it trains) and :mod:`trainer.doctor.diagnose` afterwards.
"""

from __future__ import annotations

import itertools
import math
import statistics
from typing import Any, cast

from trainer.doctor.guard import MIN_LOSS_SCALE
from trainer.doctor.registry import Finding, RunInputs, detector, detectors
from trainer.message import msg
from trainer.run.events import ABSENT, Alert, NonFiniteAlert, RunEvent, StepRow, given, present
from trainer.run.events import value as _f

__all__ = ["Finding"]  # the detectors' finding, kept importable from here

# A grad-norm this many times the 95th percentile of the steps before it is a spike. A diffusion LoRA's gradient
# norm is heavy-tailed (each step draws its own timesteps): on healthy demo runs of the character's pictures in a
# plain folder (scripts/doctor_calibration.py: 0.1x and 1x the lr, three seeds) single steps reached 33x the
# running median but at most 7.8x its 95th percentile (11.8x with no convolution LoRA); 10x the lr stayed under 5x.
SPIKE_FACTOR = 20.0
SPIKE_QUANTILE = 0.95
SPIKE_WINDOW = 50
CLIP_SATURATED_SHARE = 0.8  # most steps clipped: clipping sets the step size, not the lr
LOSS_UP_RATIO = 1.25  # late loss this much above the early loss (after warmup),
# and by this many standard errors of the difference (Welch): a diffusion loss varies about as much as its mean from
# step to step (its timestep and noise are drawn anew), so the first thirds of a short run differ by 1.25x by chance.
# The ratio alone warned on healthy demo runs at steps 45-95 (t 0.6-1.4) and on 141 of 200 simulated flat runs of
# such noise (tests/test_loss_trend.py); with t >= 3 on 1, while a loss that quadruples over 400 steps is found in
# 50 of 50 runs (by step 245 at the median).
LOSS_UP_T = 3.0
# The LoRA's weight norm grew by this share of its start. Measured on the demo character in a plain folder: healthy
# runs grew 0.05-0.15 (0.1x the lr) and 0.6-0.7 (1x), one without convolution LoRA 2.0, 10x the lr 3.7.
WEIGHT_GROWTH_RATIO = 2.5
STALLED_UPDATE_RATIO = 1e-6  # ‖Δw over 10 steps‖ / ‖w‖ below this: nothing is being learned
EMA_DRIFT_LIMIT = 0.5
# The fp16 loss scale (torch GradScaler: an overflow skips the step and halves the scale; growth_interval clean
# steps double it). Its first halvings are the warm-up, searching down from the initial scale: normal (the seed).
SCALE_SETTLE_ROWS = 10  # the warm-up ends where the scale then holds (no halving) for this many steps in a row,
SCALE_WARMUP_MAX_ROWS = 100  # or after this many steps at the latest
SCALE_HALVINGS = 4  # after the warm-up: halved on this many steps in a row (a 16× fall within a few steps)
SCALE_DRIFT_HALVINGS = 6  # after the warm-up: this many halvings below the highest scale a step was applied at
SCALE_HIGH = 2.0**24  # grown to this: GradScaler's default start, 2**16, doubled 8 times without an overflow
FP16_MAX = 65504.0
MIN_ROWS = 20  # trends need this many steps
# A step time that jumps several-fold and stays there: the signature of device memory spilling into shared system
# memory (the NVIDIA driver's "sysmem fallback" on Windows), or of swapping. A one-off slow step (a save, a
# sample, the first steps' kernel selection) is not it.
SLOW_FACTOR = 3.0  # a step this many times the running median before it
SLOW_STAY_ROWS = 5  # the median of this many steps from there on is that slow too,
SLOW_STAY_SHARE = 0.8  # and so are this share of all the steps after it
SLOW_WARMUP_ROWS = 2  # the first steps (allocator growth, kernel selection) are left out of the baseline
SLOW_BASE_ROWS = 5  # steps the baseline needs before a slowdown can be judged
# Other programs crowded the run out: their share of the machine's CPU time (all cores; the rows' cpu_others) rose
# by this much over the slow steps, and to at least twice what it was. On 2 cores one busy program is 0.25-0.5 of
# it; a quiet machine's background stays under 0.02.
CONTENTION_RISE = 0.05
# Other programs that already held this share of it before a slowdown and still do: two programs busy on the same
# cores can slow each other far more than their shares show (two torch processes on 2 cores: threads waiting on
# each other; the demo runs beside another measured 50/50 all along and slowed 5.6x and 21.9x). Named as contention,
# not as the machine itself slowing.
CONTENTION_SHARED = 0.2
NONFINITE_WEIGHT = 5.0  # the diagnosis's weight: a non-finite failure outranks any number of softer findings


def _applied(rows: list[StepRow]) -> list[StepRow]:
    return [r for r in rows if not r.skipped]


NONFINITE_WHAT = ("loss", "grad", "param", "ema")  # what a guard alert can name first (finding.what.*)


@detector("nonfinite_*", "broken", "strong", group="guard", reads=("events",), weight=NONFINITE_WEIGHT)
def nonfinite_findings(events: list[RunEvent]) -> list[Finding]:
    out = []
    seen = set()
    for ev in events:
        if isinstance(ev, NonFiniteAlert) and ev.kind not in seen:
            kind = ev.kind
            seen.add(kind)
            what = kind.removeprefix("nonfinite_")
            named = msg(f"finding.what.{what}") if what in NONFINITE_WHAT else what
            where = ev.module or "?"
            step = given(ev.broke_at_step, given(ev.step))
            out.append(Finding(
                kind, "error",
                msg("finding.nonfinite", what=named, step=step, where=where, precision=given(ev.precision),
                    lr=given(ev.lr)),
                [int(step)] if step is not None else [],
                {"module": given(ev.module), "files": given(ev.files), "lr": given(ev.lr),
                 "loss_scale": given(ev.loss_scale), "precision": given(ev.precision), "loss": given(ev.loss),
                 "grad_norm": given(ev.grad_norm)},
            ))
    return out


def _scale(v: float) -> str:
    return f"{v:,.0f}" if v >= 1 and v.is_integer() else f"{v:g}"


def _loss_scales(rows: list[StepRow]) -> list[tuple[int, float, bool]]:
    """(step, loss scale, applied) of every row that has a scale (fp16), in order."""
    out = []
    for r in rows:
        v = _f(r.loss_scale)
        if v is not None and math.isfinite(v):
            out.append((r.step, v, not r.skipped))
    return out


def scale_warmup_end(scales: list[tuple[int, float, bool]]) -> int:
    """Index of the first row after the scaler's warm-up: where the scale starts to hold for
    ``SCALE_SETTLE_ROWS`` rows in a row, or ``SCALE_WARMUP_MAX_ROWS``; ``len(scales)`` while it has done neither."""
    held = 0
    for i in range(len(scales) - 1):
        if i >= SCALE_WARMUP_MAX_ROWS:
            return i
        held = held + 1 if scales[i + 1][1] >= scales[i][1] else 0
        if held >= SCALE_SETTLE_ROWS:
            return i + 1 - SCALE_SETTLE_ROWS
    return len(scales)


@detector("loss_scale_collapse")
def loss_scale_finding(rows: list[StepRow]) -> Finding | None:
    """The fp16 loss scale collapsing: below 1 at any time, or after the warm-up halved on ``SCALE_HALVINGS``
    steps in a row or ``SCALE_DRIFT_HALVINGS`` times below the highest scale a step was applied at. The
    warm-up's halvings (65536 → ~1024 with skipped steps on a real model) and the odd overflow after it
    (the scaler probing upward again) are how GradScaler works, not a finding."""
    scales = _loss_scales(rows)
    if len(scales) < 2:
        return None
    low = [(s, v) for s, v, _ in scales if v < MIN_LOSS_SCALE]
    warm = scale_warmup_end(scales)
    run = worst = 0
    peak, fall, fell_at = None, 1.0, []
    for i in range(warm, len(scales)):
        step, v, applied = scales[i]
        if i > warm and v < scales[i - 1][1]:
            run += 1
            fell_at.append(step)
        elif i > warm:
            run = 0
        worst = max(worst, run)
        if applied:
            peak = v if peak is None else max(peak, v)
        if peak is not None:
            fall = max(fall, peak / v)
    final = scales[-1][1]
    if not low and worst < SCALE_HALVINGS and fall < 2.0**SCALE_DRIFT_HALVINGS:
        return None
    if low:
        (step, v) = low[0]
        how = msg("finding.scale_below", limit=MIN_LOSS_SCALE, value=v, step=step)
    elif worst >= SCALE_HALVINGS:
        how = msg("finding.scale_fell_in_a_row", n=worst)
    else:
        assert peak is not None  # fall only grows once a step was applied at a peak
        how = msg("finding.scale_fell_from_peak", fall=fall, peak=_scale(peak))
    return Finding(
        "loss_scale_collapse", "warning", msg("finding.loss_scale_collapse", how=how, final=_scale(final)),
        sorted({s for s, _ in low})[:5] or sorted(set(fell_at))[:10],
        {"consecutive_halvings": worst, "fall_from_peak": fall, "final_scale": final, "warmup_rows": warm},
    )


@detector("loss_scale_growing")
def loss_scale_growth_finding(rows: list[StepRow]) -> Finding | None:
    """The fp16 loss scale grown to ``SCALE_HIGH`` or more. GradScaler only grows after growth_interval steps
    without an overflow, so a scale up there means the gradients stayed tiny for a long time (is the LoRA
    still learning?), and any fp16 gradient above 65504 / scale overflows: the next larger one costs skipped
    steps while the scale falls back (the seed: a scaler grown too large ends in overflow). Reached by growth
    only; an initial scale set that high is the warm-up's business."""
    scales = _loss_scales(rows)
    grown = [(s, v) for (_, a, _), (s, v, _) in itertools.pairwise(scales) if v > a]
    high = [(s, v) for s, v in grown if v >= SCALE_HIGH]
    if not high:
        return None
    step, peak = max(high, key=lambda sv: sv[1])
    limit = FP16_MAX / peak
    return Finding(
        "loss_scale_growing", "info",
        msg("finding.loss_scale_growing", peak=_scale(peak), power=math.log2(peak), step=step, limit=limit),
        sorted({s for s, _ in high})[:10], {"peak_scale": peak, "doublings": len(grown), "overflow_above": limit},
    )


@detector("grad_spike", "over", "weak")
def grad_spike_finding(rows: list[StepRow]) -> Finding | None:
    norms = [(r.step, _f(r.grad_norm)) for r in _applied(rows)]
    spikes = []
    for i in range(10, len(norms)):
        window = sorted(v for _, v in norms[max(0, i - SPIKE_WINDOW) : i] if v is not None and math.isfinite(v))
        step, v = norms[i]
        if window and v is not None and math.isfinite(v):
            high = window[min(len(window) - 1, int(SPIKE_QUANTILE * len(window)))]
            if high > 0 and v > SPIKE_FACTOR * high:
                spikes.append((step, v, high))
    if not spikes:
        return None
    return Finding(
        "grad_spike", "warning",
        msg("finding.grad_spike", n=len(spikes), factor=SPIKE_FACTOR, step=spikes[0][0]),
        [s for s, _, _ in spikes[:10]], {"spikes": [[s, v, m] for s, v, m in spikes[:10]]},
    )


@detector("clip_saturated", "over", "weak", reads=("rows", "max_grad_norm"))
def clip_saturation_finding(rows: list[StepRow], max_norm: float) -> Finding | None:
    rows = _applied(rows)
    if max_norm <= 0 or len(rows) < MIN_ROWS:
        return None
    clipped = [r.step for r in rows if (_f(r.grad_norm) or 0) > max_norm]
    share = len(clipped) / len(rows)
    if share < CLIP_SATURATED_SHARE:
        return None
    return Finding(
        "clip_saturated", "warning",
        msg("finding.clip_saturated", share=share, max_norm=max_norm),
        clipped[:10], {"share": share, "max_grad_norm": max_norm},
    )


@detector("loss_trending_up", "over", "weak", reads=("rows", "warmup_steps"))
def loss_trend_finding(rows: list[StepRow], warmup: int) -> Finding | None:
    measured = [(r.step, _f(r.loss)) for r in _applied(rows) if r.step > warmup]
    losses = [(s, v) for s, v in measured if v is not None and math.isfinite(v)]
    if len(losses) < MIN_ROWS * 2:
        return None
    third = len(losses) // 3
    first, last = [v for _, v in losses[:third]], [v for _, v in losses[-third:]]
    early, late = statistics.fmean(first), statistics.fmean(last)
    spread = math.sqrt(statistics.variance(first) / third + statistics.variance(last) / third)
    t = (late - early) / spread if spread > 0 else math.inf
    if early <= 0 or late < LOSS_UP_RATIO * early or t < LOSS_UP_T:
        return None
    return Finding(
        "loss_trending_up", "warning",
        msg("finding.loss_trending_up", late=late, early=early),
        [losses[0][0], losses[-1][0]], {"early_mean": early, "late_mean": late, "t": t if math.isfinite(t) else None},
    )


@detector("weight_norm_growth", "over", "weak")
def weight_growth_finding(rows: list[StepRow]) -> Finding | None:
    measured = [(r.step, _f(r.weight_norm)) for r in _applied(rows) if present(r.weight_norm)]
    norms = [(s, v) for s, v in measured if v is not None and math.isfinite(v) and v > 0]
    if len(norms) < 2:
        return None
    (s0, first), (s1, last) = norms[0], norms[-1]
    growth = last / first - 1.0
    if growth < WEIGHT_GROWTH_RATIO:
        return None
    return Finding(
        "weight_norm_growth", "warning",
        msg("finding.weight_norm_growth", growth=growth, s0=s0, first=first, s1=s1, last=last),
        [s0, s1], {"first": first, "last": last, "growth": growth},
    )


@detector("learning_stalled", "under", "moderate")
def stalled_finding(rows: list[StepRow]) -> Finding | None:
    measured = [(r.step, _f(r.update_ratio)) for r in _applied(rows) if present(r.update_ratio)]
    ratios = [(s, v) for s, v in measured if v is not None]
    if len(ratios) < 3:
        return None
    late = ratios[len(ratios) // 2 :]
    if max(v for _, v in late) >= STALLED_UPDATE_RATIO:
        return None
    return Finding(
        "learning_stalled", "warning",
        msg("finding.learning_stalled", ratio=max(v for _, v in late)),
        [s for s, _ in late], {"update_ratios": late},
    )


@detector("ema_drift")
def ema_drift_finding(rows: list[StepRow]) -> Finding | None:
    drifts = [(r.step, _f(r.ema_drift)) for r in rows if present(r.ema_drift)]
    bad = [(s, v) for s, v in drifts if v is not None and v > EMA_DRIFT_LIMIT]
    if not bad:
        return None
    return Finding(
        "ema_drift", "warning",
        msg("finding.ema_drift", drift=bad[-1][1], step=bad[-1][0]),
        [s for s, _ in bad[:10]], {"drift": bad[-1][1]},
    )


@detector(("cpu_contention", "step_slowdown", "step_slowdown_cpu"))
def slowdown_finding(rows: list[StepRow]) -> Finding | None:
    """The step time jumping ``SLOW_FACTOR``× above its running median and staying there, named by what the rows
    say beside it: other programs' CPU share rising with it (``cpu_contention``, on any device); else on CUDA
    the device memory in use (``step_slowdown``, memory spilling out of the GPU); else on a run that had no GPU
    a slowdown of the machine itself (``step_slowdown_cpu``: never a GPU's memory)."""
    times = [(r, v) for r in rows if (v := _f(r.sec_per_step)) is not None and math.isfinite(v) and v > 0]
    times = times[SLOW_WARMUP_ROWS:]
    for i in range(SLOW_BASE_ROWS, len(times) - SLOW_STAY_ROWS + 1):
        before_rows = times[max(0, i - SPIKE_WINDOW) : i]
        base = statistics.median(v for _, v in before_rows)
        if times[i][1] < SLOW_FACTOR * base:
            continue
        after = [v for _, v in times[i:]]
        if statistics.median(after[:SLOW_STAY_ROWS]) < SLOW_FACTOR * base:
            continue
        share = sum(v >= SLOW_FACTOR * base for v in after) / len(after)
        if share < SLOW_STAY_SHARE:
            continue
        row, slow = times[i][0], statistics.median(after)
        values: dict[str, Any] = {"before_sec": base, "after_sec": slow, "factor": slow / base,
                                  "from_step": row.step, "slow_share": share}
        steps = [r.step for r, _ in times[i : i + 10]]
        said = {"factor": slow / base, "step": row.step, "before": base, "after": slow}
        cpu = _cpu_shift([r for r, _ in before_rows], [r for r, _ in times[i:]])
        if cpu is not None:
            values.update(cpu)
            if cpu["others_after"] >= max(cpu["others_before"] + CONTENTION_RISE, 2 * cpu["others_before"]):
                return Finding("cpu_contention", "warning", msg(
                    "finding.cpu_contention", **said, others=cpu["others_after"], others_before=cpu["others_before"],
                    own=cpu["self_after"], own_before=cpu["self_before"]), steps, values)
        reserved, free = _f(row.device_mem_reserved), _f(row.device_mem_free)
        if reserved is not None:
            values.update(device_mem_reserved=reserved, device_mem_free=free)
            gib = 2.0**30
            left = msg("finding.slowdown_free", free=free / gib) if free is not None else ""
            memory = msg("finding.slowdown_memory", reserved=reserved / gib, free=left)
            return Finding("step_slowdown", "warning", msg("finding.step_slowdown", **said, memory=memory), steps, values)
        if row.device_mem_reserved is not ABSENT:  # measured, and none: the run had no GPU whose memory could spill
            if cpu is not None and min(cpu["others_before"], cpu["others_after"]) >= CONTENTION_SHARED:
                return Finding("cpu_contention", "warning", msg(
                    "finding.cpu_shared", **said, others=cpu["others_after"], others_before=cpu["others_before"]),
                    steps, values)
            return Finding("step_slowdown_cpu", "warning", msg("finding.step_slowdown_cpu", **said), steps, values)
        return Finding("step_slowdown", "warning", msg("finding.step_slowdown", **said, memory=""), steps, values)
    return None


def _cpu_shift(before: list[StepRow], after: list[StepRow]) -> dict[str, float] | None:
    """The median CPU shares (of the whole machine) of this run and of every other process, before the slowdown
    and after it; None when the rows did not measure them (runs from before they were measured)."""
    def medians(values: list[Any]) -> float | None:
        finite = [v for x in values if (v := _f(x)) is not None and math.isfinite(v)]
        return statistics.median(finite) if finite else None

    shares = {f"{who}_{when}": medians([r.cpu_self if who == "self" else r.cpu_others for r in rows])
              for when, rows in (("before", before), ("after", after)) for who in ("self", "others")}
    if any(v is None for v in shares.values()):
        return None
    return cast(dict[str, float], shares)


@detector("distilled_base", group="base", reads=("events",))
def distilled_base_findings(events: list[RunEvent]) -> list[Finding]:
    """The base model found to be a distilled one (the loop's ``distilled_base`` alert)."""
    out = []
    for ev in events:
        if isinstance(ev, Alert) and ev.kind == "distilled_base":
            message = given(ev.message)  # worded in both languages; a run from before codes has English alone
            out.append(Finding("distilled_base", "warning",
                               message if isinstance(message, dict) else {"en": str(message), "ko": str(message)}))
    return out


def metric_findings(rows: list[StepRow] | list[dict], plan: dict, config) -> list[Finding]:
    """The findings of the registry's "numbers" group on ``rows`` (typed, or as ``metrics.jsonl`` holds them) and
    ``plan`` (even an empty plan)."""
    run = RunInputs(config, plan, [r if isinstance(r, StepRow) else StepRow.parse(r) for r in rows])
    return [f for d in detectors("numbers") for f in d.run(run)]
