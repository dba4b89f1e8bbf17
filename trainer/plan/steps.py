"""The step plan: how many optimizer steps a config really makes on a dataset, and the dose it gives.

Counted the way a bucketed loader batches: a batch never mixes buckets, so every bucket ends an epoch with
its own partial batch. That is why the real count can exceed the familiar
``images × repeats × epochs ÷ (batch × accumulation)``, which the plan reports alongside.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from trainer.config.choices import optimizer_spec
from trainer.config.schema import MAX_STEPS, Config
from trainer.data.holdout import split_holdout
from trainer.data.scan import DatasetReport, scan_dataset
from trainer.errors import UserError
from trainer.plan.schedule import per_rank_batches, schedule_mean

DOSE_EXPLANATION = {
    "en": (
        "How far training pulls the model toward your pictures ≈ learning rate × steps × (alpha / rank). "
        "It is a rule of thumb, not an exact law: the three push in the same direction, so raising one lets "
        "you lower another and keep the balance. The lr that counts is the one the steps really get: a cosine "
        "schedule averages about half its peak, so it pulls half as far as the same lr held constant. Too "
        "little and the LoRA does not look like your subject (underfit); too much and it memorises the "
        "training pictures, ignores the prompt and the colours burn (overfit)."
    ),
    "ko": (
        "학습이 모델을 내 그림 쪽으로 끌고 가는 정도 ≈ 학습률 × 스텝 수 × (alpha / rank). "
        "정확한 법칙이 아니라 어림셈입니다. 셋은 같은 방향으로 작용하므로 하나를 올리면 다른 하나를 내려 "
        "균형을 맞출 수 있습니다. 여기서 학습률은 스텝들이 실제로 받는 값입니다. cosine 스케줄은 평균이 최고값의 "
        "절반쯤이라, 같은 학습률을 그대로 유지할 때의 절반만 끌고 갑니다. 너무 적으면 캐릭터가 닮지 않고"
        "(미적합), 너무 많으면 학습 그림을 외워 프롬프트를 무시하고 색이 타 버립니다(과적합)."
    ),
}

_ZONE_ADVICE = {
    "under": (
        "below the zone this preset aims for: expect a weak likeness. Raise steps or learning rate",
        "이 프리셋이 노리는 범위보다 낮습니다. 덜 닮을 수 있으니 스텝이나 학습률을 올리세요",
    ),
    "fit": ("inside the zone this preset aims for", "이 프리셋이 노리는 범위 안입니다"),
    "over": (
        "above the zone this preset aims for: expect memorised, burnt pictures. Lower the learning rate, steps or alpha",
        "이 프리셋이 노리는 범위보다 높습니다. 그림을 외우고 색이 탈 수 있으니 학습률, 스텝이나 alpha를 낮추세요",
    ),
}

@dataclass
class Plan:
    """Step math and dose for one config on one dataset. ``to_json()`` is what ``plan.json`` holds."""

    images: int
    image_repeats: int
    batch_size: int
    grad_accum: int
    epochs: int
    """As configured."""
    epochs_effective: int
    """``epochs``, or how many (the last possibly partial) ``max_steps`` reaches into."""
    batches_per_epoch: int
    steps_per_epoch: int
    total_steps: int
    naive_total_steps: float
    naive_total_steps_ceil: int
    warmup_steps: int
    checkpoint_steps: Schedule
    sample_steps: Schedule
    dose: float
    dose_zone: str
    dose_low: float
    dose_high: float
    lr: float
    rank: int
    alpha: float
    schedule_mean: float
    """Mean of the lr multiplier over the run under the schedule (1 constant, ≈ 0.5 cosine): the dose uses
    the lr the steps really get, as the Review step's per-checkpoint doses do."""
    per_bucket: list[dict[str, int]] = field(default_factory=list)
    world_size: int = 1
    """Processes sharing each step (``torchrun --nproc_per_node``); steps per epoch count them."""
    formula: dict[str, str] = field(default_factory=dict)
    dose_formula: dict[str, str] = field(default_factory=dict)
    dose_advice: dict[str, str] = field(default_factory=dict)
    dose_explanation: dict[str, str] = field(default_factory=lambda: dict(DOSE_EXPLANATION))
    dose_note: str | None = None  # a words code (an optimizer that sets its own step size)
    held_out: int = 0  # pictures held back for the validation loss (not in images)
    sample_warnings: list[dict[str, Any]] = field(default_factory=list)
    """Sample prompts that copy a training caption: ``{index, prompt, kind, files, matches, message}``."""

    @property
    def scheduled(self) -> bool:
        """Whether the schedule moves the average lr off the configured one (the formula then shows the mean)."""
        return _scheduled(self.schedule_mean)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for name in ("checkpoint", "sample"):  # the list as before (capped), and the rule that answers for every step
            schedule: Schedule = getattr(self, f"{name}_steps")
            out[f"{name}_steps"], out[f"{name}_schedule"] = schedule.shown(), schedule.to_json()
        return out


