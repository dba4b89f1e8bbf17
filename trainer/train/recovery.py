"""What the trainer does when the numbers go wrong: find where, report it, roll back with one change; and the
findings short of NaN (the detectors), each reported once.

A part of :class:`trainer.train.loop.Trainer`, kept apart so the loop reads as the healthy path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from trainer.config.schema import save_config
from trainer.doctor.guard import Decision
from trainer.doctor.numerics import StepHealth, first_bad_module, first_bad_tensor
from trainer.doctor.registry import Reported
from trainer.run.events import ABSENT, Alert, ChangeApplied, NonFiniteAlert, Rollback, StepRow
from trainer.run.rundir import workspace_presets

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from trainer.config.schema import Config
    from trainer.doctor.guard import Guard
    from trainer.plan.steps import Plan
    from trainer.run.rundir import RunPaths
    from trainer.train.distributed import Dist
    from trainer.train.feeding import Feeder
    from trainer.train.measures import StepMeasures
    from trainer.train.modelset import TrainingModels
    from trainer.train.outputs import Checkpointer
    from trainer.train.state import DataPosition, Emit, TrainState


class Recovery:
    """Locates and reports a non-finite step, rolls back to the checkpointer's last good snapshot with one
    setting changed (the guide: change one thing at a time), and runs the detectors."""

    def __init__(self, config: Config, dist: Dist, paths: RunPaths, plan: Plan, models: TrainingModels,
                 state: TrainState, guard: Guard, feeder: Feeder, checkpointer: Checkpointer,
                 step_measures: StepMeasures, emit: Emit,
                 legacy_position: Callable[[int], DataPosition]):
        self.config, self.dist, self.paths, self.plan = config, dist, paths, plan
        self.models, self.state, self.guard, self.feeder = models, state, guard, feeder
        self.checkpointer, self.step_measures, self.emit = checkpointer, step_measures, emit
        self.legacy_position = legacy_position  # where a format-1 snapshot's step puts the data
        self.failure: dict[str, Any] | None = None  # the last non-finite step's details
        self.reported = Reported()  # what each signal's findings said last

    def run_detectors(self, rows: list[StepRow], measured: bool, final: bool = False) -> None:
        """Findings short of NaN, each emitted as a ``finding`` event with its evidence once, and again when its
        word changes (:class:`~trainer.doctor.registry.Reported`). ``rows``: the step rows so far; ``measured``: the
        run has model measures."""
        if not self.dist.is_main:
            return
        from trainer.doctor.registry import RunInputs, collect

        run = RunInputs(self.config, self.plan.to_json(), list(rows), run_dir=self.paths.root, stopped=final)
        groups = ("numbers", *(("model",) if measured else ()), *(("pictures",) if final else ()))
        try:
            found = collect(run, *groups)
        except Exception as e:
            if not final:
                raise
            # the run is trained and saved: a reading of it that fails must not leave it unfinished
            log.warning("the findings at the run's end failed", exc_info=e)
            step = rows[-1].step if rows else 0
            self.emit(Alert.failed("findings", step, "run.findings_failed", e))
            return
        for f in self.reported.news(found, groups, rows[-1].step if rows else 0, ended=final):
            self.emit(f.to_event())

    def locate(self, broken: str) -> str | None:
        """The first module (in model order) whose gradient, weight or EMA shadow is non-finite."""
        named, ema = self.models.named_trainable, self.state.ema
        if broken in ("grad", "param"):
            return first_bad_module(named, broken)
        if broken == "ema" and ema is not None:
            return first_bad_tensor([(n, s) for (n, _), s in zip(named, ema.shadow)])
        return None

    def report_nonfinite(self, h: StepHealth, decision: Decision, step: int, where: str | None,
                         files: list[str]) -> None:
        alert = NonFiniteAlert(
            step=step, level="error", kind=f"nonfinite_{decision.nonfinite}",
            first=decision.nonfinite,
            # params/EMA are checked after the step that broke them, i.e. the previous optimizer step
            broke_at_step=step - 1 if decision.nonfinite in ("param", "ema") else step,
            module=where,
            files=files,
            lr=self.state.optimizer.param_groups[0]["lr"],
            loss_scale=h.loss_scale,
            precision=self.models.precision.precision,
            loss=h.loss,
            grad_norm=h.grad_norm,
            action=decision.action,
            policy=self.guard.policy,
            reason=decision.reason.to_json() if decision.reason else "",  # worded in events.jsonl
        )
        details = alert.details()
        if self.guard.first_failure is None:
            self.guard.first_failure = details
        self.failure = details
        self.emit(alert)

    def rollback(self, decision: Decision) -> None:
        from trainer.doctor.remedies import rollback_change

        last_good = self.checkpointer.last_good
        assert last_good is not None  # the trainer took the first snapshot before the first step
        self.state.restore(last_good, legacy_position=self.legacy_position)  # from a copy: the snapshot stays the past
        change = rollback_change(self.config, self.models.precision, self.failure or {},
                                 preset_dirs=workspace_presets(self.paths.root))
        self.apply_change(change)
        self.step_measures.reset()
        self.emit(Rollback(to_step=self.state.global_step, change=change, rollbacks=self.guard.rollbacks))

    def apply_change(self, change: dict[str, Any]) -> None:
        """One setting changed mid-run (the guide: change one thing at a time), recorded in the config."""
        key, new = change["key"], change["new"]
        section, name = key.split(".")
        setattr(getattr(self.config, section), name, new)
        if key == "train.precision":
            self.switch_precision(new)
        if key == "optim.lr":
            factor = new / change["old"]
            self.state.lr_factor *= factor
            for g in self.state.optimizer.param_groups:
                g["lr"] *= factor
                if "initial_lr" in g:
                    g["initial_lr"] *= factor
            self.state.lr_scheduler.base_lrs = [lr * factor for lr in self.state.lr_scheduler.base_lrs]
        if self.dist.is_main:
            save_config(self.config, self.paths.config)
        self.emit(ChangeApplied(
            key=key, old=change["old"], new=new, prescription=change.get("prescription", ABSENT),
            reason=change.get("reason", ABSENT), note=change.get("note", ABSENT), cause=change.get("cause", ABSENT),
            signals=change.get("signals", ABSENT)))

    def switch_precision(self, precision: str) -> None:
        """fp16 → bf16 mid-run: the models recast (:meth:`TrainingModels.switch_precision`), the latent caches'
        VAE dtype with them, the loss scaler dropped, and the guard and the rollback target told."""
        self.models.switch_precision(precision)
        self.feeder.set_vae_dtype(self.models.precision.vae_dtype)
        self.state.precision = self.models.precision.precision
        self.state.scaler = self.models.new_scaler(self.config)
        self.guard.precision = self.models.precision.precision
        if self.checkpointer.last_good is not None:
            self.checkpointer.last_good["scaler"] = None


def position_of_step(step: int, steps_per_epoch: int, grad_accum: int) -> DataPosition:
    """Where an uninterrupted run with no skipped step stands after ``step`` steps (format-1 files had no
    data position)."""
    from trainer.train.state import DataPosition

    epoch, in_epoch = divmod(step, steps_per_epoch)
    return DataPosition(epoch, in_epoch * grad_accum, step * grad_accum)
