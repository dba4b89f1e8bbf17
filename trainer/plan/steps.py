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
from trainer.message import Msg, msg
from trainer.plan.schedule import per_rank_batches, schedule_mean


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
    formula: Msg = field(kw_only=True)
    dose_formula: Msg = field(kw_only=True)
    dose_advice: Msg = field(kw_only=True)
    dose_explanation: Msg = field(default_factory=lambda: msg("plan.dose_explanation"))
    dose_note: Msg | None = None  # an optimizer that sets its own step size
    held_out: int = 0  # pictures held back for the validation loss (not in images)
    validation_every: int | None = None
    """None: no validation loss; 0: scored at every checkpoint and sample step; N: every N steps (and at the end)."""
    sample_warnings: list[dict[str, Any]] = field(default_factory=list)
    """Sample prompts that copy a training caption: ``{index, prompt, kind, files, matches, message}``."""
    near_copies: list[dict[str, Any]] = field(default_factory=list)
    """Pictures the scan found to be another picture resized or recoloured: ``{file, original, similarity}``."""
    captions_everywhere: list[dict[str, Any]] = field(default_factory=list)
    """Tags or phrases the caption doctor found in nearly every caption: ``{phrase, pct}`` (the trigger learns
    none of what they say: :mod:`trainer.data.caption_doctor`)."""
    trigger_common: str = ""
    """The trigger, where the caption doctor found it an everyday word the base model already draws ("star",
    "woman"); "" otherwise."""
    trigger_not_first: dict[str, Any] = field(default_factory=dict)
    """Where captions write the trigger after the tags that stay in place while the rest are shuffled or dropped:
    ``{trigger, n, keep}`` (the caption doctor's finding); {} otherwise."""
    captions_identical: dict[str, Any] = field(default_factory=dict)
    """Where many pictures share one caption (the lazy "every caption is the trigger" folder): ``{n, caption, of}``
    of the largest such group, ``of`` the subject's pictures (the caption doctor's warning); {} otherwise."""

    @property
    def scheduled(self) -> bool:
        """Whether the schedule moves the average lr off the configured one (the formula then shows the mean)."""
        return _scheduled(self.schedule_mean)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for name in ("checkpoint", "sample"):  # the list as before (capped), and the rule that answers for every step
            schedule: Schedule = getattr(self, f"{name}_steps")
            out[f"{name}_steps"], out[f"{name}_schedule"] = schedule.shown(), schedule.to_json()
        out["validation_steps"] = self.validation_steps()
        return out

    def validates_at(self, step: int) -> bool:
        """Whether the run scores its held-out pictures after ``step``."""
        if self.validation_every is None or step <= 0:
            return False
        if step >= self.total_steps:
            return True
        if self.validation_every:
            return step % self.validation_every == 0
        return step in self.checkpoint_steps or step in self.sample_steps

    def validation_steps(self) -> list[int]:
        """The first ``SHOWN_STEPS`` steps :meth:`validates_at` says yes to."""
        if self.validation_every is None:
            return []
        every = _every(self.validation_every, self.total_steps).shown() if self.validation_every else []
        candidates = {*every, *self.checkpoint_steps.shown(), *self.sample_steps.shown(), self.total_steps}
        return sorted(s for s in candidates if self.validates_at(s))[:SHOWN_STEPS]


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
        raise UserError(msg("error.plan.no_usable", root=report.root))
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
        raise UserError(msg("error.plan.too_many_steps", total=total, limit=MAX_STEPS))
    checkpoints = _every(cfg.save.every_steps, total)
    samples = (_every(cfg.sample.every_steps or cfg.save.every_steps, total, at_start=True) if cfg.sample.enabled
               else Schedule(enabled=False))

    lr, rank, alpha = cfg.optim.lr, cfg.lora.rank, cfg.lora.alpha
    mean = schedule_mean(cfg, total)
    dose = lr * mean * total * alpha / rank
    low, high = cfg.dose.fit_low, cfg.dose.fit_high
    zone = "under" if dose < low else "over" if dose > high else "fit"
    advice = Msg(f"plan.advice.{zone}")
    if cfg.dose.provisional:
        advice = msg("plan.advice.provisional", advice=advice)
    shown_lr = msg("plan.lr", lr=lr)
    if _scheduled(mean):  # the schedule's average lr: the dose the Review step counts from the run
        schedule = msg(f"field.scheduler.choice.{cfg.optim.scheduler}")  # worded, as the Preset step offers it
        shown_lr = msg("plan.lr_mean", mean_lr=lr * mean, lr=lr, mean=mean, scheduler=schedule)
    dose_formula = msg("plan.dose_formula", lr=shown_lr, total=total, alpha=alpha, rank=rank, dose=dose, low=low,
                       high=high, zone=Msg(f"plan.zone.{zone}"), advice=advice)
    return Plan(
        images=report.images,
        held_out=report.held_out,
        validation_every=cfg.validation.every_steps if cfg.validation.enabled else None,
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
        dose_advice=advice,
        dose_note=Msg(spec.dose_note) if (spec := optimizer_spec(cfg.optim.optimizer)).dose_note else None,
        sample_warnings=sample_prompt_warnings(cfg, report),
        near_copies=[{"file": p["file"], **p["message"].values} for p in report.problems if p["kind"] == "near_copy"],
        captions_everywhere=[dict(f["message"].values) for f in report.caption_findings
                             if f["kind"] == "caption_everywhere"],
        trigger_common=next((f["message"].values["trigger"] for f in report.caption_findings
                             if f["kind"] == "trigger_common_word"), ""),
        trigger_not_first=next((dict(f["message"].values) for f in report.caption_findings
                                if f["kind"] == "trigger_not_first"), {}),
        captions_identical=max(({**f["message"].values, "of": report.own_images} for f in report.caption_findings
                                if f["kind"] == "identical_captions" and f["severity"] == "warning"),
                               key=lambda v: v["n"], default={}),
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
            raise UserError(msg("error.lora.no_block", entry=entry, blocks=", ".join(blocks)))


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
        more = msg("plan.more_files", n=n - 1) if n > 1 else ""
        out.append({**p, "files": files[:5], "matches": n, "message": msg(
            "plan.sample_prompt_seen", number=p["index"] + 1, prompt=shown, file=files[0], more=more)})
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
) -> Msg:
    """The step count in words, with the numbers filled in, as the Steps page shows it."""
    bucketed = steps_per_epoch * epochs
    parts: dict[str, Msg | str] = {"procs": "", "bucketed": "", "max_steps": ""}
    if world_size > 1:
        parts["procs"] = msg("plan.formula_processes", n=world_size)
    if bucketed != math.ceil(naive - 1e-9) or not float(naive).is_integer():
        parts["bucketed"] = msg("plan.formula_bucketed", steps_per_epoch=steps_per_epoch, epochs=epochs,
                                bucketed=bucketed, shares=msg("plan.formula_shares") if world_size > 1 else "")
    if max_steps > 0:
        parts["max_steps"] = msg("plan.formula_max_steps", max_steps=max_steps, epochs=max_steps / steps_per_epoch)
    return msg("plan.formula", image_repeats=image_repeats, epochs=epochs, bs=bs, accum=accum, naive=_num(naive),
               **parts)
