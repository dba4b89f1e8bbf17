"""``run_training(config, sink, commands)``: train a Stable Diffusion LoRA, report every step, obey commands.

The recipe, read top to bottom: :func:`run_training` makes a :class:`Trainer`, whose ``setup`` builds its plain parts
from the config (models, feeder, validator, model measures, sampler, checkpointer, recovery) next to the one
:class:`TrainState`, and whose ``train`` runs the loop. One optimizer step is forward/backward per micro-batch
(:meth:`Trainer.compute_loss`), then unscale → clip → one host sync → the guard's decision → optimizer step → EMA.
Nothing here imports a UI; nothing here calls a denoiser but through the family's adapter."""

from __future__ import annotations

import threading
import time
import traceback
from functools import partial
from pathlib import Path
from typing import Any

import torch

from codes import wording
from trainer.config.schema import Config
from trainer.data.batches import epoch_batches, process_caption, samples_from_report
from trainer.data.scan import DatasetReport
from trainer.doctor.guard import Decision, Guard
from trainer.doctor.numerics import HealthTensors, StepHealth, grad_norms, weight_norm_flag
from trainer.errors import UserError
from trainer.message import Msg, msg
from trainer.plan.steps import Plan
from trainer.run.events import (
    ABSENT,
    Alert,
    Failed,
    Finished,
    Paused,
    Progress,
    Resumed,
    RunEvent,
    RunStatus,
    Sink,
    Started,
    StepRow,
    Stopped,
    stamp,
)
from trainer.run.rundir import RunPaths, write_status
from trainer.train.commands import Commands
from trainer.train.distributed import Dist
from trainer.train.edges import draw_edges
from trainer.train.feeding import Feeder, caption_rng
from trainer.train.hooks import Hooks
from trainer.train.measures import StepMeasures
from trainer.train.modelset import TrainingModels
from trainer.train.outcomes import RunResult, StepOutcome
from trainer.train.outputs import Checkpointer, Sampler, failure_said
from trainer.train.preparation import build_state, open_run_folder, resume_state, run_models, trim_metrics
from trainer.train.probes import ModelMeasures
from trainer.train.recovery import Recovery, position_of_step
from trainer.train.state import TrainState
from trainer.train.validation import Validator


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
        result = trainer.finish(status)  # its final save failing (a full disk) is a failure the user must read too
    except UserError as e:
        trainer.fail_quietly(e)
        raise
    except Exception as e:  # the run folder and the UI must learn why; re-raising would lose it in a thread
        return trainer.fail(e)
    except BaseException as e:  # SystemExit in the app's thread: the app lives on, so the folder must not say running
        if threading.current_thread() is not threading.main_thread():  # Ctrl-C in the CLI: read back as interrupted
            trainer.fail(e)
        raise
    if status is RunStatus.PAUSED:
        trainer.release_device()
    return result


