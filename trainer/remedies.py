"""The one change a rollback applies (the seeds: change one thing at a time).

The change is the top prescription the knowledge base ranks for the failure that was seen, among those that
can be applied to a running job: the learning rate, the precision (fp16 → bf16) and the clipping norm.
"""

from __future__ import annotations

from typing import Any

from .precision import bf16_supported

MID_RUN_KEYS = ("train.precision", "optim.lr", "optim.max_grad_norm")


def rollback_change(config, precision_plan, failure: dict[str, Any]) -> dict[str, Any]:
    """``{key, old, new, reason, prescription}`` for a non-finite failure described by ``failure``."""
    from .config import diff_configs
    from .kb import apply_change, load_kb

    kb = load_kb()
    signals = {f"nonfinite_{failure.get('first', 'grad')}": 1.0}
    if precision_plan.precision == "fp16":
        signals["loss_scale_collapse"] = 0.5
    for ranked in kb.rank_causes(signals, config):
        for p in kb.prescriptions_for(ranked.cause.id):
            ch = p.change
            if ch is None or ch.key not in MID_RUN_KEYS:
                continue
            if "bf16_supported" in ch.requires and not bf16_supported(precision_plan.device):
                continue
            diff = diff_configs(config, apply_change(config, ch))
            if list(diff) != [ch.key]:
                continue
            old, new = diff[ch.key]
            return {"key": ch.key, "old": old, "new": new, "prescription": p.id, "cause": ranked.cause.id,
                    "reason": p.text("title", "en")}
    old = config.optim.lr
    return {"key": "optim.lr", "old": old, "new": old * 0.5, "prescription": "lower_lr", "cause": None,
            "reason": "halve the learning rate"}
