"""Masked training (``dataset.masked_loss``, trainer/data/masks.py): a picture's mask — its OneTrainer mask file beside
it, else its transparency — is fitted to the bucket as the picture is (scaled, centre-cropped, flipped with it) and
weighs the loss at the latents' size; outside it the loss counts ``dataset.unmasked_weight``. The scan says which
pictures have none; a short run trains with masks; sd-scripts' ``masked_loss`` maps to it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

import words
from tests.helpers import tiny_config, write_toy_dataset
from trainer.data.batches import Sample
from trainer.data.masks import mask_tensor


def _left_half_mask(path, size=(96, 64)):
    """A mask whose left half is white: OneTrainer's file for ``path``."""
    m = np.zeros((size[1], size[0]), dtype=np.uint8)
    m[:, : size[0] // 2] = 255
    Image.fromarray(m, "L").save(path.with_name(path.stem + "-masklabel.png"))


def test_a_mask_is_fitted_to_the_bucket_as_its_picture_and_flipped_with_it(tmp_path):
    pic = tmp_path / "a.png"
    Image.new("RGB", (96, 64), (200, 30, 30)).save(pic)
    _left_half_mask(pic)
    # 96×64 into a 64×64 bucket: scaled to 96×64 (no change), centre-cropped to x 16..80: white on x 16..48
    m = mask_tensor(pic, (64, 64), False, (8, 8))
    assert m.shape == (1, 8, 8)
    assert torch.allclose(m[0, :, :4], torch.ones(8, 4)) and torch.allclose(m[0, :, 4:], torch.zeros(8, 4))
    flipped = mask_tensor(pic, (64, 64), True, (8, 8))
    assert torch.equal(flipped, m.flip(-1))
    # found in another case too (a mask is never a picture, so it must be found as a mask)
    pic.with_name("a-masklabel.png").rename(pic.with_name("a-MaskLabel.PNG"))
    assert torch.equal(mask_tensor(pic, (64, 64), False, (8, 8)), m)
    # no mask file and no transparency: none; transparency: the opaque part
    Image.new("RGB", (64, 64)).save(tmp_path / "b.png")
    assert mask_tensor(tmp_path / "b.png", (64, 64), False, (8, 8)) is None
    rgba = np.zeros((64, 64, 4), dtype=np.uint8)
    rgba[32:, :, 3] = 255  # the bottom half opaque
    Image.fromarray(rgba, "RGBA").save(tmp_path / "c.png")
    c = mask_tensor(tmp_path / "c.png", (64, 64), False, (8, 8))
    assert torch.allclose(c[0, 4:], torch.ones(4, 8)) and torch.allclose(c[0, :4], torch.zeros(4, 8))


@pytest.mark.parametrize("floor", [0.0, 0.25])
def test_the_loss_counts_the_masked_part_and_the_rest_at_its_weight(tmp_path, floor):
    from trainer.train.feeding import Feeder

    pic = tmp_path / "a.png"
    Image.new("RGB", (64, 64)).save(pic)
    _left_half_mask(pic, (64, 64))
    cfg = tiny_config(tmp_path, tmp_path / "runs", {"dataset.masked_loss": True, "dataset.unmasked_weight": floor})
    feeder = Feeder(cfg, None, None, [])
    batch = [Sample(0, str(pic), "a.png", (64, 64), "zxc", 1)]
    pred, target = torch.zeros(1, 4, 8, 8), torch.zeros(1, 4, 8, 8)
    target[..., :4] = 1.0  # an error of 1 inside the mask (the left half), 0 outside
    inside = feeder.loss(pred, target, batch, [False])
    target[..., 4:] = 3.0  # and an error of 3 outside
    both = feeder.loss(pred, target, batch, [False])
    assert inside.item() == pytest.approx(1.0 / (1 + floor))  # the mean over what it weighs
    assert both.item() == pytest.approx((1.0 + 9.0 * floor) / (1 + floor))
    flipped = feeder.loss(pred, target, batch, [True])  # the mask flips with the picture: now the 9s are inside
    assert flipped.item() == pytest.approx((9.0 + 1.0 * floor) / (1 + floor))
    cfg.dataset.masked_loss = False
    assert feeder.loss(pred, target, batch, [False]).item() == pytest.approx(5.0)  # off: the plain mean


def test_a_short_run_trains_with_masks_and_the_scan_names_the_pictures_without(tmp_path, capsys):
    from trainer.data.scan import scan_dataset
    from trainer.io import read_jsonl
    from trainer.run.events import MemorySink
    from trainer.train.loop import run_training

    data = write_toy_dataset(tmp_path / "data", n=4)
    pictures = sorted(p for p in data.rglob("*.png"))
    for p in pictures[:3]:
        _left_half_mask(p, Image.open(p).size)
    cfg = tiny_config(data, tmp_path / "runs", {"train.max_steps": 3, "dataset.masked_loss": True,
                                                "dataset.unmasked_weight": 0.0, "measure.enabled": True,
                                                "sample.enabled": True})
    report = scan_dataset(cfg.dataset)
    assert report.images == 4
    no_mask = [p for p in report.problems if p["kind"] == "no_mask"]
    assert [p["file"] for p in no_mask] == [pictures[3].relative_to(data).as_posix()]
    assert words.say(no_mask[0]["message"]).startswith("masked training is on, but it has no mask")
    result = run_training(cfg, MemorySink())
    assert result.status == "finished", result.message
    losses = [r["loss"] for r in read_jsonl(result.run_dir / "metrics.jsonl")]
    assert len(losses) == 3 and all(np.isfinite(losses))
    # the model measures know the run is masked and read what the trigger adds to its no-trigger pictures
    from trainer.doctor.model_measures import measures_by_step

    rows = read_jsonl(result.run_dir / "measures.jsonl")
    assert rows and all(r.get("masked") for r in rows)
    others = [r.get("base_samples") or r["prior"] for r in rows]
    assert all({"reach", "add"} <= set(v) for o in others for v in o.values())
    shares = [m["trigger_share"] for m in measures_by_step(result.run_dir).values()]
    assert all(s is not None and 0.0 <= s < 10.0 for s in shares)
    from trainer.cli import main  # measured again after the fact, the table shows it

    capsys.readouterr()
    assert main(["measure", str(result.run_dir)]) == 0
    assert "trigger share" in capsys.readouterr().out


def test_sd_scripts_masked_loss_maps_to_ours():
    from trainer.kohya.mapping import ROWS

    (row,) = [r for r in ROWS if r.ours == "dataset.masked_loss"]
    assert (row.gui, row.sd, row.sd_default) == ("masked_loss", "masked_loss", False)
    assert "conditioning_data_dir" in words.say(row.note)


def test_troubleshoot_offers_masked_training_for_backgrounds_that_stick():
    """'It resembles, but pose and background never change': the monotonous data's prescriptions now include
    masked training, one change (dataset.masked_loss on), struck through for a run that trained masked already."""
    from trainer.config.schema import Config
    from trainer.doctor.changes import apply_change
    from trainer.doctor.diagnose import change_refusal
    from trainer.doctor.kb import load_kb

    kb = load_kb()
    assert "masked_loss_on" in [p.id for p in kb.prescriptions_for("data_monotonous")]
    rx = kb.prescription("masked_loss_on")
    assert apply_change(Config(), rx.change).dataset.masked_loss
    masked = Config.model_validate({"dataset": {"masked_loss": True}})
    assert change_refusal(Config(), rx.change) is None and change_refusal(masked, rx.change) == "already"
    assert "masklabel" in rx.text("detail", "en") and "마스크 학습" in rx.text("title", "ko")


def test_check_dataset_masked_names_the_pictures_without_a_mask(tmp_path, capsys):
    import json

    from trainer.cli import main

    data = write_toy_dataset(tmp_path / "data", n=3)
    pictures = sorted(data.rglob("*.png"))
    _left_half_mask(pictures[0], Image.open(pictures[0]).size)
    assert main(["check-dataset", str(data), "--trigger", "zxc", "--resolution", "64", "--masked", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    named = sorted(p["file"] for p in report["problems"] if p["kind"] == "no_mask")
    assert named == sorted(p.relative_to(data).as_posix() for p in pictures[1:])
    assert main(["check-dataset", str(data), "--trigger", "zxc", "--resolution", "64", "--json"]) == 0
    assert not [p for p in json.loads(capsys.readouterr().out)["problems"] if p["kind"] == "no_mask"]


@pytest.mark.parametrize("floor", [0.0, 0.1])
def test_the_doctors_measures_weigh_a_masked_picture_as_training_does(tmp_path, floor):
    """The model measures' per-picture loss on a masked run is training's loss: the background a masked run is
    told not to learn would otherwise stay in every reading and pull the trigger's gain down on a healthy run."""
    from trainer.data.masks import mask_weights
    from trainer.train.feeding import Feeder
    from trainer.train.probes import _per_step

    pic = tmp_path / "a.png"
    Image.new("RGB", (64, 64)).save(pic)
    _left_half_mask(pic, (64, 64))
    cfg = tiny_config(tmp_path, tmp_path / "runs", {"dataset.masked_loss": True, "dataset.unmasked_weight": floor})
    batch = [Sample(0, str(pic), "a.png", (64, 64), "zxc", 1)]
    gen = torch.Generator().manual_seed(0)
    pred, target = torch.randn(1, 4, 8, 8, generator=gen), torch.randn(1, 4, 8, 8, generator=gen)
    trained = Feeder(cfg, None, None, []).loss(pred, target, batch, [False]).item()
    w = mask_weights(pic, (64, 64), False, (8, 8), floor)
    measured = _per_step(pred[:, None], target[:, None], [w[None]])[0][0]  # one picture, one timestep
    assert measured == pytest.approx(trained, abs=1e-5)
    whole = _per_step(pred[:, None], target[:, None])[0][0]
    assert whole == pytest.approx((pred - target).pow(2).mean().item(), abs=1e-5) and abs(whole - measured) > 0.01
