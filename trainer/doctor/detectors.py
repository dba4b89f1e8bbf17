"""Detectors short of NaN: pure functions over a run's metric rows, events and plan (the sample pictures' findings
are :func:`trainer.doctor.pictures.sample_findings`).

Each finding names a knowledge-base signal and carries its evidence (steps and values), so the same code
serves the live run (findings as events while it trains) and :mod:`trainer.doctor.diagnose` afterwards.
"""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from trainer.doctor.guard import MIN_LOSS_SCALE
from trainer.run.events import as_float

SPIKE_FACTOR = 10.0  # a grad-norm this many times the running median is a spike
SPIKE_WINDOW = 50
CLIP_SATURATED_SHARE = 0.8  # most steps clipped: clipping sets the step size, not the lr
LOSS_UP_RATIO = 1.25  # late loss this much above the early loss (after warmup)
WEIGHT_GROWTH_RATIO = 0.5  # ‖B·A‖-like growth: the LoRA's weight norm grew by this share of its start
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


@dataclass
class Finding:
    signal: str
    level: str  # info | warning | error
    message: dict[str, str]
    steps: list[int] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["id"] = self.signal
        return d


def _f(row: dict, key: str) -> float | None:
    return as_float(row.get(key))


def _applied(rows: list[dict]) -> list[dict]:
    return [r for r in rows if not r.get("skipped")]


def nonfinite_findings(events: list[dict]) -> list[Finding]:
    out = []
    seen = set()
    for ev in events:
        kind = ev.get("kind", "")
        if ev.get("type") == "alert" and kind.startswith("nonfinite_") and kind not in seen:
            seen.add(kind)
            what = kind.removeprefix("nonfinite_")
            where = ev.get("module") or "?"
            step = ev.get("broke_at_step", ev.get("step"))
            out.append(Finding(
                kind, "error",
                {"en": f"the {what} became non-finite first, at step {step} (module {where}, "
                       f"precision {ev.get('precision')}, lr {ev.get('lr')})",
                 "ko": f"{step}스텝에서 {what}이(가) 가장 먼저 nan/inf가 됨 (모듈 {where}, 정밀도 {ev.get('precision')}, "
                       f"학습률 {ev.get('lr')})"},
                [int(step)] if step is not None else [],
                {k: ev.get(k) for k in ("module", "files", "lr", "loss_scale", "precision", "loss", "grad_norm")},
            ))
    return out


def _scale(v: float) -> str:
    return f"{v:,.0f}" if v >= 1 and v.is_integer() else f"{v:g}"


def _loss_scales(rows: list[dict]) -> list[tuple[int, float, bool]]:
    """(step, loss scale, applied) of every row that has a scale (fp16), in order."""
    out = []
    for r in rows:
        v = _f(r, "loss_scale")
        if v is not None and math.isfinite(v):
            out.append((r["step"], v, not r.get("skipped")))
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


def loss_scale_finding(rows: list[dict]) -> Finding | None:
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
        en, ko = f"fell below {MIN_LOSS_SCALE:g} ({v:g} at step {step})", f"{MIN_LOSS_SCALE:g} 아래로 떨어짐 ({step}스텝에 {v:g})"
    elif worst >= SCALE_HALVINGS:
        en, ko = f"fell on {worst} steps in a row after its warm-up", f"워밍업 뒤 {worst}스텝 연속으로 내려감"
    else:
        assert peak is not None  # fall only grows once a step was applied at a peak
        en, ko = (f"fell to 1/{fall:g} of the {_scale(peak)} it had trained at after its warm-up",
                  f"워밍업 뒤 학습하던 값 {_scale(peak)}의 1/{fall:g}로 내려감")
    return Finding(
        "loss_scale_collapse", "warning",
        {"en": f"the fp16 loss scale {en} (now {_scale(final)}): overflow keeps recurring",
         "ko": f"fp16 손실 스케일이 {ko} (현재 {_scale(final)}): 오버플로가 반복됨"},
        sorted({s for s, _ in low})[:5] or sorted(set(fell_at))[:10],
        {"consecutive_halvings": worst, "fall_from_peak": fall, "final_scale": final, "warmup_rows": warm},
    )


def loss_scale_growth_finding(rows: list[dict]) -> Finding | None:
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
        {"en": f"the fp16 loss scale kept growing, to {_scale(peak)} (2^{math.log2(peak):.0f}) at step {step}: the "
               f"gradients have been tiny for a long time, and any fp16 gradient above {limit:.2g} now overflows",
         "ko": f"fp16 손실 스케일이 계속 커져 {step}스텝에 {_scale(peak)}(2^{math.log2(peak):.0f})까지 올라감: 그라디언트가 오래 "
               f"아주 작았다는 뜻이고, 이제는 {limit:.2g}보다 큰 fp16 그라디언트는 모두 넘침(overflow)"},
        sorted({s for s, _ in high})[:10], {"peak_scale": peak, "doublings": len(grown), "overflow_above": limit},
    )