def _scheduled(mean: float) -> bool:
    return abs(mean - 1.0) >= 5e-3


def make_plan(cfg: Config, report: DatasetReport, world_size: int = 1) -> Plan:
    """Count batches per bucket, optimizer steps, checkpoint and sample steps, and the dose.

    With ``world_size`` processes (``torchrun``), each takes an equal share of every epoch's batches (the
    last few repeated to even them out), so an optimizer step covers ``world_size × accumulation`` batches
    and an epoch has that many times fewer steps, as in sd-scripts and accelerate.

    An epoch's trailing partial accumulation still makes an optimizer step (the loop flushes it), hence
    ``ceil(batches / accumulation)`` per epoch.
    """
    report = split_holdout(report, cfg.validation.holdout, cfg.validation.seed)[0]  # the held-out pictures do not train
    if not report.usable or report.image_repeats <= 0:
        raise UserError(
            f"no usable pictures in {report.root}; fix the problems the dataset check lists first"
        )
    check_conv_blocks(cfg)
    bs, accum, epochs = cfg.train.batch_size, cfg.train.grad_accum, cfg.train.epochs
    per_bucket = [
        {"width": b["width"], "height": b["height"], "image_repeats": b["image_repeats"],
         "batches": math.ceil(b["image_repeats"] / bs)}
        for b in report.buckets if b["image_repeats"] > 0
    ]  # fmt: skip
    batches = sum(b["batches"] for b in per_bucket)
    steps_per_epoch = math.ceil(per_rank_batches(batches, world_size) / accum)
    if cfg.train.max_steps > 0:
        total = cfg.train.max_steps
        epochs_effective = math.ceil(total / steps_per_epoch)
    else:
        total = steps_per_epoch * epochs
        epochs_effective = epochs
    naive = report.image_repeats * epochs / (bs * accum * world_size)

    if total > MAX_STEPS:  # epochs × steps per epoch can pass the bound max_steps has
        raise UserError(f"this plan makes {total:,} steps, more than the {MAX_STEPS:,} a run may have: lower "
                        "train.epochs or the repeats, or set train.max_steps")
    checkpoints = _every(cfg.save.every_steps, total)
    samples = (_every(cfg.sample.every_steps or cfg.save.every_steps, total, at_start=True) if cfg.sample.enabled
               else Schedule(enabled=False))

    lr, rank, alpha = cfg.optim.lr, cfg.lora.rank, cfg.lora.alpha
    mean = schedule_mean(cfg, total)
    dose = lr * mean * total * alpha / rank
    low, high = cfg.dose.fit_low, cfg.dose.fit_high
    zone = "under" if dose < low else "over" if dose > high else "fit"
    advice_en, advice_ko = _ZONE_ADVICE[zone]
    zone_ko = {"under": "부족", "fit": "적정", "over": "과다"}[zone]
    lr_en = lr_ko = f"{lr:g}"
    if _scheduled(mean):  # the schedule's average lr: the dose the Review step counts from the run
        sched = cfg.optim.scheduler
        lr_en = f"mean {lr * mean:.3g} (lr {lr:g} × {mean:.2f}, the {sched} schedule's average)"
        lr_ko = f"평균 {lr * mean:.3g}(학습률 {lr:g} × {mean:.2f}, {sched} 스케줄의 평균)"
    dose_formula = {
        "en": f"dose = lr {lr_en} × {total} steps × (alpha {alpha:g} / rank {rank}) = {dose:.3g} "
        f"(zone {low:g}–{high:g}: {zone}); {advice_en}.",
        "ko": f"학습량 = 학습률 {lr_ko} × {total} 스텝 × (alpha {alpha:g} / rank {rank}) = {dose:.3g} "
        f"(범위 {low:g}–{high:g}: {zone_ko}). {advice_ko}.",
    }
    return Plan(
        images=report.images,
        held_out=report.held_out,
        image_repeats=report.image_repeats,
        batch_size=bs,
        grad_accum=accum,
        epochs=epochs,
        epochs_effective=epochs_effective,
        batches_per_epoch=batches,
        steps_per_epoch=steps_per_epoch,
        total_steps=total,
        naive_total_steps=naive,
        naive_total_steps_ceil=math.ceil(naive - 1e-9),  # 210.0000000001 from float division is still 210
        warmup_steps=min(cfg.optim.warmup_steps, total),
        checkpoint_steps=checkpoints,
        sample_steps=samples,
        dose=dose,
        dose_zone=zone,
        dose_low=low,
        dose_high=high,
        lr=lr,
        rank=rank,
        alpha=alpha,
        schedule_mean=mean,
        per_bucket=per_bucket,
        world_size=world_size,
        formula=_formula(
            report.image_repeats, epochs, bs, accum, naive, steps_per_epoch, cfg.train.max_steps, world_size
        ),
        dose_formula=dose_formula,
        dose_advice={"en": advice_en, "ko": advice_ko},
        dose_note=optimizer_spec(cfg.optim.optimizer).dose_note or None,
        sample_warnings=sample_prompt_warnings(cfg, report),
    )


