"""Step plan: bucket-aware step counts, checkpoint/sample steps, and the dose zone."""

from __future__ import annotations

import json

import pytest

import words
from trainer.config.schema import Config
from trainer.data.scan import scan_dataset
from trainer.errors import UserError
from trainer.plan.steps import make_plan, plan_from_config


def config(path, **sections) -> Config:
    data: dict = {"dataset": {"path": str(path), "resolution": 512, "trigger": "zxc"}}
    for key, value in sections.items():
        data.setdefault(key, {}).update(value)
    return Config.model_validate(data)


@pytest.fixture
def kohya_set(tmp_path, make_image):
    """12 pictures × 10 repeats + 4 × 5 = 140 image-repeats, all square."""
    for i in range(12):
        make_image(tmp_path / "10_zxc girl" / f"g{i}.png", size=(512, 512), caption=f"zxc, pose {i}")
    for i in range(4):
        make_image(tmp_path / "5_zxc style" / f"s{i}.png", size=(512, 512), caption=f"zxc, style {i}")
    return tmp_path


def test_140_image_repeats_3_epochs_batch_2_is_210_steps(kohya_set):
    cfg = config(kohya_set, train={"batch_size": 2, "epochs": 3, "grad_accum": 1})
    report, plan = plan_from_config(cfg)
    assert report.image_repeats == 140 and plan.image_repeats == 140
    assert plan.batches_per_epoch == 70 and plan.steps_per_epoch == 70
    assert plan.total_steps == 210 and plan.naive_total_steps == 210 and plan.naive_total_steps_ceil == 210
    assert words.say(plan.formula, "en") == "140 image-repeats × 3 epochs ÷ (batch 2 × accumulation 1) = 210 steps"
    assert "210" in words.say(plan.formula, "ko") and "배치 2" in words.say(plan.formula, "ko")
    json.dumps(plan.to_json(), allow_nan=False)


def test_partial_batches_per_bucket_make_more_steps_than_the_naive_formula(tmp_path, make_image):
    for i in range(3):
        make_image(tmp_path / f"sq{i}.png", size=(64, 64), caption="zxc")
        make_image(tmp_path / f"wide{i}.png", size=(128, 64), caption="zxc")
    make_image(tmp_path / "tall.png", size=(64, 128), caption="zxc")
    cfg = config(tmp_path, dataset={"resolution": 64, "bucket_step": 32, "min_bucket_side": 32},
                 train={"batch_size": 2, "epochs": 2})  # fmt: skip
    report, plan = plan_from_config(cfg)
    assert sorted(b["image_repeats"] for b in report.buckets) == [1, 3, 3]
    # 3 + 3 + 1 pictures in batches of 2: 2 + 2 + 1 batches, not ceil(7 / 2) = 4.
    assert plan.batches_per_epoch == 5 and plan.total_steps == 10
    assert plan.naive_total_steps == 7.0 and plan.total_steps > plan.naive_total_steps_ceil
    assert "partial" in words.say(plan.formula, "en") and "10 steps" in words.say(plan.formula, "en")


def test_accumulation_flushes_at_epoch_end_and_max_steps_overrides(kohya_set):
    report = scan_dataset(config(kohya_set).dataset)
    plan = make_plan(config(kohya_set, train={"batch_size": 4, "grad_accum": 3, "epochs": 2}), report)
    assert plan.batches_per_epoch == 35 and plan.steps_per_epoch == 12 and plan.total_steps == 24
    assert plan.naive_total_steps == pytest.approx(140 * 2 / 12)
    plan = make_plan(config(kohya_set, train={"batch_size": 2, "max_steps": 100, "epochs": 3}), report)
    assert plan.total_steps == 100 and plan.epochs == 3 and plan.epochs_effective == 2
    assert "max_steps = 100" in words.say(plan.formula, "en")


def test_several_processes_share_each_epoch_and_the_dose_counts_their_fewer_steps(kohya_set):
    report = scan_dataset(config(kohya_set).dataset)
    one = make_plan(config(kohya_set, train={"batch_size": 4, "grad_accum": 3, "epochs": 2}), report)
    two = make_plan(config(kohya_set, train={"batch_size": 4, "grad_accum": 3, "epochs": 2}), report, world_size=2)
    # 35 batches: 18 a process (the 35th's partner is the first batch again), in steps of 3: 6 an epoch
    assert two.batches_per_epoch == 35 and two.world_size == 2
    assert two.steps_per_epoch == 6 and two.total_steps == 12 and one.total_steps == 24
    assert two.dose == pytest.approx(one.dose / 2)
    assert two.naive_total_steps == pytest.approx(140 * 2 / 24)
    assert "× 2 processes" in words.say(two.formula, "en") and "프로세스 2개" in words.say(two.formula, "ko")
    assert "processes" not in words.say(one.formula, "en")