def grad_spike_finding(rows: list[dict]) -> Finding | None:
    norms = [(r["step"], _f(r, "grad_norm")) for r in _applied(rows)]
    spikes = []
    for i in range(10, len(norms)):
        window = [v for _, v in norms[max(0, i - SPIKE_WINDOW) : i] if v is not None and math.isfinite(v)]
        step, v = norms[i]
        if window and v is not None and math.isfinite(v):
            med = statistics.median(window)
            if med > 0 and v > SPIKE_FACTOR * med:
                spikes.append((step, v, med))
    if not spikes:
        return None
    return Finding(
        "grad_spike", "warning",
        {"en": f"{len(spikes)} gradient-norm spike(s) over {SPIKE_FACTOR:g}× the running median, first at step {spikes[0][0]}",
         "ko": f"그라디언트 norm이 최근 중앙값의 {SPIKE_FACTOR:g}배를 넘은 스텝 {len(spikes)}개, 처음은 {spikes[0][0]}스텝"},
        [s for s, _, _ in spikes[:10]], {"spikes": [[s, v, m] for s, v, m in spikes[:10]]},
    )


def clip_saturation_finding(rows: list[dict], max_norm: float) -> Finding | None:
    rows = _applied(rows)
    if max_norm <= 0 or len(rows) < MIN_ROWS:
        return None
    clipped = [r["step"] for r in rows if (_f(r, "grad_norm") or 0) > max_norm]
    share = len(clipped) / len(rows)
    if share < CLIP_SATURATED_SHARE:
        return None
    return Finding(
        "clip_saturated", "warning",
        {"en": f"{share:.0%} of steps were clipped at {max_norm:g}: clipping, not the lr, sets the step size",
         "ko": f"스텝의 {share:.0%}가 {max_norm:g}에서 잘림: 학습률이 아니라 클리핑이 보폭을 정하고 있음"},
        clipped[:10], {"share": share, "max_grad_norm": max_norm},
    )


def loss_trend_finding(rows: list[dict], warmup: int) -> Finding | None:
    measured = [(r["step"], _f(r, "loss")) for r in _applied(rows) if r["step"] > warmup]
    losses = [(s, v) for s, v in measured if v is not None and math.isfinite(v)]
    if len(losses) < MIN_ROWS * 2:
        return None
    third = len(losses) // 3
    early = statistics.fmean(v for _, v in losses[:third])
    late = statistics.fmean(v for _, v in losses[-third:])
    if early <= 0 or late < LOSS_UP_RATIO * early:
        return None
    return Finding(
        "loss_trending_up", "warning",
        {"en": f"the loss is trending up: late mean {late:.4g} vs early {early:.4g}",
         "ko": f"손실이 오르는 추세: 후반 평균 {late:.4g}, 초반 {early:.4g}"},
        [losses[0][0], losses[-1][0]], {"early_mean": early, "late_mean": late},
    )


def weight_growth_finding(rows: list[dict]) -> Finding | None:
    measured = [(r["step"], _f(r, "weight_norm")) for r in _applied(rows) if r.get("weight_norm") is not None]
    norms = [(s, v) for s, v in measured if v is not None and math.isfinite(v) and v > 0]
    if len(norms) < 2:
        return None
    (s0, first), (s1, last) = norms[0], norms[-1]
    growth = last / first - 1.0
    if growth < WEIGHT_GROWTH_RATIO:
        return None
    return Finding(
        "weight_norm_growth", "warning",
        {"en": f"the LoRA weights' norm grew {growth:.0%} (step {s0}: {first:.4g} → step {s1}: {last:.4g}); "
               "the seeds' 'burnt colours, rough lines' over-training",
         "ko": f"LoRA 가중치 norm이 {growth:.0%} 커짐 ({s0}스텝 {first:.4g} → {s1}스텝 {last:.4g}); "
               "색이 타고 선이 거칠어지는 과적합 신호"},
        [s0, s1], {"first": first, "last": last, "growth": growth},
    )


def dose_finding(plan: dict) -> Finding | None:
    zone = plan.get("dose_zone")
    if zone not in ("under", "over"):
        return None
    dose, lo, hi = plan["dose"], plan["dose_low"], plan["dose_high"]
    if zone == "over":
        return Finding("dose_over", "warning",
                       {"en": f"dose lr × steps × alpha/rank = {dose:.3g}, above the preset's zone ({lo:g}–{hi:g}): "
                              "expect over-training (memorised poses, burnt colours)",
                        "ko": f"학습량(학습률 × 스텝 × alpha/rank) = {dose:.3g}, 프리셋 권장 구간({lo:g}–{hi:g})보다 큼: "
                              "과적합(자세 고정, 색 탐)이 예상됨"},
                       [], {"dose": dose, "low": lo, "high": hi})
    return Finding("dose_under", "info",
                   {"en": f"dose {dose:.3g} is below the preset's zone ({lo:g}–{hi:g}): it may not look alike yet",
                    "ko": f"학습량 {dose:.3g}이(가) 프리셋 권장 구간({lo:g}–{hi:g})보다 작음: 아직 안 닮을 수 있음"},
                   [], {"dose": dose, "low": lo, "high": hi})


