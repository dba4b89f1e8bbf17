"""Validation loss: the denoising loss on pictures the LoRA never trains on, at fixed timesteps and fixed noise.

Training loss jumps with each batch's random timesteps and noise, so two steps' losses cannot be compared. Here
every evaluation sees the same pictures, the same timesteps and the same noise: the same weights give the same
number, and a change in the number is a change in the weights. A LoRA that starts to memorise its pictures
drives its training loss down while this one turns up.

The held-out pictures are a folder of their own (``validation.path``) or ``validation.holdout`` pictures held back
from the dataset (:func:`trainer.data.holdout.split_holdout`), which the plan then does not count.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F

from trainer.data.batches import LatentCache, Sample, image_tensor, samples_from_report
from trainer.errors import UserError
from trainer.message import msg
from trainer.sampling import preserved_training_state

if TYPE_CHECKING:
    from trainer.config.schema import Config
    from trainer.data.scan import DatasetReport
    from trainer.plan.steps import Plan
    from trainer.train.distributed import Dist
    from trainer.train.modelset import TrainingModels


def fixed_timesteps(count: int, num_train_timesteps: int) -> list[int]:
    """``count`` timesteps spread evenly over the schedule, centred in their slices (5 of 1000: 100, 300, … 900)."""
    return [int((i + 0.5) * num_train_timesteps / count) for i in range(count)]


@dataclass
class ValidationSet:
    """The held-out pictures encoded once, each with its caption and bucket, and the fixed noise per timestep."""

    latents: list[torch.Tensor]  # one (1, C, h, w) per picture, on the training device
    captions: list[str]
    buckets: list[tuple[int, int]]
    timesteps: list[int]
    noise: list[torch.Tensor]  # one (len(timesteps), C, h, w) per picture

    @property
    def size(self) -> int:
        return len(self.latents)


def build_validation_set(samples: list[Sample], encoder: LatentCache, timesteps: list[int], seed: int,
                         device: torch.device) -> ValidationSet:
    """Encode ``samples`` (no flips, captions as written) and draw each picture's noise from ``seed`` on the CPU,
    so a resumed run, another device or another process gets the same numbers."""
    latents, noise = [], []
    for i, s in enumerate(samples):
        with torch.no_grad():
            lat = LatentCache.encode(encoder, image_tensor(s.path, s.bucket).unsqueeze(0))
        latents.append(lat.to(device))
        gen = torch.Generator().manual_seed((seed * 1_000_003 + i) & 0x7FFF_FFFF)
        noise.append(torch.randn((len(timesteps), *lat.shape[1:]), generator=gen).to(device))
    return ValidationSet(latents, [s.caption for s in samples], [s.bucket for s in samples],
                         list(timesteps), noise)


@torch.no_grad()
def validation_loss(vset: ValidationSet, adapter, denoiser, text, schedule, precision: Any,
                    modules: list[torch.nn.Module], chunk: int = 8) -> float:
    """The mean denoising MSE over every held-out picture and fixed timestep (no min-SNR or prior weighting: one
    plain number). The modules are in eval mode (no LoRA dropout) and every random state is left as it was."""
    total, count = 0.0, 0
    with preserved_training_state(modules):
        for lat, caption, bucket, noise in zip(vset.latents, vset.captions, vset.buckets, vset.noise):
            for start in range(0, len(vset.timesteps), chunk):
                ts = torch.tensor(vset.timesteps[start:start + chunk], device=lat.device)
                n = noise[start:start + chunk]
                x0 = lat.expand(len(ts), *lat.shape[1:])
                noisy, target = schedule.noised(x0, n, ts)
                with precision.autocast():
                    hidden, pooled = text([caption] * len(ts))
                    pred = adapter.predict(denoiser, noisy.to(precision.weight_dtype), schedule.model_timesteps(ts),
                                           hidden, pooled, [bucket] * len(ts))
                per = F.mse_loss(pred.float(), target.float(), reduction="none").mean(dim=(1, 2, 3))
                total += float(per.sum())
                count += len(ts)
    return total / max(count, 1)


def held_out_folder(cfg: Config) -> list[Any]:
    """The pictures of ``validation.path`` (scanned like the dataset, before any model loads, so a wrong folder is
    refused before the run starts); none when it is not set."""
    if not cfg.validation.path:
        return []
    from trainer.data.folders import check_root
    from trainer.data.scan import scan_dataset

    check_root(cfg.validation.path, "validation.path")
    try:
        folder = scan_dataset(cfg.dataset.model_copy(update={"path": cfg.validation.path, "reg_path": ""}))
    except UserError as e:  # the scan speaks of the dataset: say which folder it was
        raise UserError(msg("error.validation.scan", path=cfg.validation.path, reason=e.msg)) from None
    if not folder.usable:
        raise UserError(msg("error.validation.no_usable", path=cfg.validation.path))
    return [it for it in folder.items if not it.prior]


def validation_samples(config: Config, report: DatasetReport, held_out: list[Any]) -> list[Sample]:
    """The held-out pictures as samples, captions as written; none when validation is off."""
    if not config.validation.enabled:
        return []
    return samples_from_report(replace(report, items=list(held_out)), config.dataset.trigger)


class Validator:
    """The run's validation loss: the held-out set encoded once with the data, scored at the plan's steps on rank
    0. ``vset`` is None when validation is off."""

    def __init__(self, config: Config, dist: Dist, plan: Plan, models: TrainingModels, report: DatasetReport,
                 held_out: list[Any]):
        self.config, self.dist, self.plan, self.models = config, dist, plan, models
        self.vset: ValidationSet | None = None
        if config.validation.enabled:
            samples = validation_samples(config, report, held_out)
            encoder = LatentCache(models.pipe.vae, models.device, models.precision.vae_dtype, None)
            timesteps = fixed_timesteps(config.validation.timesteps, models.schedule.num_timesteps)
            self.vset = build_validation_set(samples, encoder, timesteps, config.validation.seed, models.device)

    def due(self, step: int) -> bool:
        return self.vset is not None and self.dist.is_main and self.plan.validates_at(step)

    def loss(self) -> float:
        assert self.vset is not None
        m = self.models
        return validation_loss(self.vset, m.adapter, m.denoiser, m.text, m.schedule, m.precision, m.modules(),
                               chunk=max(1, self.config.train.batch_size))
