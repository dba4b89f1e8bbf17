"""The doctor's measures from the run's own model, for any subject: what the trigger carries, how far the LoRA
moved what the base draws without it, and each picture's loss.

The training guide judges a LoRA by its pictures: does the trigger bring the subject, do prompts without it stay
the base model's. Both questions can be asked of the denoiser itself, with the same fixed pictures, timesteps
and noise at every measured step (as the validation loss does), so two steps' numbers differ only because the
weights did:

- **subject**: every scored picture of the dataset is denoised with its caption as written, with the trigger
  taken out of it and with the trigger alone. Once the trigger carries the subject, a caption
  with it predicts the noise better than the same caption without it; at step 0 they are nearly the same.
- **base_samples** (or, without them, **prior**): the base model's own step-0 no-trigger samples, pictures the
  LoRA never trains on (the prior pictures are trained on, so the LoRA is pulled to fit them), are denoised with
  the LoRA and with it switched off; how far the prediction moved, against the base model's own error, is how
  far the LoRA drifted from what the base draws without the trigger.
- **held_out**: the held-out pictures, where there are some, at the same timesteps: training pictures against
  held-out ones tell memorising from learning.

With masked training on, the subject's and the held-out pictures' losses are weighed as training weighs them (the
mask, ``dataset.unmasked_weight`` outside it): the background a masked run was told not to learn would otherwise
stay unlearnt in every reading and pull the trigger's gain down on a healthy run.

One row per measured step goes to ``measures.jsonl``; :mod:`trainer.doctor.model_measures` reads the verdict's
numbers from it. Nothing here depends on what the pictures show, so it holds for any family's subject.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from trainer.data.batches import LatentCache, image_tensor, samples_from_report, without_trigger
from trainer.data.masks import mask_weights
from trainer.errors import error_reason, is_out_of_memory
from trainer.io import append_jsonl
from trainer.message import msg
from trainer.models.lora import set_lora_scale
from trainer.run.events import Alert, RunEvent
from trainer.run.samples import expand_prompts
from trainer.sampling import BATCH_PIXELS, preserved_training_state
from trainer.train.validation import fixed_timesteps

if TYPE_CHECKING:
    from trainer.config.schema import Config
    from trainer.data.batches import Sample
    from trainer.data.scan import DatasetReport
    from trainer.plan.steps import Plan
    from trainer.run.rundir import RunPaths
    from trainer.train.distributed import Dist
    from trainer.train.modelset import TrainingModels


def spread(items: list[Any], count: int) -> list[Any]:
    """At most ``count`` of ``items``, evenly spread over them (all of them when there are few)."""
    if len(items) <= count:
        return list(items)
    return [items[int(i * len(items) / count)] for i in range(count)]


@dataclass
class ProbeSet:
    """Pictures encoded once, with the captions they are scored with and one fixed noise per timestep."""

    keys: list[str]  # the picture's path relative to its folder (its name in measures.jsonl)
    latents: list[torch.Tensor]  # (1, C, h, w) each, on the training device
    captions: list[str]
    bare: list[str]  # the captions with the trigger taken out (the subject set) or the same captions
    buckets: list[tuple[int, int]]
    noise: list[torch.Tensor]  # (len(timesteps), C, h, w) each
    weights: list[torch.Tensor | None] = field(default_factory=list)
    """Masked training: each picture's loss weights (1, 1, h, w) as training weighs it; None (or none): whole."""

    def weight(self, i: int) -> torch.Tensor | None:
        return self.weights[i] if self.weights else None

    def __len__(self) -> int:
        return len(self.keys)


