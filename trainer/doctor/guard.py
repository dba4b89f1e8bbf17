"""The numerics guard: decide, from one step's health, whether its update may reach the weights.

A non-finite gradient is never applied, whatever the precision. What breaks first is recorded
(docs/design.md, "Numerics rules": gradient first points at loss scaling / fp16 overflow / input scale;
parameter first points at the optimizer update or its state; EMA first at the EMA's own accumulation). With fp16
an overflowing step is the loss scaler's ordinary business (skip, halve the scale) until the scale collapses;
then it is a gradient failure. That includes its warm-up before the first applied step, however long a high
initial scale makes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trainer.message import Msg, msg

if TYPE_CHECKING:  # the guard itself needs no torch, so the detectors can share its threshold
    from trainer.doctor.numerics import StepHealth

# Below this the fp16 loss scale no longer protects anything: gradients overflow even unscaled.
MIN_LOSS_SCALE = 1.0


@dataclass
class Decision:
    apply: bool  # may the optimizer step be taken
    skipped: bool  # the step's update was dropped
    nonfinite: str | None  # loss | grad | param | ema | None
    action: str = "continue"  # continue | stop | rollback
    reason: Msg | None = None  # why the step was dropped (``guard.*``)


@dataclass
class Guard:
    policy: str  # stop | skip | rollback
    precision: str
    max_consecutive_skips: int = 5
    max_rollbacks: int = 2
    rollbacks: int = 0
    consecutive_skips: int = 0
    consecutive_overflows: int = 0
    warmed_up: bool = False  # a step has been applied: the fp16 scaler has found a scale that works
    first_failure: dict | None = field(default=None)

    def classify(self, h: StepHealth) -> str | None:
        """What broke first. Params/EMA were left by the previous step, so they come before this step's loss."""
        if not h.params_finite:
            return "param"
        if not h.ema_finite:
            return "ema"
        if not h.loss_finite:
            return "loss"
        if not h.grad_finite:
            return "grad"
        return None

    def decide(self, h: StepHealth) -> Decision:
        broken = self.classify(h)
        if broken is None:
            self.consecutive_skips = 0
            self.consecutive_overflows = 0
            self.warmed_up = True
            return Decision(apply=True, skipped=False, nonfinite=None)

        if broken == "grad" and self.precision == "fp16":
            # The scaler's own overflow handling: skip this step, halve the scale. Only a collapsed scale
            # (or, once a step has worked, a long run of overflows) means the gradients are non-finite in
            # their own right. The warm-up from a high initial scale (2**32 needs ~20 halvings) is the scaler
            # searching; only the floor ends it.
            self.consecutive_overflows += 1
            scale = h.loss_scale if h.loss_scale is not None else float("inf")
            limit = 4 * self.max_consecutive_skips if self.warmed_up else float("inf")
            if scale >= MIN_LOSS_SCALE and self.consecutive_overflows < limit:
                return Decision(apply=False, skipped=True, nonfinite=None, reason=msg("guard.fp16_overflow"))

        return self._on_failure(broken)

    def _on_failure(self, broken: str) -> Decision:
        weights_broken = broken in ("param", "ema")
        if self.policy == "stop":
            return Decision(False, True, broken, "stop", msg("guard.policy_stop", first=broken))
        if self.policy == "skip" and not weights_broken:
            self.consecutive_skips += 1
            if self.consecutive_skips > self.max_consecutive_skips:
                return Decision(False, True, broken, "stop", msg("guard.skipping_failed", n=self.consecutive_skips))
            return Decision(False, True, broken, "continue", msg("guard.skipped", first=broken))
        # rollback (or skip where the weights themselves are already broken: nothing to skip)
        if self.policy == "rollback" and self.rollbacks < self.max_rollbacks:
            self.rollbacks += 1
            return Decision(False, True, broken, "rollback", msg("guard.rolling_back", first=broken))
        if weights_broken:
            return Decision(False, True, broken, "stop", msg("guard.weights_broken", first=broken))
        return Decision(False, True, broken, "stop", msg("guard.rollbacks_used", first=broken, n=self.rollbacks))
