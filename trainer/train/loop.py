"""``run_training(config, sink, commands)``: train a Stable Diffusion LoRA, report every step, obey commands.

Read top to bottom: :func:`run_training` prepares a :class:`Trainer` and calls its named steps. One
optimizer step is forward/backward per micro-batch, then unscale → clip → one host sync → the guard's
decision → optimizer step → EMA. Nothing here imports a UI. The forward pass and its loss are in :mod:`.loss`,
picture loading in :mod:`.feeding`, the step's measures in :mod:`.measures`, the validation loss in :mod:`.validation`.
"""

from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from trainer.config.schema import Config
from trainer.data.batches import epoch_batches
from trainer.doctor.guard import Decision
from trainer.doctor.numerics import HealthTensors, StepHealth, grad_norms, weight_norm_flag
from trainer.errors import UserError
from trainer.run.events import Sink, event
from trainer.run.rundir import RunPaths, write_status
from trainer.train import checkpoint as ckpt
from trainer.train.commands import Commands
from trainer.train.distributed import Dist
from trainer.train.ema import LoraEMA
from trainer.train.feeding import FeedingMixin
from trainer.train.hooks import Hooks
from trainer.train.loss import LossMixin
from trainer.train.measures import CpuShare, MeasuresMixin
from trainer.train.outcomes import RunResult, StepOutcome
from trainer.train.outputs import OutputsMixin
from trainer.train.preparation import PreparationMixin
from trainer.train.probes import ProbesMixin
from trainer.train.recovery import RecoveryMixin
from trainer.train.state import DataPosition, TrainState
from trainer.train.validation import ValidationMixin

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

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
    result = trainer.finish(status)
    if status == "paused":
        trainer.release_device()
    return result