def build_probe_set(pictures: list[tuple[str, Any, tuple[int, int], str]], encoder: LatentCache, timesteps: int,
                    seed: int, device: torch.device, trigger: str = "", unmasked: float | None = None) -> ProbeSet:
    """``pictures``: (key, path or PIL image, bucket, caption). The noise of each picture comes from ``seed`` and
    its key on the CPU, so a resumed run, another device or a later read gets the same numbers. ``unmasked``
    (masked training: the weight outside a mask) weighs each picture that has a mask as training does."""
    latents, noise, keys, captions, buckets, weights = [], [], [], [], [], []
    for key, source, bucket, caption in pictures:
        with torch.no_grad():
            lat = LatentCache.encode(encoder, image_tensor(source, bucket).unsqueeze(0))
        gen = torch.Generator().manual_seed((seed * 1_000_003 + _stable_hash(key)) & 0x7FFF_FFFF)
        noise.append(torch.randn((timesteps, *lat.shape[1:]), generator=gen).to(device))
        latents.append(lat.to(device))
        keys.append(key)
        captions.append(caption)
        buckets.append(bucket)
        w = None
        if unmasked is not None and isinstance(source, str | Path):
            w = mask_weights(source, bucket, False, (lat.shape[-2], lat.shape[-1]), unmasked)
        weights.append(None if w is None else w[None].to(device))
    return ProbeSet(keys, latents, captions, bare_captions(captions, trigger), buckets, noise, weights)


def bare_captions(captions: list[str], trigger: str) -> list[str]:
    """The captions with the trigger taken out (the subject set's second reading), or the same captions."""
    return [without_trigger(c, trigger) for c in captions] if trigger else list(captions)


def _stable_hash(text: str) -> int:
    h = 0
    for ch in text.encode("utf-8"):
        h = (h * 131 + ch) & 0x7FFF_FFFF
    return h


