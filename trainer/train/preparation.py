"""Everything before the first step: the run folder, models and LoRA, data and caches, optimizer, resume.

A mixin of :class:`trainer.train.loop.Trainer`.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import torch

from trainer.config.schema import Config, diff_configs, from_dict, read_toml, save_config
from trainer.data.batches import LatentCache, captions_are_augmented, samples_from_report
from trainer.data.holdout import split_holdout
from trainer.doctor.guard import Guard
from trainer.errors import UserError
from trainer.io import atomic_write_json, atomic_write_text, read_jsonl
from trainer.message import msg
from trainer.models.base import load_pipeline
from trainer.models.conditioning import TextConditioner
from trainer.models.family import family as model_family
from trainer.models.lora import EMBEDDING_ROLE, attach_lora
from trainer.models.precision import decide_precision, make_grad_scaler, resolve_device
from trainer.plan.schedule import build_scheduler
from trainer.plan.steps import make_plan
from trainer.run.events import MultiSink, RunFolderSink
from trainer.run.rundir import RunPaths, latest_checkpoint, new_run_dir, run_status, write_status
from trainer.run.samples import expand_prompts
from trainer.run.worded import write_worded_json
from trainer.train import checkpoint as ckpt
from trainer.train.ema import LoraEMA
from trainer.train.optim import build_optimizer
from trainer.train.parts import TrainerParts
from trainer.train.state import TrainState
from trainer.train.tensorboard_log import TensorBoardSink


class PreparationMixin(TrainerParts):
    def prepare_run_folder(self, resume, parent) -> None:
        cfg = self.config
        if resume:
            self.paths = RunPaths(Path(resume))
            if not self.paths.config.is_file():
                raise UserError(msg("error.resume.not_a_run", resume=resume))
            status = run_status(self.paths.root)
            if status.get("status") == "running" and status.get("pid") not in (None, os.getpid()):
                raise UserError(msg("error.resume.running", resume=resume, pid=status["pid"]))
        else:
            self.report, self.plan = self._scan_and_plan(cfg)
            self.paths = new_run_dir(cfg.save.output_dir, cfg.save.name) if self.dist.is_main else None
            self.paths = self.dist.broadcast_object(self.paths)
        if resume:
            self.report, self.plan = self._scan_and_plan(cfg)
        if self.dist.is_main:
            save_config(cfg, self.paths.config)
            write_worded_json(self.paths.plan, self.plan.to_json())
            self._write_journal(parent)
            write_status(self.paths, "running", pid_started=self.started_at)
            self.sink = MultiSink([RunFolderSink(self.paths.root), TensorBoardSink(self.paths.root),
                                   *([self.external_sink] if self.external_sink else [])])

    def _scan_and_plan(self, cfg: Config):
        from trainer.data.scan import scan_dataset

        if not cfg.dataset.path:
            raise UserError(msg("error.train.no_dataset"))
        report = scan_dataset(cfg.dataset)
        if not report.usable:
            raise UserError(msg("error.train.no_usable", path=cfg.dataset.path))
        report, self.held_out = split_holdout(report, cfg.validation.holdout, cfg.validation.seed)
        self.held_out += self.held_out_folder()
        return report, make_plan(cfg, report, self.dist.world_size)

    def _write_journal(self, parent) -> None:
        assert self.paths is not None
        entry: dict[str, Any] = {"run": str(self.paths.root), "parent": None, "changes": {}}
        if parent:
            parent_cfg_path = RunPaths(Path(parent)).config
            if parent_cfg_path.is_file():
                parent_cfg = from_dict(read_toml(parent_cfg_path), origin=str(parent_cfg_path))
                entry["parent"] = str(Path(parent))
                entry["changes"] = {k: list(v) for k, v in diff_configs(parent_cfg, self.config).items()}
        atomic_write_json(self.paths.journal, entry)

    def load_models(self) -> None:
        cfg = self.config
        self.device = resolve_device(cfg.train.device) if self.dist.world_size == 1 else self.dist.device
        self.precision = decide_precision(cfg.train.precision, self.device)
        pipe, self.base_info = load_pipeline(cfg.model, self.precision.weight_dtype)
        if self.base_info.distilled and not cfg.model.allow_distilled:
            raise UserError(msg("error.train.distilled", base=cfg.model.base, reason=self.base_info.distilled_reason))
        self.family = self.base_info.family
        self.precision = decide_precision(cfg.train.precision, self.device, pipe.vae.config.get("force_upcast", False))
        pipe.to(self.device)
        pipe.vae.to(dtype=self.precision.vae_dtype)
        self.pipe = pipe
        self.adapter = model_family(self.family)
        self.adapter.prepare_weights(pipe, self.precision.weight_dtype)
        self.denoiser = self.adapter.denoiser(pipe)
        self.schedule = self.adapter.noise_schedule(pipe.scheduler.config, self.base_info.prediction_type)
        self.lora = attach_lora(pipe, cfg.lora, self.family, cfg.train.seed, cfg.dataset.trigger)
        if cfg.train.channels_last and self.device.type == "cuda" and self.adapter.conv_lora:
            # a UNet's convolutions want NHWC on tensor cores; on a CPU it measured 4-7 % slower per step
            # (bench/bench_step.py models)
            self.denoiser.to(memory_format=torch.channels_last)
        if cfg.train.compile:
            self.denoiser.forward = torch.compile(self.denoiser.forward)
        denoiser_role = self.adapter.denoiser_component
        if cfg.train.gradient_checkpointing:
            self.denoiser.enable_gradient_checkpointing()
            for role, m in self.lora.models.items():
                if role != denoiser_role and hasattr(m, "gradient_checkpointing_enable"):
                    m.gradient_checkpointing_enable()  # type: ignore[operator]  # found by hasattr; torch types it Tensor | Module
        self.denoiser.train()
        for role, m in self.lora.models.items():
            if role != denoiser_role:
                m.train()
        self.trainable = [p for _, p in self.lora.named_trainable()]
        self.named_trainable = self.lora.named_trainable()
        self.train_modules = self.dist.wrap(self.lora.models)

    def prepare_data(self) -> None:
        cfg = self.config
        self.samples = samples_from_report(self.report, cfg.dataset.trigger)
        # a trained trigger embedding changes the text encoder's output every step, like a text-encoder LoRA
        te_frozen = not (cfg.lora.train_text_encoder or cfg.lora.trigger_embedding)
        self.text = TextConditioner(self.pipe, self.family, self.device,
                                    cache=te_frozen and not captions_are_augmented(cfg.dataset))
        self.latents: LatentCache | None = None
        self.validation = self.validation_set() if cfg.validation.enabled else None  # while the VAE is here
        self.build_probes()
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
        denoiser_role = self.adapter.denoiser_component
        groups = [{"params": self.lora.trainable(denoiser_role), "lr": cfg.optim.lr, "name": denoiser_role}]
        for role in self.lora.models:
            if role == EMBEDDING_ROLE:  # an embedding's deltas: no weight decay pulling them back to the base
                groups.append({"params": self.lora.trainable(role), "lr": cfg.effective_embedding_lr, "name": role,
                               "weight_decay": 0.0})
            elif role != denoiser_role:
                groups.append({"params": self.lora.trainable(role), "lr": cfg.effective_te_lr, "name": role})
        optimizer = build_optimizer(groups, cfg, self.device)
        self.total_steps = self.plan.total_steps
        self.state = TrainState(
            lora=self.lora,
            optimizer=optimizer,
            lr_scheduler=build_scheduler(optimizer, cfg, self.total_steps),
            scaler=self.new_scaler(),
            ema=LoraEMA(self.trainable, cfg.ema.decay, cfg.ema.warmup) if cfg.ema.enabled else None,
            precision=self.precision.precision,
            new_scaler=self.new_scaler,
            world_size=self.dist.world_size,
            rank=self.dist.rank,
        )
        self.guard = Guard(cfg.guard.on_nonfinite, self.precision.precision, cfg.guard.max_consecutive_skips,
                           cfg.guard.max_rollbacks)
        self.batches_per_epoch = self.plan.batches_per_epoch
        self.steps_per_epoch = self.plan.steps_per_epoch
        self.last_good = ckpt.snapshot(self)

    def new_scaler(self):
        """A fresh fp16 loss scaler for the current precision (None without fp16)."""
        cfg = self.config.train
        return make_grad_scaler(self.precision, cfg.fp16_init_scale, cfg.fp16_growth_interval)

    def resume_from_checkpoint(self) -> None:
        assert self.paths is not None
        last = latest_checkpoint(self.paths)
        if last is None:
            raise UserError(msg("error.resume.no_checkpoint", root=self.paths.root))
        state = ckpt.load_state(last / "state.pt")
        saved_world = int(state.get("world_size", 1))
        if saved_world != self.dist.world_size:
            # the data position is a place in each rank's share of the epoch; another split has other shares
            raise UserError(msg("error.resume.world_size", root=self.paths.root, checkpoint=last.name, saved=saved_world,
                                now=self.dist.world_size))
        ckpt.restore(self, state)
        self.last_good = state
        if self.dist.is_main:  # rows past the checkpoint were never saved; they will be trained again
            rows = [r for r in read_jsonl(self.paths.metrics) if r.get("step", 0) <= self.global_step]
            atomic_write_text(self.paths.metrics, "".join(json.dumps(r) + "\n" for r in rows))
        self.emit("resumed", checkpoint=str(last), run_dir=str(self.paths.root))

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
