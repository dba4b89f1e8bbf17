"""The one change a rollback makes fits what broke first (the collapse seed): a gradient or loss in fp16 may
blame the loss scale, a weight blames the optimizer's step, the EMA its own averaging."""

from __future__ import annotations

import pytest
import torch

from trainer.config.schema import from_dict
from trainer.doctor.remedies import MID_RUN_KEYS, rollback_change, rollback_signals
from trainer.models.precision import decide_precision

FP16_PLAN = decide_precision("fp16", torch.device("cpu"))
FP16 = {"train": {"precision": "fp16"}}
STEP_KEYS = ("optim.lr", "optim.max_grad_norm")


@pytest.mark.parametrize("extra", [{}, {"ema": {"enabled": True}}, {"optim": {"optimizer": "adamw8bit"}}])
def test_param_first_in_fp16_changes_the_optimizer_step_not_the_precision(extra):
    cfg = from_dict({**FP16, **extra})
    change = rollback_change(cfg, FP16_PLAN, {"first": "param", "loss_scale": 65536.0})
    assert change["key"] in STEP_KEYS, change
    assert change["signals"] == {"nonfinite_param": 1.0}
    assert change["cause"] in ("lr_too_high", "optimizer_state_precision")


def test_ema_first_in_fp16_keeps_the_precision_and_blames_the_averaging():
    cfg = from_dict({**FP16, "ema": {"enabled": True}})
    change = rollback_change(cfg, FP16_PLAN, {"first": "ema", "loss_scale": 1024.0})
    assert change["key"] != "train.precision"
    assert change["signals"] == {"nonfinite_ema": 1.0} and change["cause"].startswith("ema_")
    # no EMA setting changes mid-run yet: the safest step change stands in, and says so
    assert change["prescription"] == "lower_lr" and change["new"] == pytest.approx(change["old"] / 2)
    assert change["note"].code == "rollback.nothing_fits_mid_run" and "reason" in change
    # once one does, the knowledge base's EMA prescription is the one taken
    keys = (*MID_RUN_KEYS, "ema.enabled")
    change = rollback_change(cfg, FP16_PLAN, {"first": "ema", "loss_scale": 1024.0}, mid_run_keys=keys)
    assert (change["key"], change["new"], change["prescription"]) == ("ema.enabled", False, "ema_off_compare")


def test_grad_first_in_fp16_blames_the_loss_scale_only_when_it_collapsed():
    cfg = from_dict(FP16)
    collapsed = rollback_change(cfg, FP16_PLAN, {"first": "grad", "loss_scale": 0.5})
    assert collapsed["signals"] == {"nonfinite_grad": 1.0, "loss_scale_collapse": 0.5}
    assert (collapsed["key"], collapsed["new"]) == ("train.precision", "bf16")
    overflowing = rollback_change(cfg, FP16_PLAN, {"first": "grad", "loss_scale": 4096.0})
    assert overflowing["signals"] == {"nonfinite_grad": 1.0}
    assert overflowing["cause"] == "fp16_overflow"
    # where the machine has no bf16, fp16 stays and the step gets gentler
    stay = rollback_change(cfg, FP16_PLAN, {"first": "grad", "loss_scale": 0.5}, bf16=False)
    assert stay["key"] in STEP_KEYS


@pytest.mark.parametrize(
    ("precision", "failure", "signals"),
    [
        ("fp16", {"first": "loss", "loss_scale": 0.25}, {"nonfinite_loss": 1.0, "loss_scale_collapse": 0.5}),
        ("fp16", {"first": "loss", "loss_scale": 65536.0}, {"nonfinite_loss": 1.0}),
        ("fp16", {"first": "param", "loss_scale": 0.25}, {"nonfinite_param": 1.0}),
        ("fp16", {"first": "ema", "loss_scale": 0.25}, {"nonfinite_ema": 1.0}),
        ("fp16", {"first": "grad", "loss_scale": None}, {"nonfinite_grad": 1.0}),
        ("bf16", {"first": "grad", "loss_scale": None}, {"nonfinite_grad": 1.0}),
    ],
)
def test_rollback_signals_name_what_broke_first(precision, failure, signals):
    assert rollback_signals(precision, failure) == signals


def test_a_rollback_back_to_a_preset_it_cannot_read_is_skipped_not_a_crash(tmp_path):
    """"Back to the preset's lr" as a rollback's change: from the user's own preset where the run says where it is;
    where it cannot be read, that change is not made (the next one is), and the run goes on."""
    from trainer.doctor.kb import load_kb
    from trainer.doctor.remedies import _one_change

    (tmp_path / "mine.toml").write_text(
        '[preset]\nversion = 1\nname_en = "m"\nname_ko = "m"\ndescription_en = "m"\ndescription_ko = "m"\n'
        '[optim]\nlr = 1e-5\n', encoding="utf-8")
    cfg = from_dict({"optim": {"lr": 1e-3}})
    cfg.preset = "mine"
    back = load_kb().prescription("preset_lr")
    assert _one_change(cfg, back, STEP_KEYS, bf16=False) is None
    found = _one_change(cfg, back, STEP_KEYS, bf16=False, preset_dirs=[tmp_path])
    assert found is not None and (found["key"], found["old"], found["new"]) == ("optim.lr", 1e-3, 1e-5)