def check_conv_blocks(cfg: Config) -> None:
    """``lora.conv_blocks`` against the base's UNet, read from its config (no weights), so a preset made for
    another UNet is caught before Start rather than when the model loads."""
    from trainer.models.base import unet_block_names

    if not cfg.lora.conv_rank or not cfg.lora.conv_blocks:
        return
    blocks = unet_block_names(cfg.model)
    if blocks is None:
        return
    for entry in (e.rstrip(".") for e in cfg.lora.conv_blocks):
        if not any(b == entry or b.startswith(entry + ".") or entry.startswith(b + ".") for b in blocks):
            raise UserError(f"lora.conv_blocks: this UNet has no block {entry!r}; its blocks are "
                            f"{', '.join(blocks)}")


def sample_prompt_warnings(cfg: Config, report: DatasetReport) -> list[dict[str, Any]]:
    """Sample prompts that, with the trigger filled in, are a training caption (ignoring case, spacing and tag
    order). The settings seed: sample prompts test generalisation, so they must ask for what the data does
    not have; a copied caption only shows memorisation. The trigger-only prompt is left out: likeness to the
    data is what it checks, even where the captions are the bare trigger."""
    from trainer.run.samples import expand_prompts

    if not cfg.sample.enabled:
        return []
    captions: dict[frozenset[str], list[str]] = {}
    for item in report.items:
        captions.setdefault(_tag_set(item.caption), []).append(item.rel)
    bare_trigger = _tag_set(cfg.dataset.trigger)
    out = []
    for p in expand_prompts(cfg.sample.prompts, cfg.dataset.trigger):
        key = _tag_set(p["prompt"])
        files = captions.get(key) if key and key != bare_trigger else None
        if not files:
            continue
        n, shown = len(files), p["prompt"]
        more_en, more_ko = (f" and {n - 1} more", f" 외 {n - 1}개") if n > 1 else ("", "")
        out.append({**p, "files": files[:5], "matches": n, "message": {
            "en": f'sample prompt {p["index"] + 1} "{shown}" is the caption of {files[0]}{more_en}: its pictures show '
                  "what was memorised, not whether the LoRA follows a new prompt; ask for a pose, place or outfit "
                  "the data does not have",
            "ko": f'샘플 프롬프트 {p["index"] + 1} "{shown}"은(는) {files[0]}{more_ko}의 캡션과 같음: 그 샘플은 새 '
                  "프롬프트를 따르는지가 아니라 외운 것을 보여 줌. 데이터에 없는 자세, 장소, 의상을 요청하세요",
        }})
    return out


def _tag_set(text: str) -> frozenset[str]:
    from trainer.data.scan import split_tags

    return frozenset(t.lower().strip(" .") for t in split_tags(text)) - {""}


def plan_from_config(cfg: Config, world_size: int = 1) -> tuple[DatasetReport, Plan]:
    """Scan ``cfg.dataset`` and plan the run on it (for ``world_size`` processes)."""
    report = scan_dataset(cfg.dataset)
    return report, make_plan(cfg, report, world_size)


def _every(every: int, total: int, at_start: bool = False) -> Schedule:
    """``every``, ``2·every``, ... below ``total``, then ``total`` itself (the final save always happens)."""
    return Schedule(every=max(every, 0), total=total, at_start=at_start)


