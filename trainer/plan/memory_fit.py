"""Fit to memory: the fewest changes, tried in the order a careful user tries them, that bring a config's
estimated peak (:mod:`trainer.plan.memory`) under a budget.

The order: cache the latents (nothing about training changes), gradient checkpointing (the same numbers,
slower steps), 8-bit AdamW (tiny LoRA moments, rounding in the optimizer state), a smaller batch with more
accumulation (the same effective batch), then bf16 where the device has it (fp32 runs only). Changes are
added in that order until the estimate fits, then any earlier one the fit does not need is dropped again.
Text embeddings need no change: the trainer caches them whenever the text encoders are frozen and captions
are not shuffled or dropped, and the encoders stay on the device for sampling either way.

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
from trainer.plan.memory import TIGHT_SHARE, MemoryPlan, estimate_memory, gib


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


def _candidates(cfg: Config, device: torch.device) -> list[list[tuple[str, Any]]]:
    """Each step of the careful order that would change something here, as (key, new value) lists."""
    out: list[list[tuple[str, Any]]] = []
    if not cfg.dataset.cache_latents:
        out.append([("dataset.cache_latents", True)])
    if not cfg.train.gradient_checkpointing:
        out.append([("train.gradient_checkpointing", True)])
    if smaller := optimizer_spec(cfg.optim.optimizer).smaller_state:
        out.append([("optim.optimizer", smaller)])
    batch, accum = cfg.train.batch_size, cfg.train.grad_accum
    while batch > 1 and batch % 2 == 0:
        batch, accum = batch // 2, accum * 2
        out.append([("train.batch_size", batch), ("train.grad_accum", accum)])
    if cfg.train.precision == "fp32" and bf16_supported(device):
        out.append([("train.precision", "bf16")])
    return out


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
                  device: torch.device | None = None) -> FitResult:
    """The cheapest change set that brings ``cfg``'s estimate within ``TIGHT_SHARE`` of ``budget`` bytes (the
    margin the verdict calls "fits"). ``report`` (a DatasetReport) lets it check the step count with the plan."""
    if budget <= 0:
        raise UserError(msg("error.memory.budget", budget=budget))
    device = device or resolve_device(cfg.train.device)

    def estimate(c: Config) -> MemoryPlan:
        return estimate_memory(c, buckets, device, free=budget, device_name=f"budget {gib(budget)}")

    before = estimate(cfg)
    fits = lambda plan: plan.total <= TIGHT_SHARE * budget  # noqa: E731
    chosen: list[list[tuple[str, Any]]] = []
    after = before
    for step in _candidates(cfg, device):
        if fits(after):
            break
        if step[0][0] == "train.batch_size":  # a smaller batch replaces the previous halving
            chosen = [s for s in chosen if s[0][0] != "train.batch_size"]
        chosen.append(step)
        after = estimate(_apply(cfg, chosen))
    if fits(after):  # drop what the fit does not need, latest-but-one first
        for step in reversed(chosen[:-1]):
            trial = [s for s in chosen if s is not step]
            plan = estimate(_apply(cfg, trial))
            if fits(plan):
                chosen, after = trial, plan
    new_cfg = _apply(cfg, chosen)
    changes = [{"key": k, "old": cfg.get(k), "new": v, "why": _why(k)} for step in chosen for k, v in step]
    result = FitResult(new_cfg, changes, before, after, budget, fits(after))
    result.steps_note = _steps_note(cfg, new_cfg, report) if report is not None and chosen else None
    result.message = _message(result)
    return result


def _why(key: str) -> Msg:
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