def sample_prompt_finding(plan: dict) -> Finding | None:
    """The plan's sample prompts that copy a training caption (see :func:`trainer.plan.steps.sample_prompt_warnings`)."""
    copies = plan.get("sample_warnings") or []
    if not copies:
        return None
    return Finding("sample_prompt_seen", "warning",
                   {lang: "; ".join(c["message"][lang] for c in copies) for lang in ("en", "ko")},
                   [], {"prompts": [{k: c[k] for k in ("index", "prompt", "files", "matches")} for c in copies]})


def stalled_finding(rows: list[dict]) -> Finding | None:
    measured = [(r["step"], _f(r, "update_ratio")) for r in _applied(rows) if r.get("update_ratio") is not None]
    ratios = [(s, v) for s, v in measured if v is not None]
    if len(ratios) < 3:
        return None
    late = ratios[len(ratios) // 2 :]
    if max(v for _, v in late) >= STALLED_UPDATE_RATIO:
        return None
    return Finding(
        "learning_stalled", "warning",
        {"en": f"the weights barely move: ‖Δw‖/‖w‖ over 10 steps ≤ {max(v for _, v in late):.2g}",
         "ko": f"가중치가 거의 움직이지 않음: 10스텝 동안 ‖Δw‖/‖w‖ ≤ {max(v for _, v in late):.2g}"},
        [s for s, _ in late], {"update_ratios": late},
    )


def ema_drift_finding(rows: list[dict]) -> Finding | None:
    drifts = [(r["step"], _f(r, "ema_drift")) for r in rows if r.get("ema_drift") is not None]
    bad = [(s, v) for s, v in drifts if v is not None and v > EMA_DRIFT_LIMIT]
    if not bad:
        return None
    return Finding(
        "ema_drift", "warning",
        {"en": f"the EMA weights drifted {bad[-1][1]:.0%} away from the live weights (step {bad[-1][0]})",
         "ko": f"EMA 가중치가 실제 가중치에서 {bad[-1][1]:.0%} 벗어남 ({bad[-1][0]}스텝)"},
        [s for s, _ in bad[:10]], {"drift": bad[-1][1]},
    )


def slowdown_finding(rows: list[dict]) -> Finding | None:
    """The step time jumping ``SLOW_FACTOR``× above its running median and staying there; on CUDA with the
    device memory in use beside it (the rows' ``device_mem_reserved`` / ``device_mem_free``)."""
    times = [(r, v) for r in rows if (v := _f(r, "sec_per_step")) is not None and math.isfinite(v) and v > 0]
    times = times[SLOW_WARMUP_ROWS:]
    for i in range(SLOW_BASE_ROWS, len(times) - SLOW_STAY_ROWS + 1):
        base = statistics.median(v for _, v in times[max(0, i - SPIKE_WINDOW) : i])
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
                                  "from_step": row["step"], "slow_share": share}
        mem_en = mem_ko = ""
        reserved, free = _f(row, "device_mem_reserved"), _f(row, "device_mem_free")
        if reserved is not None:
            values.update(device_mem_reserved=reserved, device_mem_free=free)
            gib = 2.0**30
            left = f", {free / gib:.2f} GiB left free on the device" if free is not None else ""
            left_ko = f", 장치에 남은 메모리 {free / gib:.2f} GiB" if free is not None else ""
            mem_en, mem_ko = (f"; training held {reserved / gib:.2f} GiB of device memory{left}",
                              f". 학습이 장치 메모리 {reserved / gib:.2f} GiB를 쓰는 중{left_ko}")
        return Finding(
            "step_slowdown", "warning",
            {"en": f"steps became {slow / base:.1f}× slower from step {row['step']} ({base:.3g} s → {slow:.3g} s) "
                   f"and stayed slow{mem_en}: the signature of memory spilling out of the GPU",
             "ko": f"{row['step']}스텝부터 스텝이 {slow / base:.1f}배 느려져({base:.3g}초 → {slow:.3g}초) 그대로 "
                   f"머묾{mem_ko}: GPU 메모리가 넘쳐 시스템 메모리로 흘러갈 때의 모습"},
            [r["step"] for r, _ in times[i : i + 10]], values,
        )
    return None


def metric_findings(rows: list[dict], plan: dict, config) -> list[Finding]:
    candidates = [
        loss_scale_finding(rows),
        loss_scale_growth_finding(rows),
        grad_spike_finding(rows),
        clip_saturation_finding(rows, config.optim.max_grad_norm),
        loss_trend_finding(rows, plan.get("warmup_steps", 0)),
        weight_growth_finding(rows),
        dose_finding(plan),
        sample_prompt_finding(plan),
        stalled_finding(rows),
        ema_drift_finding(rows),
        slowdown_finding(rows),
    ]
    return [f for f in candidates if f is not None]
