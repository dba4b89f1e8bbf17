"""The one change a rollback applies (the seeds: change one thing at a time)."""

from __future__ import annotations

from typing import Any

from .precision import bf16_supported


def rollback_change(config, precision_plan, failure: dict[str, Any]) -> dict[str, Any]:
    """Pick the top applicable prescription for a non-finite failure, as ``{key, old, new, reason}``.

    fp16 overflow → bf16 where the device has it (same exponent range as fp32); no clipping → clip at 1.0;
    otherwise the update was too big for the weights: halve the learning rate.
    """
    if precision_plan.precision == "fp16" and bf16_supported(precision_plan.device):
        return {"key": "train.precision", "old": "fp16", "new": "bf16",
                "reason": "fp16's narrow range overflowed; bf16 keeps fp32's range"}
    if config.optim.max_grad_norm == 0:
        return {"key": "optim.max_grad_norm", "old": 0.0, "new": 1.0,
                "reason": "gradients were not clipped; clip the total norm at 1.0"}
    old = config.optim.lr
    return {"key": "optim.lr", "old": old, "new": old * 0.5,
            "reason": f"non-finite {failure.get('first', 'value')}: halve the learning rate"}