class Trainer(PreparationMixin, FeedingMixin, LossMixin, MeasuresMixin, ValidationMixin, ProbesMixin, RecoveryMixin,
              OutputsMixin):
    def __init__(self, config: Config, sink: Sink | None, commands: Commands, dist: Dist, hooks: Hooks):
        self.config = config
        self.commands = commands
        self.dist = dist
        self.hooks = hooks
        self.external_sink = sink
        self.sink: Sink = sink or (lambda ev: None)
        self.paths: RunPaths | None = None
        self.started_at = time.time()
        self.state: TrainState | None = None  # built with the optimizer (prepare_optimization)
        self.last_good: dict[str, Any] | None = None  # the rollback target: a snapshot whose tensors are finite
        self.last_batch_files: list[str] = []
        self.failure: dict[str, Any] | None = None
        self._update_ref: tuple[int, list[torch.Tensor]] | None = None  # (step, LoRA weights at that step)
        self._cpu_share = CpuShare()  # the CPU each step got, for the slowdown detector
        self._rows: list[dict[str, Any]] = []
        self._loader: ThreadPoolExecutor | None = None  # a thread pool that loads the next step's images when latents are not cached
        self._pixels: dict[tuple[int, int], Any] = {}
        self._pixel_encoder = None  # made on first use (feeding)
        self._sampler = None  # made at the first sample point (outputs)
        self._findings_emitted: set[str] = set()
        self.held_out, self.validation = [], None  # the validation loss's pictures (prepare_data)
        self.probes, self.probe_timesteps = {}, []  # the model measures' pictures (prepare_data, step 0)

    # The run state's parts, read (and, for counters, written) through the one TrainState.
    @property
    def global_step(self) -> int:
        return self.state.global_step if self.state is not None else 0

    @global_step.setter
    def global_step(self, value: int) -> None:
        assert self.state is not None
        self.state.global_step = value

    @property
    def epoch(self) -> int:
        return self.state.position.epoch if self.state is not None else 0

    @property
    def optimizer(self):
        assert self.state is not None
        return self.state.optimizer

    @property
    def lr_scheduler(self):
        assert self.state is not None
        return self.state.lr_scheduler

    @property
    def scaler(self):
        return self.state.scaler if self.state is not None else None

    @scaler.setter
    def scaler(self, value) -> None:
        assert self.state is not None
        self.state.scaler = value

    @property
    def ema(self) -> LoraEMA | None:
        return self.state.ema if self.state is not None else None

    @property
    def lr_factor(self) -> float:
        assert self.state is not None
        return self.state.lr_factor

    @lr_factor.setter
    def lr_factor(self, value: float) -> None:
        assert self.state is not None
        self.state.lr_factor = value

    def position_of_step(self, step: int) -> DataPosition:
        """Where an uninterrupted run with no skipped step stands after ``step`` steps (format-1 files)."""
        accum = self.config.train.grad_accum
        epoch, in_epoch = divmod(step, self.steps_per_epoch)
        return DataPosition(epoch, in_epoch * accum, step * accum)

    # ----------------------------------------------------------------------------------------- setup

    def emit(self, event_type: str, /, **fields: Any) -> None:
        if self.dist.is_main:
            ev = event(event_type, step=fields.pop("step", self.global_step), **fields)
            if event_type == "step":
                self._rows.append(ev.to_json())
            self.sink(ev)

    def setup(self, resume: bool = False) -> None:
        """Models, data (and caches), optimizer: everything before the first step."""
        self.load_models()
        self.prepare_data()
        self.prepare_optimization()
        if resume:
            self.resume_from_checkpoint()

    # ------------------------------------------------------------------------------------------ loop

    def train(self) -> str:
        """Optimizer steps until ``total_steps`` were applied. The data position moves by the batches each
        step consumed, applied or skipped, so a skipped step never makes a batch come round twice."""
        cfg = self.config
        accum = cfg.train.grad_accum
        if self.global_step == 0 and cfg.sample.enabled and 0 in self.plan.sample_steps:
            self.sample(0)
        if self.global_step == 0 and self.probes_due(0):
            self.probe(0)
        assert self.state is not None  # built by prepare_optimization
        pos = self.state.position
        while self.global_step < self.total_steps:
            epoch = pos.epoch
            batches = self.dist.shard(epoch_batches(self.samples, cfg.train.batch_size, cfg.train.seed, epoch))
            while pos.batch < len(batches) and self.global_step < self.total_steps:
                start = pos.batch
                group = batches[start : start + accum]
                nxt = start + accum
                self.prefetch(epoch, nxt, batches[nxt : nxt + accum])
                pos.advance(len(group))
                outcome = self.optimizer_step(group, epoch, start)
                if outcome.ending:
                    return outcome.ending
                pos = self.state.position  # a rollback put back another position object
                if outcome is StepOutcome.ROLLBACK:
                    break
            if pos.batch >= len(batches) and pos.epoch == epoch:
                pos.next_epoch()
        return "finished"

    def optimizer_step(self, group, epoch: int, start: int = 0) -> StepOutcome:
        cfg = self.config
        t0 = time.perf_counter()
        lr = self.optimizer.param_groups[0]["lr"]  # the UNet lr this step uses (the scheduler moves on after it)
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
        health = HealthTensors(
            loss_sum=loss_sum, micro_steps=len(group), grad_norm=grad_norm, clipped=clipped,
            params_finite=params_ok, weight_norm=weight_norm,
            scale=self.scaler._scale if self.scaler is not None else None,  # the tensor itself: no sync
            ema_finite=ema_ok, update_norm=update_norm, ema_drift=ema_drift,
        ).read(all_reduce=self.dist.all_reduce_health if self.dist.world_size > 1 else None)
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
        return self.after_step(health, decision, epoch, time.perf_counter() - t0, where, lr)

    def after_step(self, h: StepHealth, decision: Decision, epoch: int, seconds: float, where: str | None,
                   lr: float) -> StepOutcome:
        cfg = self.config
        if decision.apply:
            self.global_step += 1
        row_step = self.global_step if decision.apply else self.global_step + 1
        val = self.validate() if decision.apply and self.validation_due(self.global_step) else None
        self.emit(
            "step",
            step=row_step,
            epoch=epoch + 1,
            loss=h.loss,
            grad_norm=h.grad_norm,
            grad_norm_clipped=h.grad_norm_clipped,
            lr=lr,
            loss_scale=h.loss_scale,
            skipped=decision.skipped,
            nonfinite=decision.nonfinite,
            sec_per_step=round(seconds, 6),
            weight_norm=h.weight_norm if cfg.guard.enabled else None,
            update_ratio=h.update_ratio,
            ema_drift=h.ema_drift,
            rollbacks=self.guard.rollbacks,
            **self._device_memory(),
            **self._cpu_share(),
            **({} if val is None else {"val_loss": val}),
        )
        if cfg.guard.detectors and decision.apply and self.global_step % cfg.guard.detect_every == 0:
            self.run_detectors()
        if decision.nonfinite is not None:
            self.report_nonfinite(h, decision, row_step, where)
        if decision.action == "stop":
            return StepOutcome.GUARD_STOP
        if decision.action == "rollback":
            self.rollback(decision)
            return StepOutcome.ROLLBACK
        self.hooks.after_step(self)
        if not decision.apply:
            return StepOutcome.CONTINUE
        step = self.global_step
        # every rank saves (and stops) at the same step: a save gathers every rank's random generators
        save_now, stop, pause = self.dist.any(self.commands.take_save(), self.commands.stop_requested,
                                              self.commands.pause_requested)
        pause = pause and not stop and step < self.total_steps  # a pause at the last step is simply the end
        if (step in self.plan.checkpoint_steps or save_now or pause) and step < self.total_steps:
            self.save_checkpoint(step)  # a pause's checkpoint is the ordinary one: what resume restores
        if cfg.sample.enabled and ((step in self.plan.sample_steps and step < self.total_steps)
                                   or self.commands.take_sample()):
            self.sample(step)
        if self.probes_due(step):
            self.probe(step)
            if cfg.guard.detectors:
                self.run_detectors()  # what the model measures warn of, at once
        return StepOutcome.STOP if stop else StepOutcome.PAUSE if pause else StepOutcome.CONTINUE

    # ------------------------------------------------------------------------------------- endings

    def finish(self, status: str) -> RunResult:
        final = None
        if status in ("finished", "stopped"):
            state = ckpt.snapshot(self)  # on every rank: it gathers each rank's random generators
            final = self.save_final(state) if self.dist.is_main else None
            if self.config.sample.enabled and status == "finished" and self.global_step in self.plan.sample_steps:
                self.sample(self.global_step)  # rank 0 alone samples
        if self._loader is not None:
            self._loader.shutdown(wait=False, cancel_futures=True)
        if status not in ("failed", "paused") and self.config.guard.detectors:
            self.run_detectors(final=True)  # a paused run is not over: its findings come when it ends
        message = ""
        if status == "guard_stopped":
            message = f"stopped by the numerics guard at step {self.global_step + 1}"
            self.emit("stopped", reason="guard", failure=self.failure, message=message)
        elif status == "stopped":
            self.emit("stopped", reason="user", final=str(final) if final else None)
        elif status == "paused":
            checkpoint = self.paths.step_dir(self.global_step) if self.paths else None
            self.emit("paused", checkpoint=str(checkpoint) if checkpoint else None)
        else:
            self.emit("finished", final=str(final) if final else None, steps=self.global_step)
        if self.dist.is_main:
            assert self.paths is not None
            write_status(self.paths, status, step=self.global_step)
            if status == "guard_stopped":
                self._write_diagnosis()
        self.dist.barrier()
        return RunResult(status, self.paths.root if self.paths else None, final, message)

    def release_device(self) -> None:
        """Drop the models, optimizer and caches so a paused run gives its memory back (on CUDA to the driver
        too, for another program or the next run). The trainer cannot train after this."""
        import gc

        for name in ("pipe", "denoiser", "lora", "text", "latents", "trainable", "named_trainable", "train_modules",
                     "_sampler", "_pixel_encoder", "state", "last_good", "_update_ref"):
            if name in self.__dict__:
                setattr(self, name, None)
        self._pixels.clear()
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def _write_diagnosis(self) -> None:
        from trainer.doctor.diagnose import diagnose

        assert self.paths is not None
        diagnose(self.paths.root)

    def fail(self, error: Exception) -> RunResult:
        tb = traceback.format_exc()
        self.emit("failed", error=f"{type(error).__name__}: {error}", traceback=tb)
        if self.dist.is_main and self.paths is not None:
            write_status(self.paths, "failed", error=str(error))
        return RunResult("failed", self.paths.root if self.paths else None, None, f"{type(error).__name__}: {error}")

    def fail_quietly(self) -> None:
        if self.dist.is_main and self.paths is not None:
            write_status(self.paths, "failed", error="bad input")

