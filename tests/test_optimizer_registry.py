"""Adding an optimizer is one decorated builder in trainer/train/optim.py: the config accepts its name, training
builds it, the app offers it, and the plan reads what its registration says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from trainer.config.choices import OPTIMIZERS, unregister_optimizer
from trainer.config.schema import from_dict
from trainer.errors import UserError
from trainer.plan.memory import optimizer_bytes
from trainer.train.optim import build_optimizer, optimizer
from ui.fields import BY_NAME

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def plain_sgd():
    @optimizer("plain_sgd_for_test", state_bytes=lambda n: 0)
    def build(param_groups, o, device):
        return torch.optim.SGD(param_groups, lr=o.lr)

    try:
        yield "plain_sgd_for_test"
    finally:
        unregister_optimizer("plain_sgd_for_test")


def test_a_registered_optimizer_is_a_config_value_a_widget_choice_and_what_training_builds(plain_sgd):
    cfg = from_dict({"optim": {"optimizer": plain_sgd, "lr": 0.5}})
    param = torch.nn.Parameter(torch.zeros(3))
    opt = build_optimizer([{"params": [param]}], cfg, torch.device("cpu"))
    assert type(opt) is torch.optim.SGD and opt.param_groups[0]["lr"] == 0.5
    assert plain_sgd in BY_NAME["optimizer"].choices
    assert optimizer_bytes(plain_sgd, [4096, 10]) == 0  # the memory plan reads its registration


def test_an_unregistered_name_is_refused_and_leaves_every_list():
    @optimizer("gone_for_test")
    def build(param_groups, o, device):
        return torch.optim.SGD(param_groups, lr=o.lr)

    unregister_optimizer("gone_for_test")
    with pytest.raises(UserError, match=r"'optim\.optimizer' = 'gone_for_test': input should be 'adamw', "):
        from_dict({"optim": {"optimizer": "gone_for_test"}})
    assert "gone_for_test" not in BY_NAME["optimizer"].choices


def test_a_name_is_registered_once():
    with pytest.raises(ValueError, match="registered twice"):
        optimizer("adamw")(lambda *a: None)


def test_every_package_an_optimizer_needs_is_a_requirement():
    listed = {re.split(r"[<>=\[; ]", line.strip())[0].lower()
              for line in (ROOT / "requirements.txt").read_text().splitlines() if line.strip() and line[0] != "#"}
    for spec in OPTIMIZERS.values():
        assert not spec.needs or spec.needs.lower() in listed, f"{spec.name} needs {spec.needs}: add it to requirements.txt"


def test_the_low_precision_state_cause_covers_exactly_the_8bit_optimizers():
    from trainer.doctor.kb import load_kb

    eight_bit = {spec.name for spec in OPTIMIZERS.values() if spec.eight_bit_state}
    assert set(load_kb().cause("optimizer_state_precision").only_when["optim.optimizer"]) == eight_bit