class Denoiser:
    """The run's denoiser on fixed inputs, as the training loss calls it (the family's target), several pictures
    of one bucket in one batch. A forward pass holds at most :meth:`items` noised pictures (a picture at each of
    its timesteps is one each): no more than the training step's own batch, or than the sampler draws at once
    (:data:`trainer.sampling.BATCH_PIXELS`), whichever is more, so the measures fit where the training step and
    its samples do; ``shrink`` divides that (the measures halve it when the card runs out of memory)."""

    def __init__(self, adapter, denoiser, text, schedule, precision: Any, chunk: int = 8, batch: int = 1,
                 shrink: int = 1):
        self.adapter, self.denoiser, self.text, self.schedule = adapter, denoiser, text, schedule
        self.precision = precision
        self.chunk = chunk  # pictures per batch of the set (each with every timestep)
        self.batch, self.shrink = batch, shrink

    def items(self, bucket: tuple[int, int]) -> int:
        """The most noised pictures of ``bucket`` (width, height) in one forward pass."""
        return max(1, max(self.batch, BATCH_PIXELS // max(1, bucket[0] * bucket[1])) // self.shrink)

    def __call__(self, latents: list[torch.Tensor], noise: list[torch.Tensor], timesteps: list[int],
                 captions: list[str], bucket: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
        """(prediction, target) for pictures of one bucket, each (n, len(timesteps), C, h, w) in fp32."""
        n, t = len(latents), len(timesteps)
        ts = torch.tensor(timesteps, device=latents[0].device).repeat(n)
        x0 = torch.cat([lat.expand(t, *lat.shape[1:]) for lat in latents])
        eps = torch.cat(noise)
        noisy, target = self.schedule.noised(x0, eps, ts)
        texts, at, step = [c for c in captions for _ in range(t)], self.schedule.model_timesteps(ts), self.items(bucket)
        parts = []
        for k in range(0, n * t, step):
            with self.precision.autocast():
                hidden, pooled = self.text(texts[k:k + step])
                parts.append(self.adapter.predict(self.denoiser, noisy[k:k + step].to(self.precision.weight_dtype),
                                                  at[k:k + step], hidden, pooled, [bucket] * len(texts[k:k + step]))
                             .float())
        return torch.cat(parts).unflatten(0, (n, t)), target.float().unflatten(0, (n, t))

    def batches(self, pset: ProbeSet) -> list[list[int]]:
        """The set's pictures by bucket, ``chunk`` at a time (indices into the set)."""
        by_bucket: dict[tuple[int, int], list[int]] = {}
        for i, b in enumerate(pset.buckets):
            by_bucket.setdefault(b, []).append(i)
        return [idx[k:k + self.chunk] for _, idx in sorted(by_bucket.items()) for k in range(0, len(idx), self.chunk)]

    def run(self, pset: ProbeSet, idx: list[int], timesteps: list[int], captions: list[str]):
        return self(
            [pset.latents[i] for i in idx], [pset.noise[i] for i in idx], timesteps, [captions[i] for i in idx],
            pset.buckets[idx[0]])


def _per_step(a: torch.Tensor, b: torch.Tensor, weights: list[torch.Tensor | None] | None = None) -> list[list[float]]:
    """Mean squared difference per picture and timestep of (n, T, C, h, w) tensors, rounded for the file; a
    picture with weights (1, 1, h, w) the weighted mean, as masked training's loss."""
    err = (a - b).pow(2)
    if weights and any(w is not None for w in weights):  # pictures without a mask weigh 1 everywhere
        w = torch.stack([torch.ones_like(err[0, :1, :1]) if x is None else x for x in weights])  # (n, 1, 1, h, w)
        per = (err * w).flatten(2).mean(dim=2) / w.flatten(2).mean(dim=2).clamp_min(1e-6)
    else:
        per = err.flatten(2).mean(dim=2)
    return [[round(v, 6) for v in row] for row in per.tolist()]  # one copy to the host for the whole batch


SUBJECT_CAPTIONS = ("caption", "bare", "trigger")  # what each subject picture is denoised with


@torch.no_grad()
def subject_losses(pset: ProbeSet, denoise: Denoiser, timesteps: list[int], trigger: str) -> dict[str, dict]:
    """key → {"caption": the loss per timestep with the caption as written, "bare": with the trigger taken out,
    "trigger": with the trigger alone}: the guide's "does the trigger alone bring the subject" asked of the
    denoiser, beside the caption's own words."""
    out: dict[str, dict] = {}
    texts = {"caption": pset.captions, "bare": pset.bare, "trigger": [trigger] * len(pset)}
    for idx in denoise.batches(pset):
        per: dict[str, list[list[float]]] = {}
        target = None
        for name in SUBJECT_CAPTIONS:
            pred, target = denoise.run(pset, idx, timesteps, texts[name])
            per[name] = _per_step(pred, target, [pset.weight(i) for i in idx])
        for j, i in enumerate(idx):
            out[pset.keys[i]] = {name: per[name][j] for name in SUBJECT_CAPTIONS}
    return out


def trigger_prompt(prompt: str, trigger: str) -> str:
    """A no-trigger prompt with the trigger put first, as the sample prompts write it."""
    return f"{trigger.strip()}, {prompt}" if prompt.strip() else trigger.strip()


@torch.no_grad()
def prior_losses(pset: ProbeSet, denoise: Denoiser, timesteps: list[int], lora, trigger: str = "") -> dict[str, dict]:
    """key → {"lora": the loss per timestep with the LoRA, "base": with it off (the base model), "move": the mean
    squared move of the prediction between the two}. With ``trigger`` (a masked run) also "reach": how far the
    same prompt with the trigger put in moves the prediction from the base model's, and "add": how much of that
    the trigger adds to the LoRA's own prediction without it (:func:`trainer.doctor.model_measures` reads their
    ratio as the trigger's share)."""
    out = {}
    for idx in denoise.batches(pset):
        pred, target = denoise.run(pset, idx, timesteps, pset.captions)
        with_trigger = None
        if trigger.strip():
            with_trigger, _ = denoise.run(pset, idx, timesteps, [trigger_prompt(c, trigger) for c in pset.captions])
        set_lora_scale(lora, 0.0)
        try:
            base_pred, _ = denoise.run(pset, idx, timesteps, pset.captions)
        finally:
            set_lora_scale(lora, 1.0)
        for i, lo, ba, mv in zip(idx, _per_step(pred, target), _per_step(base_pred, target), _per_step(pred, base_pred)):
            out[pset.keys[i]] = {"lora": lo, "base": ba, "move": mv}
        if with_trigger is not None:
            for i, reach, add in zip(idx, _per_step(with_trigger, base_pred), _per_step(with_trigger, pred)):
                out[pset.keys[i]].update(reach=reach, add=add)
    return out


@torch.no_grad()
def plain_losses(pset: ProbeSet, denoise: Denoiser, timesteps: list[int]) -> dict[str, list[float]]:
    """key → the loss per timestep with the caption as written."""
    out = {}
    for idx in denoise.batches(pset):
        pred, target = denoise.run(pset, idx, timesteps, pset.captions)
        for i, loss in zip(idx, _per_step(pred, target, [pset.weight(i) for i in idx])):
            out[pset.keys[i]] = loss
    return out


def probe_pictures(config: Config, samples: list[Sample], report: DatasetReport,
                   held_out: list[Any]) -> dict[str, tuple[list[Sample], str]]:
    """The picture sets the measures score, by name (subject, prior, held_out), each with the trigger its captions
    are read without; a set with no pictures is left out."""
    own = sorted((s for s in samples if not s.prior), key=lambda s: s.rel)
    prior = sorted((s for s in samples if s.prior), key=lambda s: s.rel)
    sets = {"subject": (spread(own, config.measure.pictures), config.dataset.trigger),
            "prior": (spread(prior, config.measure.pictures), "")}
    if held_out:
        sets["held_out"] = (samples_from_report(replace(report, items=list(held_out)), config.dataset.trigger), "")
    return {name: chosen for name, chosen in sets.items() if chosen[0]}


def measure_captions(config: Config, samples: list[Sample], report: DatasetReport, held_out: list[Any]) -> list[str]:
    """Every caption the measures denoise with: each set's captions, the subject's without the trigger and the
    trigger alone, and the no-trigger sample prompts the base model's step-0 pictures are scored with."""
    if not config.measure.enabled:
        return []
    out: list[str] = []
    for name, (chosen, trigger) in probe_pictures(config, samples, report, held_out).items():
        captions = [s.caption for s in chosen]
        out += captions
        if name == "subject":
            out += [*bare_captions(captions, trigger), config.dataset.trigger]
        elif name == "prior" and config.dataset.masked_loss and config.dataset.trigger.strip():
            out += [trigger_prompt(c, config.dataset.trigger) for c in captions]
    if config.sample.enabled:
        plain = [p["prompt"] for p in expand_prompts(config.sample.prompts, config.dataset.trigger)
                 if p["kind"] == "no_trigger"]
        out += plain
        if config.dataset.masked_loss and config.dataset.trigger.strip():
            out += [trigger_prompt(p, config.dataset.trigger) for p in plain]
    return out


class ModelMeasures:
    """The run's model measures: the picture sets built with the data, measured at step 0 and at every
    checkpoint, sample point and the end (rank 0 alone, as the validation loss). No sets: measures are off."""

    def __init__(self, config: Config, dist: Dist, plan: Plan, models: TrainingModels, paths: RunPaths | None,
                 samples: list[Sample], report: DatasetReport, held_out: list[Any],
                 emit: Callable[[RunEvent], None] | None = None):
        self.config, self.dist, self.plan, self.models, self.paths = config, dist, plan, models, paths
        self.emit = emit  # says the measures are off when the card's memory cannot hold them (None: raise)
        self.shrink = 1  # the forward passes' pictures divided by this (:class:`Denoiser`)
        self.sets: dict[str, ProbeSet] = {}
        self.timesteps: list[int] = []
        if not config.measure.enabled or not dist.is_main:
            return
        self.timesteps = fixed_timesteps(config.measure.timesteps, models.schedule.num_timesteps)
        encoder = LatentCache(models.pipe.vae, models.device, models.precision.vae_dtype, None)
        m = config.measure
        masked = config.dataset.unmasked_weight if config.dataset.masked_loss else None
        for name, (chosen, trigger) in probe_pictures(config, samples, report, held_out).items():
            self.sets[name] = build_probe_set([(s.rel, s.path, s.bucket, s.caption) for s in chosen], encoder,
                                              m.timesteps, m.seed, models.device, trigger,
                                              masked if name in ("subject", "held_out") else None)
        self.add_base_samples()  # a resumed run: step 0 was sampled before

    @property
    def enabled(self) -> bool:
        return bool(self.sets)

    @property
    def masked(self) -> bool:
        """The subject's pictures are weighed by their masks (masked training, and some picture has one)."""
        return "subject" in self.sets and any(w is not None for w in self.sets["subject"].weights)

    def add_base_samples(self) -> None:
        """The base model's own step-0 no-trigger samples: what it draws without the trigger, on pictures the LoRA
        never trains on, read back from the sample folder once step 0 was sampled."""
        if not self.sets or "base_samples" in self.sets or self.paths is None:
            return
        manifest = self.paths.sample_dir(0) / "manifest.json"
        if not manifest.is_file():
            return
        data = json.loads(manifest.read_text(encoding="utf-8"))
        shots = [s for s in data["samples"] if s.get("kind") == "no_trigger" and s.get("weights", "live") == "live"]
        if not shots:
            return
        m = self.models
        size = tuple(data.get("size") or (self.config.dataset.resolution,) * 2)
        encoder = LatentCache(m.pipe.vae, m.device, m.precision.vae_dtype, None)
        pics = [(f"samples/step-000000/{s['file']}", manifest.parent / s["file"], size, s["prompt"]) for s in shots]
        self.sets["base_samples"] = build_probe_set(pics, encoder, self.config.measure.timesteps,
                                                    self.config.measure.seed, m.device)

    def due(self, step: int, total_steps: int) -> bool:
        if not self.sets or not self.dist.is_main:
            return False
        return step == 0 or step >= total_steps or step in self.plan.checkpoint_steps or step in self.plan.sample_steps

    def measure(self, step: int, write: bool = True) -> dict[str, Any] | None:
        """Measure every set at ``step`` and (``write``) append the row to ``measures.jsonl``. Where the card runs
        out of memory the forward passes are halved and the step measured again; out of memory one picture at a
        time, the measures are off for the rest of the run, said by one warning (``emit``; without it the error
        is raised), and the run trains on: None."""
        while True:
            try:
                return self._measure(step, write)
            except RuntimeError as e:
                if not is_out_of_memory(e):
                    raise
                failed = e if self._one_at_a_time() else None
                if failed is not None and self.emit is None:
                    raise
            # out of the except block: the failed pass's tensors are let go before the next one
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            if failed is not None:
                self.sets.clear()
                assert self.emit is not None
                said = msg("run.measures_out_of_memory", step=step, reason=error_reason(failed))
                self.emit(Alert(level="warning", kind="measures", step=step, message=said))
                return None
            self.shrink *= 2

    def _one_at_a_time(self) -> bool:
        """Whether every forward pass of the measures holds a single noised picture already."""
        denoise = self._denoiser()
        return all(denoise.items(b) == 1 for pset in self.sets.values() for b in pset.buckets)

    def _denoiser(self) -> Denoiser:
        m, batch = self.models, self.config.train.batch_size
        return Denoiser(m.adapter, m.denoiser, m.text, m.schedule, m.precision, chunk=max(1, 2 * batch), batch=batch,
                        shrink=self.shrink)

    def _measure(self, step: int, write: bool) -> dict[str, Any]:
        t0 = time.perf_counter()
        if step == 0:
            self.add_base_samples()
        m = self.models
        denoise = self._denoiser()
        ts = self.timesteps
        row: dict[str, Any] = {"step": step, "timesteps": ts}
        with preserved_training_state(m.modules()):
            if "subject" in self.sets:
                row["subject"] = subject_losses(self.sets["subject"], denoise, ts, self.config.dataset.trigger)
                if step == 0:  # what each picture was captioned: the diagnosis groups pictures by their tags
                    row["captions"] = dict(zip(self.sets["subject"].keys, self.sets["subject"].captions))
                if self.masked:
                    row["masked"] = True  # a masked run: its prior drift reads otherwise (docs/doctor.md)
            # the base model's own samples where there are some (never trained on); else the prior pictures; a
            # masked run's also with the trigger put in, to tell the captions' other words learning the subject
            # from the backgrounds moving freely
            for name in ("base_samples", "prior"):
                if name in self.sets:
                    trigger = self.config.dataset.trigger if self.masked else ""
                    row[name] = prior_losses(self.sets[name], denoise, ts, m.lora, trigger)
                    break
            if "held_out" in self.sets:
                row["held_out"] = plain_losses(self.sets["held_out"], denoise, ts)
        row["seconds"] = round(time.perf_counter() - t0, 3)
        if write and self.paths is not None:
            append_jsonl(self.paths.measures, row)
        return row