SHOWN_STEPS = 100  # steps of a schedule that plan.json lists; its rule answers for all of them


@dataclass(frozen=True, eq=False)
class Schedule(Sequence[int]):
    """The steps at which a run saves or samples: (0 when ``at_start``,) ``every``, ``2·every``, … below
    ``total``, then ``total``. A sequence answered by arithmetic, never built as a list: a million steps with a
    save every step cost nothing to plan. ``step in schedule`` is what the loop asks."""

    every: int = 0
    total: int = 0
    at_start: bool = False
    enabled: bool = True

    @property
    def _periodic(self) -> int:
        return (self.total - 1) // self.every if self.every > 0 and self.total > 1 else 0

    def __len__(self) -> int:
        return int(self.at_start) + self._periodic + 1 if self.enabled else 0

    def __contains__(self, step: object) -> bool:
        try:
            step = operator.index(step)  # type: ignore[arg-type]  # any object; a TypeError says it is no step
        except TypeError:
            return False
        return self.enabled and (step == self.total or (self.at_start and step == 0)
                or (self.every > 0 and 0 < step < self.total and step % self.every == 0))

    def __getitem__(self, i):
        n = len(self)
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(n))]
        i = operator.index(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("schedule index out of range")
        if self.at_start:
            if i == 0:
                return 0
            i -= 1
        return (i + 1) * self.every if i < self._periodic else self.total

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which have no hash

    def __str__(self) -> str:
        head = ", ".join(map(str, self[:12]))
        return head + (f", … {self.total} ({len(self)} steps, every {self.every})" if len(self) > 12 else "")

    def shown(self) -> list[int]:
        """The whole list when short; else its first ``SHOWN_STEPS - 1`` steps and the last."""
        return list(self) if len(self) <= SHOWN_STEPS else [*self[: SHOWN_STEPS - 1], self[-1]]

    def to_json(self) -> dict[str, Any]:
        return {"every": self.every, "total": self.total, "at_start": self.at_start, "enabled": self.enabled,
                "count": len(self)}

    @classmethod
    def from_plan_json(cls, plan: dict[str, Any], name: str) -> Schedule | list[int]:
        """``name`` ("checkpoint" or "sample") from a ``plan.json`` dict; one written before schedules has only
        the whole list."""
        s = plan.get(f"{name}_schedule")
        if not isinstance(s, dict):
            return list(plan.get(f"{name}_steps") or [])
        return cls(every=int(s["every"]), total=int(s["total"]), at_start=bool(s["at_start"]),
                   enabled=bool(s.get("enabled", True)))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.1f}"


def _formula(
    image_repeats: int, epochs: int, bs: int, accum: int, naive: float, steps_per_epoch: int, max_steps: int,
    world_size: int = 1,
) -> dict[str, str]:
    """The step count in words, with the numbers filled in, as the Steps page shows it."""
    bucketed = steps_per_epoch * epochs
    procs_en = f" × {world_size} processes" if world_size > 1 else ""
    procs_ko = f" × 프로세스 {world_size}개" if world_size > 1 else ""
    en = (
        f"{image_repeats} image-repeats × {epochs} epochs ÷ (batch {bs} × accumulation {accum}{procs_en}) "
        f"= {_num(naive)} steps"
    )
    ko = f"{image_repeats} 이미지×반복 × {epochs} 에폭 ÷ (배치 {bs} × 누적 {accum}{procs_ko}) = {_num(naive)} 스텝"
    if bucketed != math.ceil(naive - 1e-9) or not float(naive).is_integer():
        en += (
            f". A batch never mixes bucket sizes, so each bucket's last batch may be partial"
            f"{', and the processes take equal shares' if world_size > 1 else ''}: "
            f"{steps_per_epoch} steps per epoch × {epochs} = {bucketed} steps"
        )
        ko += (
            f". 한 배치에는 같은 버킷의 그림만 들어가 버킷마다 마지막 배치가 덜 찰 수 있습니다"
            f"{'. 프로세스들은 같은 몫을 나눠 받습니다' if world_size > 1 else ''}: "
            f"에폭당 {steps_per_epoch} 스텝 × {epochs} = {bucketed} 스텝"
        )
    if max_steps > 0:
        en += f". max_steps = {max_steps} overrides this (≈ {max_steps / steps_per_epoch:.1f} epochs)"
        ko += f". max_steps = {max_steps}가 이 값을 대신합니다(약 {max_steps / steps_per_epoch:.1f} 에폭)"
    return {"en": en, "ko": ko}
