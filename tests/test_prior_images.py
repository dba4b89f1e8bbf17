"""dataset.reg_path: prior (regularisation) images trained beside the dataset, captioned without the trigger."""

from __future__ import annotations

import json

import pytest
from PIL import Image
from safetensors import safe_open

from tests.helpers import tiny_config, write_toy_dataset
from trainer.data.scan import scan_dataset
from trainer.errors import UserError
from trainer.io import read_jsonl
from trainer.plan.steps import make_plan
from trainer.run.events import MemorySink
from trainer.train.loop import run_training


def _write_prior(root, n: int = 3, repeats: int = 2):
    folder = root / f"{repeats}_world"
    folder.mkdir(parents=True)
    for i in range(n):
        Image.new("RGB", (64, 64), (40 * i, 120, 200)).save(folder / f"w{i}.png")
        (folder / f"w{i}.txt").write_text(f"a blue square on sky, number {i}", encoding="utf-8")
    return root


def test_prior_images_join_the_scan_without_trigger_warnings(tmp_path):
    data = write_toy_dataset(tmp_path / "data", n=4)
    prior = _write_prior(tmp_path / "prior")
    plain = scan_dataset(path=str(data), trigger="zxc", resolution=64, bucket_step=16, min_bucket_side=32)
    report = scan_dataset(path=str(data), trigger="zxc", resolution=64, bucket_step=16, min_bucket_side=32,
                          reg_path=str(prior))
    assert report.images == 7 and report.prior_images == 3
    assert report.image_repeats == plain.image_repeats + 3 * 2
    priors = [it for it in report.items if it.prior]
    assert {it.folder for it in priors} == {"reg/2_world"} and all(it.rel.startswith("reg/2_world/") for it in priors)
    assert not [p for p in report.problems if p["kind"] == "no_trigger"]
    assert report.trigger_share == plain.trigger_share == 1.0  # the dataset's own captions
    assert report.tags == plain.tags
    with pytest.raises(UserError, match=r"dataset\.reg_path"):
        scan_dataset(path=str(data), trigger="zxc", reg_path=str(tmp_path / "missing"))


@pytest.mark.slow
def test_prior_images_train_with_their_loss_weight_and_are_counted_in_the_file(tmp_path):
    data = write_toy_dataset(tmp_path / "data", n=2)  # 2 images x 10 repeats
    prior = _write_prior(tmp_path / "prior", n=2, repeats=5)  # 2 x 5
    cfg = tiny_config(data, tmp_path / "runs", {"dataset.reg_path": str(prior), "dataset.prior_loss_weight": 0.0,
                                               "train.batch_size": 1, "train.max_steps": 0, "train.epochs": 1})
    assert make_plan(cfg, scan_dataset(cfg.dataset)).total_steps == 30
    result = run_training(cfg, MemorySink())
    assert result.status == "finished", result.message
    losses = [r["loss"] for r in read_jsonl(result.run_dir / "metrics.jsonl")]
    assert len(losses) == 30
    assert sum(loss == 0.0 for loss in losses) == 10  # every prior step, weighted 0
    with safe_open(str(result.run_dir / "final" / "lora.safetensors"), "pt") as f:
        meta = f.metadata()
    assert meta["ss_num_reg_images"] == "10" and meta["ss_num_train_images"] == "20"
    assert json.loads(meta["ss_reg_dataset_dirs"]) == {"5_world": {"n_repeats": 5, "img_count": 2}}
    assert "5_world" not in json.loads(meta["ss_tag_frequency"])
