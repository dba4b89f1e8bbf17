"""What the trainer does when the numbers go wrong: find where, report it, roll back with one change.

A mixin of :class:`trainer.train.loop.Trainer`; kept apart so the loop reads as the healthy path.
"""

from __future__ import annotations

from typing import Any

from trainer.config.schema import save_config
from trainer.doctor.guard import Decision
from trainer.doctor.numerics import StepHealth, first_bad_module, first_bad_tensor
from trainer.models.precision import decide_precision
from trainer.train import checkpoint as ckpt
from trainer.train.parts import TrainerParts


class RecoveryMixin(TrainerParts):
    def run_detectors(self, final: bool = False) -> None:
        """Findings short of NaN, each emitted once as a ``finding`` event with its evidence."""
        if not self.dist.is_main:
            return
        from trainer.doctor.detectors import metric_findings
        from trainer.doctor.pictures import sample_findings

        found = metric_findings(list(self._rows), self.plan.to_json(), self.config)
        assert self.paths is not None
        if self.probes:
            from trainer.doctor.model_measures import model_findings

            found += model_findings(self.paths.root)
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
            "lr": self.optimizer.param_groups[0]["lr"],
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
        from trainer.doctor.remedies import rollback_change

        assert self.last_good is not None  # prepare_optimization took the first snapshot
        ckpt.restore(self, self.last_good)  # restores from a copy: the snapshot stays the past
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
            assert self.paths is not None
            save_config(self.config, self.paths.config)
        self.emit("change_applied", **change)

    def switch_precision(self, precision: str) -> None:
        """fp16 → bf16 mid-run: every frozen weight recast (the UNet and the text encoders, with or without
        LoRA, and the VAE), the autocast dtype changed, the loss scaler dropped, and text embeddings cached
        under the old precision recomputed."""
        self.precision = decide_precision(precision, self.device, self.pipe.vae.config.get("force_upcast", False))
        for model in self.adapter.frozen_components(self.pipe):
            if model is self.pipe.vae:
                continue  # the VAE has its own dtype, below
            for p in model.parameters():
                if not p.requires_grad and p.is_floating_point():
                    p.data = p.data.to(self.precision.weight_dtype)
        self.pipe.vae.to(dtype=self.precision.vae_dtype)
        for cache in (self.latents, self._pixel_encoder):
            if cache is not None:
                cache.vae_dtype = self.precision.vae_dtype
        self.text.clear_cache()
        assert self.state is not None
        self.state.precision = self.precision.precision
        self.scaler = self.new_scaler()
        self.guard.precision = self.precision.precision
        if self.last_good is not None:
            self.last_good["scaler"] = None
