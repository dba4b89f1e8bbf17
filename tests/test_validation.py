"""Validation loss: held-out pictures at fixed timesteps and noise give one comparable number per evaluation."""

from __future__ import annotations

import pytest
import torch
from helpers import tiny_config, write_toy_dataset

from trainer.data.batches import samples_from_report
from trainer.data.holdout import split_holdout
from trainer.data.scan import scan_dataset
from trainer.errors import UserError
from trainer.plan.steps import make_plan
from trainer.train.validation import best_so_far, build_validation_set, fixed_timesteps, validation_loss


def test_fixed_timesteps_spread_over_the_schedule():
    assert fixed_timesteps(5, 1000) == [100, 300, 500, 700, 900]
    assert fixed_timesteps(1, 1000) == [500]


def test_held_out_pictures_leave_the_plan_and_are_the_same_every_time(tmp_path):
    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=8), tmp_path / "runs")
    report = scan_dataset(cfg.dataset)
    train, held = split_holdout(report, 2, seed=7)
    assert len(held) == 2 and train.images == 6 and train.image_repeats == 6 * 10  # the toy folder is 10_zxc toy
    assert {it.rel for it in held}.isdisjoint(it.rel for it in train.items)
    assert sum(b["images"] for b in train.buckets) == 6
    assert [it.rel for it in split_holdout(scan_dataset(cfg.dataset), 2, seed=7)[1]] == [it.rel for it in held]
    plan, full = make_plan(cfg, train), make_plan(cfg, report)
    assert (plan.images, plan.image_repeats, plan.batches_per_epoch) == (6, 60, 30) and full.batches_per_epoch == 40
    assert split_holdout(report, 0, seed=7) == (report, [])
    with pytest.raises(UserError, match=r"validation\.holdout"):
        split_holdout(report, 8, seed=7)


def test_best_so_far_is_the_lowest_validation_loss():
    rows = [{"step": 1, "loss": 0.3}, {"step": 2, "val_loss": 0.2}, {"step": 4, "val_loss": 0.15},
            {"step": 6, "val_loss": 0.18}, {"step": 7, "val_loss": float("nan")}]
    assert best_so_far(rows) == {"step": 4, "val_loss": 0.15}
    assert best_so_far([{"step": 1}]) is None


@pytest.mark.slow
def test_same_weights_same_number_and_it_moves_when_the_weights_move(tmp_path):
    from trainer.run.events import MemorySink
    from trainer.train.commands import Commands
    from trainer.train.distributed import Dist
    from trainer.train.loop import Hooks, Trainer

    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=6), tmp_path / "runs")
    t = Trainer(cfg, MemorySink(), Commands(), Dist(), Hooks())
    t.prepare_run_folder(resume=None, parent=None)
    t.setup()
    _, held = split_holdout(scan_dataset(cfg.dataset), 2, seed=cfg.train.seed)
    from trainer.data.batches import LatentCache

    encoder = LatentCache(t.pipe.vae, t.device, t.precision.vae_dtype, None)
    vset = build_validation_set(samples_from_report(type("R", (), {"items": held})()), encoder,
                                fixed_timesteps(4, t.noise_scheduler.config.num_train_timesteps), 0, t.device)
    modules = list(t.lora.models.values())

    def value() -> float:
        return validation_loss(vset, t.unet, t.text, t.noise_scheduler, t.base_info.prediction_type, t.precision,
                               modules)

    t.unet.train()
    rng = torch.get_rng_state()
    first = value()
    assert torch.equal(rng, torch.get_rng_state())  # the training's random stream is untouched
    assert t.unet.training  # and its mode restored
    assert value() == first  # the same weights give the very same number
    lora_param = next(p for n, p in t.unet.named_parameters() if "lora_B" in n)
    with torch.no_grad():
        lora_param.add_(0.05)
    moved = value()
    assert moved != first and abs(moved - first) > 1e-6
    with torch.no_grad():
        lora_param.sub_(0.05)
    assert value() == pytest.approx(first, abs=1e-7)