class Trainer:
    """One run: its parts, built by :meth:`setup`, and the loop. Hooks (tests' fault injection) get the trainer."""

    # the run folder and what was decided before the models (prepare_run_folder)
    paths: RunPaths
    report: DatasetReport
    plan: Plan
    held_out: list[Any]
    # the parts (setup)
    models: TrainingModels
    state: TrainState
    guard: Guard
    feeder: Feeder
    validator: Validator
    measures: ModelMeasures
    step_measures: StepMeasures
    sampler: Sampler
    checkpointer: Checkpointer
    recovery: Recovery

    def __init__(self, config: Config, sink: Sink | None, commands: Commands, dist: Dist, hooks: Hooks):
        self.config, self.commands, self.dist, self.hooks = config, commands, dist, hooks
        self.external_sink = sink
        self.sink: Sink = sink or (lambda ev: None)
        self.started_at = time.time()
        self.opened = False  # the run folder exists (prepare_run_folder)
        self.ready = False  # every part is built (setup)
        self.rows: list[StepRow] = []  # the step rows so far, for the detectors
        self.last_batch_files: list[str] = []  # the step's pictures, named in a NaN alert

    def emit(self, ev: RunEvent) -> None:
        """Report an event (rank 0), stamped now; its ``step`` defaults to the optimizer steps applied so far."""
        if self.dist.is_main:
            stamp(ev, self.state.global_step if self.ready else 0)
            if isinstance(ev, StepRow):
                self.rows.append(ev)
            self.sink(ev)

    # ----------------------------------------------------------------------------------------- setup

    def prepare_run_folder(self, resume: str | Path | None = None, parent: str | Path | None = None) -> None:
        run = open_run_folder(self.config, self.dist, resume, parent, self.started_at, self.external_sink)
        self.paths, self.report, self.plan, self.held_out, self.sink = run.paths, run.report, run.plan, run.held_out, run.sink
        self.opened = True

    def setup(self, resume: bool = False) -> None:
        """Models, data (and caches), optimizer and the parts that use them: everything before the first step."""
        cfg, dist, plan, paths, emit = self.config, self.dist, self.plan, self.paths, self.emit
        self.models = models = run_models(cfg, dist, self.report, self.held_out, self.emit)
        samples = samples_from_report(self.report, cfg.dataset.trigger)
        self.feeder = Feeder(cfg, dist, models, samples)
        self.validator = Validator(cfg, dist, plan, models, self.report, self.held_out)  # while the VAE is here
        self.measures = ModelMeasures(cfg, dist, plan, models, paths, samples, self.report, self.held_out, emit)
        self.feeder.cache_latents(lambda done, total, t0: self._progress("cache_latents", done, total, t0))
        self.state, self.guard = build_state(cfg, models, plan, dist)
        self.step_measures = StepMeasures(models.trainable, models.device)
        self.sampler = Sampler(cfg, dist, paths, models, self.state, emit)
        self.checkpointer = Checkpointer(cfg, dist, paths, plan, self.report, models, self.state, emit, self.started_at)
        legacy = partial(position_of_step, steps_per_epoch=plan.steps_per_epoch, grad_accum=cfg.train.grad_accum)
        self.recovery = Recovery(cfg, dist, paths, plan, models, self.state, self.guard, self.feeder,
                                 self.checkpointer, self.step_measures, emit, legacy)
        self.ready = True
        self.checkpointer.last_good = self.checkpointer.snapshot()  # the rollback target: its tensors are finite
        if resume:
            last, snap = resume_state(paths, dist)
            self.state.restore(snap, legacy_position=legacy)
            self.checkpointer.last_good = snap
            if dist.is_main:  # rows past the checkpoint were never saved; they will be trained again
                trim_metrics(paths, self.state.global_step)
            emit(Resumed(checkpoint=str(last), run_dir=str(paths.root)))

    def _progress(self, task: str, done: int, total: int, t0: float) -> None:
        if done == total or done == 1 or done % max(1, total // 20) == 0:
            self.emit(Progress(task=task, done=done, total=total, seconds=round(time.perf_counter() - t0, 3)))

    def announce_start(self) -> None:
        m = self.models
        self.emit(Started(run_dir=str(self.paths.root), plan=self.plan.to_json(), device=str(m.device),
                          precision=m.precision.to_json(), trainable_params=sum(p.numel() for p in m.trainable),
                          base=m.base_info.to_json(), world_size=self.dist.world_size))
        if m.precision.fallback:
            self.emit(Alert(level="warning", kind="precision_fallback", message=m.precision.fallback))
        for w in m.base_info.warnings:
            self.emit(Alert(level="warning", kind="distilled_base", message=w))
        if self.config.train.min_snr_gamma > 0 and not m.adapter.min_snr:
            self.emit(Alert(level="warning", kind="min_snr_ignored", message=msg(
                "memory.warn.min_snr", family=m.adapter.label, gamma=self.config.train.min_snr_gamma)))

    # ------------------------------------------------------------------------------------------ loop

    def train(self) -> RunStatus:
        """Optimizer steps until the plan's total were applied. The data position moves by the batches each
        step consumed, applied or skipped, so a skipped step never makes a batch come round twice."""
        cfg, state = self.config, self.state
        accum, total = cfg.train.grad_accum, self.plan.total_steps
        if state.global_step == 0 and cfg.sample.enabled and 0 in self.plan.sample_steps:
            self.sampler.sample(0)
        if state.global_step == 0 and self.measures.due(0, total):
            self.measures.measure(0)
        pos = state.position
        while state.global_step < total:
            epoch = pos.epoch
            batches = self.dist.shard(epoch_batches(self.feeder.samples, cfg.train.batch_size, cfg.train.seed, epoch))
            while pos.batch < len(batches) and state.global_step < total:
                start = pos.batch
                group = batches[start : start + accum]
                nxt = start + accum
                self.feeder.prefetch(epoch, nxt, batches[nxt : nxt + accum])
                pos.advance(len(group))
                outcome = self.optimizer_step(group, epoch, start)
                if outcome.ending:
                    return outcome.ending
                pos = state.position  # a rollback put back another position object
                if outcome is StepOutcome.ROLLBACK:
                    break
            if pos.batch >= len(batches) and pos.epoch == epoch:
                pos.next_epoch()
        return RunStatus.FINISHED

    def compute_loss(self, batch, epoch: int, micro: int, pos: int = 0) -> torch.Tensor:
        """One micro-batch's loss: captions, latents, noise and timesteps drawn from the run's seed, the denoiser's
        prediction against the family's target, its loss weights (min-SNR for DDPM) and prior-image weights."""
        cfg, m, step, rank = self.config, self.models, self.state.global_step, self.dist.rank
        # Every random draw of this micro-batch comes from (seed, step, micro) or from its place in the
        # epoch: identical after a resume, and computable ahead of time by the prefetcher.
        # Each rank draws its own noise, timesteps and caption choices; rank 0 the same as a single process.
        gen = torch.Generator().manual_seed(hash((cfg.train.seed, step, micro, *((rank,) if rank else ()))) & 0x7FFF_FFFF)
        crng = caption_rng(cfg.train.seed, epoch, step, micro, rank)
        flips = self.feeder.flips(epoch, pos, len(batch))
        captions = [process_caption(s.caption, cfg.dataset, crng) for s in batch]
        latents = self.hooks.batch_latents(self, self.feeder.latents(batch, epoch, pos, flips))
        noise = torch.randn(latents.shape, generator=gen).to(m.device)
        if cfg.train.noise_offset:
            noise = noise + cfg.train.noise_offset * torch.randn((*latents.shape[:2], 1, 1), generator=gen).to(m.device)
        noise = self.hooks.noise(self, noise)
        timesteps = m.schedule.draw(latents.shape[0], gen).to(m.device)
        noisy, target = m.schedule.noised(latents, noise, timesteps)
        with m.precision.autocast():
            hidden, pooled = m.text(captions)
            pred = m.adapter.predict(m.denoiser, noisy.to(m.precision.weight_dtype), m.schedule.model_timesteps(timesteps),
                                     hidden, pooled, [s.bucket for s in batch])
        loss = self.feeder.loss(pred, target, batch, flips)  # (over the masked part, with dataset.masked_loss)
        weights = m.schedule.weights(timesteps, cfg.train.min_snr_gamma)
        if weights is not None:
            loss = loss * weights
        if cfg.dataset.prior_loss_weight != 1.0 and any(s.prior for s in batch):
            loss = loss * torch.tensor([cfg.dataset.prior_loss_weight if s.prior else 1.0 for s in batch],
                                       device=loss.device)
        return loss.mean()

    def optimizer_step(self, group, epoch: int, start: int = 0) -> StepOutcome:
        cfg, m, state = self.config, self.models, self.state
        optimizer, scaler, ema = state.optimizer, state.scaler, state.ema
        t0 = time.perf_counter()
        lr = optimizer.param_groups[0]["lr"]  # the denoiser's lr this step uses (the scheduler moves on after it)
        self.hooks.before_step(self)
        loss_sum = torch.zeros((), device=m.device)
        self.last_batch_files = [s.rel for batch in group for s in batch]
        for micro, batch in enumerate(group):
            loss = self.compute_loss(batch, epoch, micro, start + micro) / len(group)
            if scaler is not None:
                scaler.scale(loss).backward()
            else:
                loss.backward()
            loss_sum = loss_sum + loss.detach() * len(group)
        self.dist.average_gradients()
        self.hooks.after_backward(self)
        if scaler is not None:
            scaler.unscale_(optimizer)  # unscale first, so clipping sees true gradient sizes
        grad_norm, clipped = grad_norms(m.trainable, cfg.optim.max_grad_norm)
        guarded = cfg.guard.enabled
        if guarded:
            weight_norm, params_ok = weight_norm_flag(m.trainable)
            ema_ok = ema.finite_flag() if ema is not None else None
            update_norm = self.step_measures.update_norm(state.global_step)
            ema_drift = ema.drift() if ema is not None and update_norm is not None else None
        else:
            weight_norm = params_ok = torch.ones((), device=m.device)
            ema_ok = update_norm = ema_drift = None
        health = HealthTensors(
            loss_sum=loss_sum, micro_steps=len(group), grad_norm=grad_norm, clipped=clipped,
            params_finite=params_ok, weight_norm=weight_norm,
            scale=scaler._scale if scaler is not None else None,  # the tensor itself: no sync
            ema_finite=ema_ok, update_norm=update_norm, ema_drift=ema_drift,
        ).read(all_reduce=self.dist.all_reduce_health if self.dist.world_size > 1 else None)
        if guarded:
            decision = self.guard.decide(health)
        else:
            overflow = scaler is not None and not health.grad_finite
            decision = Decision(apply=not overflow, skipped=overflow, nonfinite=None)
        where = self.recovery.locate(decision.nonfinite) if decision.nonfinite else None  # before grads are cleared
        if decision.apply or (scaler is not None and decision.action == "continue"):
            if scaler is not None:
                scaler.step(optimizer)  # skips by itself when the unscale found inf/nan
                scaler.update()
            else:
                optimizer.step()
            if decision.apply:
                state.lr_scheduler.step()
                if ema is not None:
                    ema.update()
        optimizer.zero_grad(set_to_none=True)
        return self.after_step(health, decision, epoch, time.perf_counter() - t0, where, lr)

    def after_step(self, h: StepHealth, decision: Decision, epoch: int, seconds: float, where: str | None,
                   lr: float) -> StepOutcome:
        cfg, state, total = self.config, self.state, self.plan.total_steps
        if decision.apply:
            state.global_step += 1
        step = state.global_step
        row_step = step if decision.apply else step + 1
        val = self.validator.loss() if decision.apply and self.validator.due(step) else None
        mem, cpu = self.step_measures.device_memory(), self.step_measures.cpu()
        self.emit(StepRow(
            step=row_step, epoch=epoch + 1, loss=h.loss, grad_norm=h.grad_norm, grad_norm_clipped=h.grad_norm_clipped,
            lr=lr, loss_scale=h.loss_scale, skipped=decision.skipped, nonfinite=decision.nonfinite,
            sec_per_step=round(seconds, 6), weight_norm=h.weight_norm if cfg.guard.enabled else None,
            update_ratio=h.update_ratio, ema_drift=h.ema_drift, rollbacks=self.guard.rollbacks,
            device_mem_reserved=mem["device_mem_reserved"], device_mem_free=mem["device_mem_free"],
            cpu_self=cpu["cpu_self"], cpu_others=cpu["cpu_others"], val_loss=ABSENT if val is None else val))
        if cfg.guard.detectors and decision.apply and step % cfg.guard.detect_every == 0:
            self.run_detectors()
        if decision.nonfinite is not None:
            self.recovery.report_nonfinite(h, decision, row_step, where, self.last_batch_files)
        if decision.action == "stop":
            return StepOutcome.GUARD_STOP
        if decision.action == "rollback":
            self.recovery.rollback(decision)
            return StepOutcome.ROLLBACK
        self.hooks.after_step(self)
        if not decision.apply:
            return StepOutcome.CONTINUE
        # every rank saves (and stops) at the same step: a save gathers every rank's random generators
        save_now, stop, pause = self.dist.any(self.commands.take_save(), self.commands.stop_requested,
                                              self.commands.pause_requested)
        pause = pause and not stop and step < total  # a pause at the last step is simply the end
        if (step in self.plan.checkpoint_steps or save_now or pause) and step < total:
            self.checkpointer.save(step)  # a pause's checkpoint is the ordinary one: what resume restores
        if cfg.sample.enabled and ((step in self.plan.sample_steps and step < total) or self.commands.take_sample()):
            self.sampler.sample(step)
        if self.measures.due(step, total):
            self.measures.measure(step)
            if cfg.guard.detectors:
                self.run_detectors()  # what the model measures warn of, at once
        return StepOutcome.STOP if stop else StepOutcome.PAUSE if pause else StepOutcome.CONTINUE

    def run_detectors(self, final: bool = False) -> None:
        self.recovery.run_detectors(self.rows, self.measures.enabled, final)

    # ------------------------------------------------------------------------------------- endings

    def finish(self, status: RunStatus) -> RunResult:
        final = None
        step = self.state.global_step
        if status in (RunStatus.FINISHED, RunStatus.STOPPED):
            state = self.checkpointer.snapshot()  # on every rank: it gathers each rank's random generators
            final = self.checkpointer.save_final(state) if self.dist.is_main else None
            if self.config.sample.enabled and status is RunStatus.FINISHED and step in self.plan.sample_steps:
                self.sampler.sample_at_end(step)  # rank 0 alone samples; a failure is a warning
        self.feeder.close()
        if status not in (RunStatus.FAILED, RunStatus.PAUSED) and self.config.guard.detectors:
            self.run_detectors(final=True)  # a paused run is not over: its findings come when it ends
        self.dist.barrier()  # every rank has saved; what follows is rank 0's alone, however long the drawing takes
        if status is RunStatus.FINISHED:
            draw_edges(self, step)  # the saves a judge reads near its line, drawn again (it lets the models go)
        said = msg("run.guard_stopped", step=step + 1) if status is RunStatus.GUARD_STOPPED else None
        if said is not None:
            self.emit(Stopped(reason="guard", failure=self.recovery.failure, message=said))
        elif status is RunStatus.STOPPED:
            self.emit(Stopped(reason="user", final=str(final) if final else None))
        elif status is RunStatus.PAUSED:
            self.emit(Paused(checkpoint=str(self.paths.step_dir(step))))
        else:
            self.emit(Finished(final=str(final) if final else None, steps=step, step=step))
        if self.dist.is_main:
            write_status(self.paths, status, step=step)
            if status is RunStatus.GUARD_STOPPED:
                from trainer.doctor.diagnose import diagnose

                diagnose(self.paths.root)
        return RunResult(status, self.paths.root, final, wording.say(said) if said else "")

    def release_device(self) -> None:
        """Drop the models, optimizer and caches so a paused run gives its memory back (on CUDA to the driver
        too, for another program or the next run). The trainer cannot train after this."""
        from trainer.train.preparation import release_parts
        release_parts(self)  # (the trainer is no longer ready)

    def fail(self, error: BaseException) -> RunResult:
        full = failure_said(self, error)  # a full disk or the device's memory: what to do, as an alert
        said = f"{type(error).__name__}: {error}"
        self.emit(Failed(error=said, traceback=traceback.format_exc()))
        root = self.paths.root if self.opened else None
        if self.dist.is_main and self.opened:
            write_status(self.paths, RunStatus.FAILED, error=str(error) if isinstance(error, Exception) else said)
        return RunResult(RunStatus.FAILED, root, None, wording.say(full) if full else said)

    def fail_quietly(self, error: UserError) -> None:  # bad input found once the folder was made: for the doctor
        if self.dist.is_main and self.opened:
            said = error.msg.plain().to_json() if isinstance(error.msg, Msg) else None
            write_status(self.paths, RunStatus.FAILED, error=error.message, refusal=said)