def test_cli_plan_counts_the_processes(kohya_set, tmp_path, capsys):
    from trainer.cli import main

    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[dataset]\npath = "{kohya_set}"\ntrigger = "zxc"\n[train]\nbatch_size = 2\nepochs = 1\n')
    assert main(["plan", str(cfg), "--json", "--processes", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["world_size"] == 2 and out["total_steps"] == 35
    with pytest.raises(SystemExit) as e:
        main(["plan", str(cfg), "--processes", "0"])
    assert e.value.code == 2


def test_checkpoint_sample_and_warmup_steps(kohya_set):
    report = scan_dataset(config(kohya_set).dataset)
    cfg = config(kohya_set, train={"batch_size": 2, "epochs": 3}, save={"every_steps": 100},
                 optim={"warmup_steps": 500})  # fmt: skip
    plan = make_plan(cfg, report)
    assert plan.checkpoint_steps == [100, 200, 210]
    assert plan.sample_steps == [0, 100, 200, 210]  # sample.every_steps 0 → at checkpoints
    assert plan.warmup_steps == 210
    cfg = config(kohya_set, train={"batch_size": 2, "epochs": 3}, sample={"every_steps": 70})
    plan = make_plan(cfg, report)
    assert plan.checkpoint_steps == [210] and plan.sample_steps == [0, 70, 140, 210]
    cfg = config(kohya_set, train={"batch_size": 2, "epochs": 3}, sample={"enabled": False})
    assert make_plan(cfg, report).sample_steps == []


@pytest.mark.parametrize(
    ("lr", "alpha", "zone"),
    [
        (1e-5, 16.0, "under"),
        (1e-4, 16.0, "under"),
        (1e-3, 16.0, "fit"),
        (1e-3, 8.0, "fit"),
        (1e-2, 16.0, "over"),
    ],
)
def test_dose_zone(kohya_set, lr, alpha, zone):
    report = scan_dataset(config(kohya_set).dataset)
    cfg = config(kohya_set, train={"batch_size": 2, "epochs": 3}, optim={"lr": lr},
                 lora={"rank": 16, "alpha": alpha}, dose={"fit_low": 0.05, "fit_high": 0.3})  # fmt: skip
    plan = make_plan(cfg, report)
    assert plan.dose == pytest.approx(lr * 210 * alpha / 16)
    assert plan.dose_zone == zone and (plan.dose_low, plan.dose_high) == (0.05, 0.3)
    assert words.say(plan.dose_explanation, "en") and words.say(plan.dose_explanation, "ko")
    assert f"{plan.dose:.3g}" in words.say(plan.dose_formula, "en")


def test_dose_counts_the_lr_the_schedule_gives(kohya_set):
    report = scan_dataset(config(kohya_set).dataset)
    flat = make_plan(config(kohya_set, optim={"lr": 1e-3, "scheduler": "constant"}), report)
    cos = make_plan(config(kohya_set, optim={"lr": 1e-3, "scheduler": "cosine", "warmup_steps": 10}), report)
    assert flat.schedule_mean == 1.0 and flat.dose == pytest.approx(1e-3 * flat.total_steps)
    assert cos.schedule_mean == pytest.approx(0.5, abs=0.03)
    assert cos.dose == pytest.approx(flat.dose * cos.schedule_mean)
    assert "cosine" in words.say(cos.dose_formula, "en") and "코사인 스케줄" in words.say(cos.dose_formula, "ko")
    assert "mean" not in words.say(flat.dose_formula, "en")


def test_unusable_dataset_cannot_be_planned(tmp_path):
    (tmp_path / "a.png").write_bytes(b"")
    cfg = config(tmp_path)
    with pytest.raises(UserError, match="no usable"):
        plan_from_config(cfg)


def test_conv_blocks_the_base_lacks_are_caught_by_the_plan_from_the_unet_config(kohya_set, tmp_path):
    lora = {"conv_rank": 8, "conv_blocks": ["up_blocks.2", "up_blocks.3"]}
    plan_from_config(config(kohya_set, model={"base": "demo"}, lora=lora))  # SD1.5's four levels: fine
    with pytest.raises(UserError, match=r"lora.conv_blocks: .* no block 'up_blocks.2'.*up_blocks.1"):
        plan_from_config(config(kohya_set, model={"base": "tiny-sd15"}, lora=lora))  # two levels
    plan_from_config(config(kohya_set, model={"base": "tiny-sd15"}, lora={**lora, "conv_rank": 0}))  # conv off
    from trainer.models.tiny import build_tiny_pipeline, save_pipeline

    folder = save_pipeline(build_tiny_pipeline("sdxl"), tmp_path / "sdxl")
    with pytest.raises(UserError, match=r"its blocks are down_blocks.0, down_blocks.1, mid_block, up_blocks.0"):
        plan_from_config(config(kohya_set, model={"base": str(folder)}, lora=lora))
    plan_from_config(config(kohya_set, model={"base": str(folder)}, lora={**lora, "conv_blocks": ["up_blocks"]}))
