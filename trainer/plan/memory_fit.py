"""Fit to memory: the fewest changes, tried in the order a careful user tries them, that bring a config's
estimated peak (:mod:`trainer.plan.memory`) under a budget.

The order: cache the latents (nothing about training changes), encode the text up front and move the text
encoders off the device (the same numbers: every caption and sample prompt is encoded once before training, as
the run would encode it; only where the text encoders are frozen and tags are neither shuffled nor dropped, and
only on a GPU, since a CPU's memory is where they would go), gradient checkpointing (the same numbers, slower
steps), 8-bit AdamW (tiny LoRA moments, rounding in the optimizer state), a smaller batch with more accumulation
(the same effective batch), then bf16 where the device has it (fp32 runs only). Changes are added in that order
until the estimate fits, then any earlier one the fit does not need is dropped again. Without the switch the
text embeddings are cached too (frozen encoders, fixed captions), but the encoders stay on the device. Where
only shuffled or dropped tags stand in the switch's way, the last step turns them off with it: the captions then
stay as written, which changes what the run teaches, so it comes after everything that does not. After all of
these, for a big transformer: its frozen weights stored in 8 bits, then in 4 (``model.base_quant``: the numbers
change, the steps slow), then the fewest of its blocks kept in CPU memory that fit (``model.block_swap``: the same
numbers, slower steps; only on a GPU, and only for a family that names its blocks). Each says how much slower
(:mod:`trainer.plan.memory_lowmem`, provisional).

The dose and step count stay the same unless a smaller batch changes how the buckets' partial batches group
into steps; the result then says so with both numbers (``steps_note``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from trainer.config.choices import optimizer_spec
from trainer.config.schema import Config, from_dict
from trainer.errors import UserError
from trainer.message import Msg, msg
from trainer.models.precision import bf16_supported, resolve_device
from trainer.plan.memory import SHARED_MEMORY, TIGHT_SHARE, MemoryPlan, estimate_memory, gib, shapes_for
from trainer.plan.memory_lowmem import QUANT_SLOWDOWN


@dataclass
class FitResult:
    config: Config
    changes: list[dict[str, Any]]  # {key, old, new, why: a message}
    before: MemoryPlan
    after: MemoryPlan
    budget: int
    fits: bool
    steps_note: Msg | None = None
    message: Msg | None = None

    def to_json(self) -> dict[str, Any]:
        return {"budget": self.budget, "fits": self.fits, "changes": self.changes, "before": self.before.to_json(),
                "after": self.after.to_json(), "steps_note": self.steps_note, "message": self.message,
                "sets": [f"{c['key']}={_toml(c['new'])}" for c in self.changes]}


AUGMENTATION = {"dataset.shuffle_tags": False, "dataset.tag_dropout": 0.0}
"""What the text encoders' offload needs of captions that change every step (its last, caption-fixing step)."""


def _candidates(cfg: Config, device: torch.device, bf16: bool | None) -> list[list[tuple[str, Any]]]:
    """Each step of the careful order that would change something here, as (key, new value) lists."""
    out: list[list[tuple[str, Any]]] = []
    if not cfg.dataset.cache_latents:
        out.append([("dataset.cache_latents", True)])
    offload = not cfg.model.offload_text_encoders and device.type not in SHARED_MEMORY
    if offload and not cfg.offload_blockers():
        out.append([("model.offload_text_encoders", True)])
    if not cfg.train.gradient_checkpointing:
        out.append([("train.gradient_checkpointing", True)])
    if smaller := optimizer_spec(cfg.optim.optimizer).smaller_state:
        out.append([("optim.optimizer", smaller)])
    batch, accum = cfg.train.batch_size, cfg.train.grad_accum
    while batch > 1 and batch % 2 == 0:
        batch, accum = batch // 2, accum * 2
        out.append([("train.batch_size", batch), ("train.grad_accum", accum)])
    if cfg.train.precision == "fp32" and (bf16_supported(device) if bf16 is None else bf16):
        out.append([("train.precision", "bf16")])
    if offload and cfg.offload_blockers() and set(cfg.offload_blockers()) <= set(AUGMENTATION):
        # last: fixed captions change what the run teaches, though the trigger stays first either way
        out.append([(k, v) for k, v in AUGMENTATION.items() if cfg.get(k) != v] + [("model.offload_text_encoders", True)])
    if device.type in ("cuda", "cpu"):  # where bitsandbytes runs; fewer bytes a weight each
        out += [[("model.base_quant", mode)] for mode in ("int8", "nf4") if _bits(mode) < _bits(cfg.model.base_quant)]
    return out


def _bits(mode: str) -> float:
    return {"none": 16, "int8": 8, "fp8": 8, "nf4": 4}[mode]


def _swap_range(cfg: Config, device: torch.device) -> range:
    """The ``model.block_swap`` values the fit may try, fewest first (none where nothing would leave the device)."""
    blocks = shapes_for(cfg.model).blocks
    if device.type in SHARED_MEMORY or blocks is None:
        return range(0)
    return range(cfg.model.block_swap + 1, len(blocks) + 1)


def _apply(cfg: Config, steps: list[list[tuple[str, Any]]]) -> Config:
    data = cfg.to_dict()
    preset = data.pop("preset", "")
    for step in steps:
        for key, value in step:
            section, leaf = key.split(".")
            data[section][leaf] = value
    out = from_dict(data, origin="the memory fit")
    out.preset = preset
    return out


