"""``run_training(config, sink, commands)``: train a Stable Diffusion LoRA, report every step, obey commands.

Read top to bottom: :func:`run_training` prepares a :class:`Trainer` and calls its named steps. One
optimizer step is forward/backward per micro-batch, then unscale → clip → one host sync → the guard's
decision → optimizer step → EMA. Nothing here imports a UI.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from . import checkpoint as ckpt
from .commands import Commands
from .conditioning import TextConditioner
from .config import Config, diff_configs, from_dict, read_toml, save_config
from .data import (
    LatentCache,
    captions_are_augmented,
    epoch_batches,
    image_tensor,
    process_caption,
    samples_from_report,
)
from .distributed import Dist
from .ema import LoraEMA
from .errors import UserError
from .events import MultiSink, RunFolderSink, Sink, event
from .export import NonFiniteTensorError, rotate_checkpoints, write_diffusers, write_kohya
from .guard import Decision, Guard
from .io import atomic_write_json
from .lora import attach_lora
from .models import load_pipeline
from .numerics import (
    StepHealth,
    first_bad_module,
    first_bad_tensor,
    grad_norms,
    read_health,
    weight_norm_flag,
)
from .optim import build_optimizer, build_scheduler
from .plan import make_plan
from .precision import decide_precision, make_grad_scaler, resolve_device
from .rundir import RunPaths, latest_checkpoint, new_run_dir, write_status
from .sampling import expand_prompts, sampling_pipeline, write_samples

EXIT_CODES = {"finished": 0, "stopped": 130, "guard_stopped": 3, "failed": 1}
UPDATE_RATIO_EVERY = 10  # steps between measurements of ‖Δw‖/‖w‖ (one extra copy of the LoRA weights)


@dataclass
class RunResult:
    status: str  # finished | stopped | guard_stopped | failed
    run_dir: Path | None
    final_lora: Path | None = None
    message: str = ""

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]


class Hooks:
    """Test seams: override to inject faults. Production runs use this no-op base."""

    def before_step(self, trainer: Trainer) -> None: ...

    def after_backward(self, trainer: Trainer) -> None: ...

    def batch_latents(self, trainer: Trainer, latents: torch.Tensor) -> torch.Tensor:
        return latents

    def after_step(self, trainer: Trainer) -> None: ...


def run_training(
    config: Config,
    sink: Sink | None = None,
    commands: Commands | None = None,
    *,
    resume: str | Path | None = None,
    parent: str | Path | None = None,
    hooks: Hooks | None = None,
) -> RunResult:
    """Train a LoRA as ``config`` says. Events go to ``sink`` (and the run folder); ``commands`` steer it.

    Bad input raises :class:`UserError` before anything is written; a failure after that is reported as a
    ``failed`` event and a ``failed`` result, never lost silently.
    """
    commands = commands or Commands()
    dist = Dist.from_env()
    trainer = Trainer(config, sink, commands, dist, hooks or Hooks())
    trainer.prepare_run_folder(resume=resume, parent=parent)
    try:
        trainer.setup(resume=bool(resume))
        trainer.announce_start()
        status = trainer.train()
    except UserError:
        trainer.fail_quietly()
        raise
    except Exception as e:  # the run folder and the UI must learn why; re-raising would lose it in a thread
        return trainer.fail(e)
    return trainer.finish(status)


class Trainer:
    def __init__(self, config: Config, sink: Sink | None, commands: Commands, dist: Dist, hooks: Hooks):
        self.config = config
        self.commands = commands
        self.dist = dist
        self.hooks = hooks
        self.external_sink = sink
        self.sink: Sink = sink or (lambda ev: None)
        self.paths: RunPaths | None = None
        self.global_step = 0
        self.epoch = 0
        self.lr_factor = 1.0
        self.started_at = time.time()
        self.ema: LoraEMA | None = None
        self.scaler = None
        self.last_good: dict[str, Any] | None = None
        self.last_batch_files: list[str] = []
        self.failure: dict[str, Any] | None = None
        self._update_ref: list[torch.Tensor] | None = None
        self._rows: list[dict[str, Any]] = []
        self._loader = None  # a thread pool that loads the next step's images when latents are not cached
        self._pixels: dict[tuple[int, int], Any] = {}
        self._findings_emitted: set[str] = set()

    # ----------------------------------------------------------------------------------------- setup

    def emit(self, event_type: str, /, **fields: Any) -> None:
        if self.dist.is_main:
            ev = event(event_type, step=fields.pop("step", self.global_step), **fields)
            if event_type == "step":
                self._rows.append(ev)
            self.sink(ev)

    def prepare_run_folder(self, resume, parent) -> None:
        cfg = self.config
        if resume:
            self.paths = RunPaths(Path(resume))
            if not self.paths.config.is_file():
                raise UserError(f"--resume {resume}: not a run folder (no config.toml)")
        else:
            self.report, self.plan = self._scan_and_plan(cfg)
            self.paths = new_run_dir(cfg.save.output_dir, cfg.save.name) if self.dist.is_main else None
            self.paths = self.dist.broadcast_object(self.paths)
        if resume:
            self.report, self.plan = self._scan_and_plan(cfg)
        if self.dist.is_main:
            save_config(cfg, self.paths.config)
            atomic_write_json(self.paths.plan, self.plan.to_json())
            self._write_journal(parent)
            write_status(self.paths, "running", pid_started=self.started_at)
            self.sink = MultiSink([RunFolderSink(self.paths.root), *( [self.external_sink] if self.external_sink else [])])

    def _scan_and_plan(self, cfg: Config):
        from .dataset import scan_dataset

        if not cfg.dataset.path:
            raise UserError("dataset.path is empty: give the folder of training images")
        report = scan_dataset(cfg.dataset)
        if not report.usable:
            raise UserError(f"dataset.path {cfg.dataset.path}: no usable images (run check-dataset for details)")
        return report, make_plan(cfg, report)

    def _write_journal(self, parent) -> None:
        entry: dict[str, Any] = {"run": str(self.paths.root), "parent": None, "changes": {}}
        if parent:
            parent_cfg_path = RunPaths(Path(parent)).config
            if parent_cfg_path.is_file():
                parent_cfg = from_dict(read_toml(parent_cfg_path), origin=str(parent_cfg_path))
                entry["parent"] = str(Path(parent))
                entry["changes"] = {k: list(v) for k, v in diff_configs(parent_cfg, self.config).items()}
        atomic_write_json(self.paths.journal, entry)

    def setup(self, resume: bool = False) -> None:
        """Models, data (and caches), optimizer: everything before the first step."""
        self.load_models()
        self.prepare_data()
        self.prepare_optimization()
        if resume:
            self.resume_from_checkpoint()

    def load_models(self) -> None:
        cfg = self.config
        self.device = resolve_device(cfg.train.device) if self.dist.world_size == 1 else self.dist.device
        self.precision = decide_precision(cfg.train.precision, self.device)
        pipe, self.base_info = load_pipeline(cfg.model, self.precision.weight_dtype)
        if self.base_info.distilled and not cfg.model.allow_distilled:
            raise UserError(
                f"model.base {cfg.model.base!r} looks distilled ({self.base_info.distilled_reason}); LoRA training "
                "undoes distillation and blurs the pictures. Train on the original model, or set "
                "model.allow_distilled = true to try anyway"
            )
        self.family = self.base_info.family
        self.precision = decide_precision(cfg.train.precision, self.device, pipe.vae.config.get("force_upcast", False))
        pipe.to(self.device)
        pipe.vae.to(dtype=self.precision.vae_dtype)
        self.pipe = pipe
        self.unet = pipe.unet
        self.noise_scheduler = _training_scheduler(pipe, self.base_info.prediction_type)
        self.lora = attach_lora(pipe, cfg.lora, self.family, cfg.train.seed)
        if cfg.train.channels_last:
            self.unet.to(memory_format=torch.channels_last)
        if cfg.train.compile:
            self.unet.forward = torch.compile(self.unet.forward)
        if cfg.train.gradient_checkpointing:
            self.unet.enable_gradient_checkpointing()
            for role, m in self.lora.models.items():
                if role != "unet" and hasattr(m, "gradient_checkpointing_enable"):
                    m.gradient_checkpointing_enable()
        self.unet.train()
        for role, m in self.lora.models.items():
            if role != "unet":
                m.train()
        self.trainable = [p for _, p in self.lora.named_trainable()]
        self.named_trainable = self.lora.named_trainable()
        self.train_modules = self.dist.wrap(self.lora.models)

    def prepare_data(self) -> None:
        cfg = self.config
        self.samples = samples_from_report(self.report, cfg.dataset.trigger)
        te_frozen = not cfg.lora.train_text_encoder
        self.text = TextConditioner(self.pipe, self.family, self.device,
                                    cache=te_frozen and not captions_are_augmented(cfg.dataset))
        self.latents: LatentCache | None = None
        if cfg.dataset.cache_latents:
            disk = Path(cfg.save.output_dir) / ".cache" / "latents" if cfg.dataset.cache_to_disk else None
            if disk is not None:
                disk.mkdir(parents=True, exist_ok=True)
            self.latents = LatentCache(self.pipe.vae, self.device, self.precision.vae_dtype, disk)
            flips = (False, True) if cfg.dataset.flip else (False,)
            t0 = time.perf_counter()
            self.latents.fill(self.samples, flips, lambda done, total: self._progress("cache_latents", done, total, t0))
            self.pipe.vae.to("cpu") if self.device.type != "cpu" else None  # the VAE is only needed to sample now
        self.sample_prompts = expand_prompts(cfg.sample.prompts, cfg.dataset.trigger)

    def _progress(self, task: str, done: int, total: int, t0: float) -> None:
        if done == total or done == 1 or done % max(1, total // 20) == 0:
            self.emit("progress", task=task, done=done, total=total, seconds=round(time.perf_counter() - t0, 3))

    def prepare_optimization(self) -> None:
        cfg = self.config
        groups = [{"params": self.lora.trainable("unet"), "lr": cfg.optim.lr, "name": "unet"}]
        for role in self.lora.models:
            if role != "unet":
                groups.append({"params": self.lora.trainable(role), "lr": cfg.effective_te_lr, "name": role})
        self.optimizer = build_optimizer(groups, cfg, self.device)
        self.total_steps = self.plan.total_steps
        self.lr_scheduler = build_scheduler(self.optimizer, cfg, self.total_steps)
        self.scaler = make_grad_scaler(self.precision, cfg.train.fp16_init_scale, cfg.train.fp16_growth_interval)
        if cfg.ema.enabled:
            self.ema = LoraEMA(self.trainable, cfg.ema.decay, cfg.ema.warmup)
        self.guard = Guard(cfg.guard.on_nonfinite, self.precision.precision, cfg.guard.max_consecutive_skips,
                           cfg.guard.max_rollbacks)
        self.batches_per_epoch = self.plan.batches_per_epoch
        self.steps_per_epoch = self.plan.steps_per_epoch
        self.last_good = ckpt.snapshot(self)

    def resume_from_checkpoint(self) -> None:
        last = latest_checkpoint(self.paths)
        if last is None:
            raise UserError(f"--resume {self.paths.root}: it has no checkpoint to resume from")
        state = ckpt.load_state(last / "state.pt")
        ckpt.restore(self, state)
        self.lr_factor = float(state.get("lr_factor", 1.0))
        self.last_good = state
        if self.dist.is_main:  # rows past the checkpoint were never saved; they will be trained again
            from .io import atomic_write_text, read_jsonl

            rows = [r for r in read_jsonl(self.paths.metrics) if r.get("step", 0) <= self.global_step]
            import json

            atomic_write_text(self.paths.metrics, "".join(json.dumps(r) + "\n" for r in rows))
        self.emit("resumed", checkpoint=str(last))

    def announce_start(self) -> None:
        n_params = sum(p.numel() for p in self.trainable)
        self.emit(
            "started",
            run_dir=str(self.paths.root) if self.paths else None,
            plan=self.plan.to_json(),
            device=str(self.device),
            precision=self.precision.to_json(),
            trainable_params=n_params,
            base=self.base_info.to_json(),
            world_size=self.dist.world_size,
        )
        if self.precision.fallback:
            self.emit("alert", level="warning", kind="precision_fallback", message=self.precision.fallback)
        for w in self.base_info.warnings:
            self.emit("alert", level="warning", kind="distilled_base", message=w)

    # ------------------------------------------------------------------------------------------ loop

    def train(self) -> str:
        cfg = self.config
        if self.global_step == 0 and cfg.sample.enabled and 0 in self.plan.sample_steps:
            self.sample(0)
        while self.global_step < self.total_steps:
            epoch = self.global_step // self.steps_per_epoch
            self.epoch = epoch
            batches = self.dist.shard(epoch_batches(self.samples, cfg.train.batch_size, cfg.train.seed, epoch))
            first = (self.global_step % self.steps_per_epoch) * cfg.train.grad_accum
            for start in range(first, len(batches), cfg.train.grad_accum):
                group = batches[start : start + cfg.train.grad_accum]
                nxt = start + cfg.train.grad_accum
                self.prefetch(epoch, nxt, batches[nxt : nxt + cfg.train.grad_accum])
                outcome = self.optimizer_step(group, epoch, start)
                if outcome in ("stop", "guard_stop"):
                    return "guard_stopped" if outcome == "guard_stop" else "stopped"
                if outcome == "rollback":
                    break  # the epoch and position are recomputed from the restored step
                if self.global_step >= self.total_steps:
                    break
            else:
                continue
        return "finished"

    def prefetch(self, epoch: int, start: int, group) -> None:
        """Without a latent cache, load the next step's images on a worker thread while this step computes
        (PIL decoding and resizing release the GIL), so data loading is off the critical path."""
        if self.latents is not None or not group:
            return
        if self._loader is None:
            from concurrent.futures import ThreadPoolExecutor

            self._loader = ThreadPoolExecutor(max_workers=max(1, self.config.train.num_workers),
                                              thread_name_prefix="lora-data")
        for i, batch in enumerate(group):
            pos = start + i
            key = (epoch, pos)
            if key not in self._pixels:
                flips = self._flips(epoch, pos, len(batch))
                self._pixels[key] = self._loader.submit(
                    lambda b=batch, f=flips: torch.stack([image_tensor(s.path, s.bucket, x) for s, x in zip(b, f)]))

    def _flips(self, epoch: int, pos: int, n: int) -> list[bool]:
        if not self.config.dataset.flip:
            return [False] * n
        import random

        rng = random.Random(f"{self.config.train.seed}:{epoch}:{pos}:flip")
        return [rng.random() < 0.5 for _ in range(n)]

    def _batch_pixels(self, batch, epoch: int, pos: int, flips: list[bool]) -> torch.Tensor:
        future = self._pixels.pop((epoch, pos), None)
        if future is not None:
            return future.result()
        return torch.stack([image_tensor(s.path, s.bucket, f) for s, f in zip(batch, flips)])

    def optimizer_step(self, group, epoch: int, start: int = 0) -> str:
        cfg = self.config
        t0 = time.perf_counter()
        self.hooks.before_step(self)
        loss_sum = torch.zeros((), device=self.device)
        self.last_batch_files = [s.rel for batch in group for s in batch]
        for micro, batch in enumerate(group):
            loss = self.compute_loss(batch, epoch, micro, start + micro) / len(group)
            if self.scaler is not None:
                self.scaler.scale(loss).backward()
            else:
                loss.backward()
            loss_sum = loss_sum + loss.detach() * len(group)
        self.dist.average_gradients()
        self.hooks.after_backward(self)
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)  # unscale first, so clipping sees true gradient sizes
        grad_norm, clipped = grad_norms(self.trainable, cfg.optim.max_grad_norm)
        guarded = cfg.guard.enabled
        if guarded:
            weight_norm, params_ok = weight_norm_flag(self.trainable)
            ema_ok = self.ema.finite_flag() if self.ema is not None else None
            update_norm = self._update_norm()
            ema_drift = self.ema.drift() if self.ema is not None and update_norm is not None else None
        else:
            weight_norm = params_ok = torch.ones((), device=self.device)
            ema_ok = update_norm = ema_drift = None
        health = read_health(
            loss_sum, len(group), grad_norm, clipped,
            self.scaler._scale if self.scaler is not None else None,  # the tensor itself: no sync
            params_ok, ema_ok, weight_norm, update_norm,
            all_reduce=self.dist.all_reduce_health if self.dist.world_size > 1 else None,
            ema_drift=ema_drift,
        )
        if guarded:
            decision = self.guard.decide(health)
        else:
            overflow = self.scaler is not None and not health.grad_finite
            decision = Decision(apply=not overflow, skipped=overflow, nonfinite=None)
        where = self.locate(decision.nonfinite) if decision.nonfinite else None  # before the grads are cleared
        if decision.apply or (self.scaler is not None and decision.action == "continue"):
            if self.scaler is not None:
                self.scaler.step(self.optimizer)  # skips by itself when the unscale found inf/nan
                self.scaler.update()
            else:
                self.optimizer.step()
            if decision.apply:
                self.lr_scheduler.step()
                if self.ema is not None:
                    self.ema.update()
        self.optimizer.zero_grad(set_to_none=True)
        return self.after_step(health, decision, epoch, time.perf_counter() - t0, where)

    def compute_loss(self, batch, epoch: int, micro: int, pos: int = 0) -> torch.Tensor:
        cfg = self.config
        # Every random draw of this micro-batch comes from (seed, step, micro) or from its place in the
        # epoch: identical after a resume, and computable ahead of time by the prefetcher.
        gen = torch.Generator().manual_seed(hash((cfg.train.seed, self.global_step, micro)) & 0x7FFF_FFFF)
        crng = _caption_rng(cfg.train.seed, epoch, self.global_step, micro)
        flips = self._flips(epoch, pos, len(batch))
        captions = [process_caption(s.caption, cfg.dataset, crng) for s in batch]
        if self.latents is not None:
            latents = self.latents.batch(batch, flips)
        else:
            pixels = self._batch_pixels(batch, epoch, pos, flips)
            with torch.no_grad():
                latents = LatentCache.encode(self._encoder(), pixels)
        latents = self.hooks.batch_latents(self, latents)
        noise = torch.randn(latents.shape, generator=gen).to(self.device)
        if cfg.train.noise_offset:
            noise = noise + cfg.train.noise_offset * torch.randn((*latents.shape[:2], 1, 1), generator=gen).to(self.device)
        timesteps = torch.randint(0, self.noise_scheduler.config.num_train_timesteps, (latents.shape[0],),
                                  generator=gen).to(self.device)
        noisy = self.noise_scheduler.add_noise(latents, noise, timesteps)
        if self.base_info.prediction_type == "v_prediction":
            target = self.noise_scheduler.get_velocity(latents, noise, timesteps)
        else:
            target = noise
        with self.precision.autocast():
            hidden, pooled = self.text(captions)
            added = self.text.added_cond_kwargs(pooled, [s.bucket for s in batch])
            pred = self.unet(noisy.to(self.precision.weight_dtype), timesteps, hidden,
                             added_cond_kwargs=added).sample
        loss = F.mse_loss(pred.float(), target.float(), reduction="none").mean(dim=(1, 2, 3))
        if cfg.train.min_snr_gamma > 0:
            loss = loss * _min_snr_weights(self.noise_scheduler, timesteps, cfg.train.min_snr_gamma,
                                           self.base_info.prediction_type)
        return loss.mean()

    def _encoder(self) -> LatentCache:
        if not hasattr(self, "_pixel_encoder"):
            self._pixel_encoder = LatentCache(self.pipe.vae, self.device, self.precision.vae_dtype, None)
        return self._pixel_encoder

    def _update_norm(self) -> torch.Tensor | None:
        """‖w_t − w_{t−k}‖ every k steps, for the 'learning stalled' detector; None on other steps."""
        if self.global_step % UPDATE_RATIO_EVERY != 0:
            return None
        with torch.no_grad():
            current = [p.detach().float().clone() for p in self.trainable]
            ref, self._update_ref = self._update_ref, current
            if ref is None:
                return None
            return torch.stack(torch._foreach_norm(torch._foreach_sub(current, ref))).norm()

    def after_step(self, h: StepHealth, decision: Decision, epoch: int, seconds: float, where: str | None) -> str:
        cfg = self.config
        if decision.apply:
            self.global_step += 1
        row_step = self.global_step if decision.apply else self.global_step + 1
        self.emit(
            "step",
            step=row_step,
            epoch=epoch + 1,
            loss=h.loss,
            grad_norm=h.grad_norm,
            grad_norm_clipped=h.grad_norm_clipped,
            lr=self.lr_scheduler.get_last_lr()[0],
            loss_scale=h.loss_scale,
            skipped=decision.skipped,
            nonfinite=decision.nonfinite,
            sec_per_step=round(seconds, 6),
            weight_norm=h.weight_norm if cfg.guard.enabled else None,
            update_ratio=h.update_ratio,
            ema_drift=h.ema_drift,
            rollbacks=self.guard.rollbacks,
        )
        if cfg.guard.detectors and decision.apply and self.global_step % cfg.guard.detect_every == 0:
            self.run_detectors()
        if decision.nonfinite is not None:
            self.report_nonfinite(h, decision, row_step, where)
        if decision.action == "stop":
            return "guard_stop"
        if decision.action == "rollback":
            self.rollback(decision)
            return "rollback"
        self.hooks.after_step(self)
        if not decision.apply:
            return "continue"
        step = self.global_step
        wants_save = step in self.plan.checkpoint_steps or self.commands.take_save()
        if wants_save and step < self.total_steps:
            self.save_checkpoint(step)
        if cfg.sample.enabled and ((step in self.plan.sample_steps and step < self.total_steps)
                                   or self.commands.take_sample()):
            self.sample(step)
        if self.commands.stop_requested:
            return "stop"
        return "continue"

    # ----------------------------------------------------------------------------------- the guard

    def run_detectors(self, final: bool = False) -> None:
        """Findings short of NaN, each emitted once as a ``finding`` event with its evidence."""
        if not self.dist.is_main:
            return
        from .detectors import metric_findings, sample_findings

        found = metric_findings(list(self._rows), self.plan.to_json(), self.config)
        if final and self.paths.samples.is_dir():
            found += sample_findings(self.paths.samples)
        for f in found:
            if f.signal not in self._findings_emitted:
                self._findings_emitted.add(f.signal)
                self.emit("finding", **f.to_json())

    def locate(self, broken: str) -> str | None:
        """The first module (in model order) whose gradient, weight or EMA shadow is non-finite."""
        if broken == "grad":
            return first_bad_module(self.named_trainable, "grad")
        if broken == "param":
            return first_bad_module(self.named_trainable, "param")
        if broken == "ema" and self.ema is not None:
            return first_bad_tensor([(n, s) for (n, _), s in zip(self.named_trainable, self.ema.shadow)])
        return None

    def report_nonfinite(self, h: StepHealth, decision: Decision, step: int, where: str | None) -> None:
        details = {
            "first": decision.nonfinite,
            # params/EMA are checked after the step that broke them, i.e. the previous optimizer step
            "broke_at_step": step - 1 if decision.nonfinite in ("param", "ema") else step,
            "module": where,
            "files": self.last_batch_files,
            "lr": self.lr_scheduler.get_last_lr()[0],
            "loss_scale": h.loss_scale,
            "precision": self.precision.precision,
            "loss": h.loss,
            "grad_norm": h.grad_norm,
            "action": decision.action,
            "policy": self.guard.policy,
            "reason": decision.reason,
        }
        if self.guard.first_failure is None:
            self.guard.first_failure = details
        self.failure = details
        self.emit("alert", level="error", kind=f"nonfinite_{decision.nonfinite}", step=step, **details)

    def rollback(self, decision: Decision) -> None:
        from .remedies import rollback_change

        state = self.last_good
        ckpt.restore(self, state)
        self.lr_factor = float(state.get("lr_factor", 1.0))
        change = rollback_change(self.config, self.precision, self.failure or {})
        self.apply_change(change)
        self._update_ref = None
        self.emit("rollback", to_step=self.global_step, change=change, rollbacks=self.guard.rollbacks)

    def apply_change(self, change: dict[str, Any]) -> None:
        """One setting changed mid-run (the seeds: change one thing at a time), recorded in the config."""
        key, new = change["key"], change["new"]
        section, name = key.split(".")
        setattr(getattr(self.config, section), name, new)
        if key == "train.precision":
            self.switch_precision(new)
        if key == "optim.lr":
            factor = new / change["old"]
            self.lr_factor *= factor
            for g in self.optimizer.param_groups:
                g["lr"] *= factor
                if "initial_lr" in g:
                    g["initial_lr"] *= factor
            self.lr_scheduler.base_lrs = [lr * factor for lr in self.lr_scheduler.base_lrs]
        if self.dist.is_main:
            save_config(self.config, self.paths.config)
        self.emit("change_applied", **change)

    def switch_precision(self, precision: str) -> None:
        """fp16 → bf16 mid-run: frozen weights recast, autocast dtype changed, the loss scaler dropped."""
        self.precision = decide_precision(precision, self.device, self.pipe.vae.config.get("force_upcast", False))
        for m in self.lora.models.values():
            for p in m.parameters():
                if not p.requires_grad and p.is_floating_point():
                    p.data = p.data.to(self.precision.weight_dtype)
        self.scaler = make_grad_scaler(self.precision, self.config.train.fp16_init_scale, self.config.train.fp16_growth_interval)
        self.guard.precision = self.precision.precision
        if self.last_good is not None:
            self.last_good["scaler"] = None

    # -------------------------------------------------------------------------------- saves, samples

    def _export_ctx(self, step: int, weights: str) -> dict[str, Any]:
        return {
            "config": self.config, "plan": self.plan, "report": self.report, "family": self.family,
            "unet_config": dict(self.unet.config), "epoch": self.epoch + 1, "step": step,
            "started_at": self.started_at, "run_id": self.paths.root.name if self.paths else "",
            "precision": self.precision.precision, "prediction_type": self.base_info.prediction_type,
            "weights": weights,
        }

    def write_lora_files(self, folder: Path, step: int) -> list[Path]:
        states = self.lora.state_dicts()
        written = [
            write_kohya(folder / "lora.safetensors", states, self._export_ctx(step, "live")),
            write_diffusers(folder / "lora_diffusers.safetensors", states, self.lora.config_by_role, self.family),
        ]
        if self.ema is not None:
            with self.ema.swapped_in():
                ema_states = self.lora.state_dicts()
            written.append(write_kohya(folder / "lora_ema.safetensors", ema_states, self._export_ctx(step, "ema")))
        return written

    def save_checkpoint(self, step: int) -> Path | None:
        state = ckpt.snapshot(self)
        self.last_good = state
        if not self.dist.is_main:
            return None
        folder = self.paths.step_dir(step)
        try:
            files = self.write_lora_files(folder, step)
            ckpt.save_state(state, folder / "state.pt")
        except NonFiniteTensorError as e:
            self.emit("alert", level="error", kind="save_refused", message=str(e), file=str(e.path), tensor=e.key)
            return None
        removed = rotate_checkpoints(self.paths.checkpoints, self.config.save.keep_last)
        self.emit("checkpoint_saved", path=str(folder), files=[f.name for f in files],
                  removed=[p.name for p in removed])
        return folder

    def sample(self, step: int) -> None:
        if not self.dist.is_main:
            return
        if self.pipe.vae.device != self.device:
            self.pipe.vae.to(self.device)
        if not hasattr(self, "_sampler"):
            self._sampler = sampling_pipeline(self.pipe, self.base_info.prediction_type)
        size = (self.config.dataset.resolution, self.config.dataset.resolution)
        folder = self.paths.sample_dir(step)
        t0 = time.perf_counter()
        modules = list(self.lora.models.values())
        records = write_samples(self._sampler, modules, self.sample_prompts, self.config.sample, size,
                                self.precision, folder, step, ema=self.ema if step > 0 else None)
        self.emit("sample_ready", step=step, path=str(folder), samples=records,
                  seconds=round(time.perf_counter() - t0, 3))

    # ------------------------------------------------------------------------------------- endings

    def finish(self, status: str) -> RunResult:
        final = None
        if status in ("finished", "stopped") and self.dist.is_main:
            final = self.save_final()
            if self.config.sample.enabled and status == "finished" and self.global_step in self.plan.sample_steps:
                self.sample(self.global_step)
        if self._loader is not None:
            self._loader.shutdown(wait=False, cancel_futures=True)
        if status != "failed" and self.config.guard.detectors:
            self.run_detectors(final=True)
        message = ""
        if status == "guard_stopped":
            message = f"stopped by the numerics guard at step {self.global_step + 1}"
            self.emit("stopped", reason="guard", failure=self.failure, message=message)
        elif status == "stopped":
            self.emit("stopped", reason="user", final=str(final) if final else None)
        else:
            self.emit("finished", final=str(final) if final else None, steps=self.global_step)
        if self.dist.is_main:
            write_status(self.paths, status, step=self.global_step)
            if status == "guard_stopped":
                self._write_diagnosis()
        self.dist.barrier()
        return RunResult(status, self.paths.root if self.paths else None, final, message)

    def save_final(self) -> Path | None:
        folder = self.paths.final
        try:
            self.write_lora_files(folder, self.global_step)
            ckpt.save_state(ckpt.snapshot(self), self.paths.step_dir(self.global_step) / "state.pt")
        except NonFiniteTensorError as e:
            self.emit("alert", level="error", kind="save_refused", message=str(e), file=str(e.path), tensor=e.key)
            return None
        step_dir = self.paths.step_dir(self.global_step)
        for f in folder.glob("*.safetensors"):
            (step_dir / f.name).write_bytes(f.read_bytes())
        self.emit("checkpoint_saved", path=str(step_dir), files=sorted(p.name for p in step_dir.iterdir()),
                  final=True, removed=[])
        return folder / "lora.safetensors"

    def _write_diagnosis(self) -> None:
        try:
            from .diagnose import diagnose

            diagnose(self.paths.root)
        except ImportError:
            pass

    def fail(self, error: Exception) -> RunResult:
        tb = traceback.format_exc()
        self.emit("failed", error=f"{type(error).__name__}: {error}", traceback=tb)
        if self.dist.is_main and self.paths is not None:
            write_status(self.paths, "failed", error=str(error))
        return RunResult("failed", self.paths.root if self.paths else None, None, f"{type(error).__name__}: {error}")

    def fail_quietly(self) -> None:
        if self.dist.is_main and self.paths is not None:
            write_status(self.paths, "failed", error="bad input")


def _training_scheduler(pipe, prediction_type: str):
    from diffusers import DDPMScheduler

    return DDPMScheduler.from_config(pipe.scheduler.config, prediction_type=prediction_type)


def _caption_rng(seed: int, epoch: int, step: int, micro: int):
    import random

    return random.Random(f"{seed}:{epoch}:{step}:{micro}:captions")


def _min_snr_weights(scheduler, timesteps, gamma: float, prediction_type: str) -> torch.Tensor:
    """Min-SNR-γ loss weights (Hang et al. 2023, arXiv:2303.09556): min(SNR, γ) / SNR, or / (SNR + 1) for v."""
    alphas_cumprod = scheduler.alphas_cumprod.to(timesteps.device)
    ac = alphas_cumprod[timesteps]
    snr = ac / (1 - ac)
    clipped = torch.minimum(snr, torch.full_like(snr, gamma))
    return clipped / (snr + 1) if prediction_type == "v_prediction" else clipped / snr