def fit_to_memory(cfg: Config, budget: int, buckets: list[dict] | None = None, report=None,
                  device: torch.device | None = None, bf16: bool | None = None) -> FitResult:
    """The cheapest change set that brings ``cfg``'s estimate within ``TIGHT_SHARE`` of ``budget`` bytes (the
    margin the verdict calls "fits"). ``report`` (a DatasetReport) lets it check the step count with the plan.
    ``bf16``: whether the device has it (None: ask it)."""
    if budget <= 0:
        raise UserError(msg("error.memory.budget", budget=budget))
    device = device or resolve_device(cfg.train.device)

    def estimate(c: Config) -> MemoryPlan:
        return estimate_memory(c, buckets, device, free=budget, device_name=f"budget {gib(budget)}", bf16=bf16)

    before = estimate(cfg)
    fits = lambda plan: plan.total <= TIGHT_SHARE * budget  # noqa: E731
    chosen: list[list[tuple[str, Any]]] = []
    after = before
    for step in _candidates(cfg, device, bf16):
        if fits(after):
            break
        if step[0][0] in ("train.batch_size", "model.base_quant"):  # a smaller batch (fewer bits) replaces the last
            chosen = [s for s in chosen if s[0][0] != step[0][0]]
        chosen.append(step)
        after = estimate(_apply(cfg, chosen))
    chosen, after = _fewest_blocks(cfg, chosen, after, device, estimate, fits)
    if fits(after):  # drop what the fit does not need, latest-but-one first
        for step in reversed(chosen[:-1]):
            trial = [s for s in chosen if s is not step]
            plan = estimate(_apply(cfg, trial))
            if fits(plan):
                chosen, after = trial, plan
        kept = [s for s in chosen if s[0][0] != "model.block_swap"]
        if len(kept) < len(chosen):  # fewer blocks may do now
            chosen, after = _fewest_blocks(cfg, kept, estimate(_apply(cfg, kept)), device, estimate, fits)
    new_cfg = _apply(cfg, chosen)
    changes = [{"key": k, "old": cfg.get(k), "new": v, "why": _why(k, v, after)} for step in chosen for k, v in step]
    result = FitResult(new_cfg, changes, before, after, budget, fits(after))
    result.steps_note = _steps_note(cfg, new_cfg, report) if report is not None and chosen else None
    result.message = _message(result)
    return result


def _fewest_blocks(cfg: Config, chosen: list, after: MemoryPlan, device: torch.device, estimate, fits):
    """When ``chosen`` does not fit: the fewest blocks kept in CPU memory that make it fit, added as the last
    change; when none does, the fewest that lower the peak the most (none, when the peak is not training's)."""
    if fits(after):
        return chosen, after
    best = (after.total, chosen, after)
    for n in _swap_range(cfg, device):
        steps = [*chosen, [("model.block_swap", n)]]
        trial = estimate(_apply(cfg, steps))
        if fits(trial):
            return steps, trial
        if trial.total < best[0]:
            best = (trial.total, steps, trial)
    return best[1], best[2]


def _why(key: str, value: Any = None, after: MemoryPlan | None = None) -> Msg:
    low = (after.low_memory if after else None) or {}
    if key == "model.base_quant":
        return msg("memory_fit.why.model.base_quant", mode=value, pct=round(100 * (QUANT_SLOWDOWN[value] - 1)))
    if key == "model.block_swap" and "block_swap" in low:
        swap = low["block_swap"]
        return msg("memory_fit.why.model.block_swap", n=value, blocks=swap["of"], pct=round(100 * (swap["slowdown"] - 1)))
    return Msg(f"memory_fit.why.{'train.batch_size' if key == 'train.grad_accum' else key}")


def _steps_note(old: Config, new: Config, report) -> Msg | None:
    from trainer.plan.steps import make_plan

    a, b = make_plan(old, report), make_plan(new, report)
    if a.total_steps == b.total_steps:
        return None
    return msg("memory_fit.steps_note", before=a.total_steps, after=b.total_steps, dose_before=a.dose, dose_after=b.dose)


def _message(r: FitResult) -> Msg:
    before, after, budget = gib(r.before.total), gib(r.after.total), gib(r.budget)
    if not r.changes and r.fits:
        return msg("memory_fit.already_fits", before=before, budget=budget)
    if r.fits:
        return msg("memory_fit.fits", before=before, after=after, budget=budget, n=len(r.changes))
    if r.after.phase == "encode":  # the text encoders alone are too many: nothing about training helps
        weights = (r.after.encode or {}).get("text_encoder_weights", 0)
        return msg("memory_fit.does_not_fit_encode", after=after, budget=budget, weights=gib(weights),
                   train=gib(r.after.train_total))
    return msg("memory_fit.does_not_fit", after=after, budget=budget)


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return f'"{v}"' if isinstance(v, str) else str(v)


def parse_bytes(text: str) -> int:
    """``8GiB``, ``8G``, ``7.5 GB``, ``512MiB`` or a plain number of bytes."""
    import re

    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([kmgt]?)(i?b?)\s*", text.lower())
    if not m:
        raise UserError(msg("error.memory.fit_size", text=text))
    value, unit = float(m.group(1)), m.group(2)
    return int(value * 1024 ** "_kmgt".index(unit)) if unit else int(value)
