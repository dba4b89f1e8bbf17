"""The mask maker: a subject mask beside each picture (``name-masklabel.png``) from CLIPSeg or an ONNX background
remover, each a tiny model of the real kind (``python -m trainer tiny-masker``). The tiny remover's output is the
brightness, so a light square on a dark ground must come out as that square's mask, upright, grown by ``expand``;
fill mode keeps every mask (file or transparency) already there; Undo puts back each mask file byte for byte; the
scan then finds every picture masked; the wizard's Dataset step does the same."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from trainer.caption.journal import last_change
from trainer.cli import main
from trainer.config.schema import DatasetConfig
from trainer.data.images import load_image_rgb
from trainer.data.masks import mask_image
from trainer.data.scan import scan_dataset
from trainer.errors import UserError
from trainer.masking.makers import choose, load_masker
from trainer.masking.run import dilate, mask_folder


@pytest.fixture(scope="module")
def makers(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("maskers")
    for kind in ("clipseg", "rembg"):
        assert main(["tiny-masker", kind, str(root / kind)]) == 0
    return {"clipseg": root / "clipseg", "rembg": root / "rembg" / "model.onnx"}


def square(path: Path, size=(96, 64), box=(16, 8, 48, 40), **save) -> Path:
    """A light square (``box``: left, top, right, bottom) on a dark ground."""
    im = Image.new("RGB", size, (12, 14, 16))
    im.paste((240, 236, 230), box)
    path.parent.mkdir(parents=True, exist_ok=True)
    im.save(path, **save)
    path.with_suffix(".txt").write_text("zxc, a square", encoding="utf-8")
    return path


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
            and ".lora-doctor" not in p.parts}


def test_dilation_grows_a_pixel_into_a_square():
    m = np.zeros((9, 9), np.float32)
    m[4, 4] = 1
    assert dilate(m, 2).sum() == 25 and dilate(m, 2)[2:7, 2:7].all() and dilate(m, 0).sum() == 1


def test_the_remover_masks_the_subject_where_training_reads_it(makers, tmp_path):
    a = square(tmp_path / "a.png")
    # stored lying on its side with EXIF "rotate 90° clockwise": upright it is 64 wide and 96 high
    stored = Image.new("RGB", (96, 64), (12, 14, 16))
    stored.paste((240, 236, 230), (0, 0, 24, 24))
    exif = Image.Exif()
    exif[0x0112] = 6
    b = tmp_path / "b.jpg"
    stored.save(b, exif=exif, quality=95)
    remover = load_masker(choose("rembg", str(makers["rembg"])))
    run = mask_folder(tmp_path, remover, threshold=0.5, expand=0)
    assert [r["mask"] for r in run.results] == ["a-masklabel.png", "b-masklabel.png"] and run.written == 2
    ma = np.asarray(mask_image(a))
    assert ma.shape == (64, 96) and ma[24, 32] == 255 and ma[56, 80] == 0 and ma[4, 4] == 0
    assert abs(run.results[0]["coverage"] - 32 * 32 / (96 * 64)) < 0.03
    mb = mask_image(b)
    picture = np.asarray(load_image_rgb(b).convert("L")) > 128
    assert mb is not None and mb.size == (64, 96)  # upright, as training fits it
    agree = (np.asarray(mb) > 128) == picture
    assert agree.mean() > 0.95, agree.mean()
    grown = mask_folder(tmp_path, remover, mode="overwrite", threshold=0.5, expand=4, write=False, keep=True)
    assert grown.results[0]["coverage"] > run.results[0]["coverage"] + 0.05 and grown.change is None
    assert (np.asarray(mask_image(a)) == ma).all()  # a preview wrote nothing
    asked = []
    stopped = mask_folder(tmp_path, remover, mode="overwrite", expand=3, stop=lambda: bool(asked.append(1)) or len(asked) > 1)
    assert stopped.stopped and stopped.written == 1 and (np.asarray(mask_image(b)) == np.asarray(mb)).all()


def test_a_maker_that_fails_part_way_keeps_the_masks_it_made(makers, tmp_path):
    for i in range(3):
        square(tmp_path / f"p{i}.png")
    remover = load_masker(choose("rembg", str(makers["rembg"])))
    made = []

    class Failing:
        kind, model = remover.kind, remover.model

        def probabilities(self, images, prompt):
            if len(made) == 2:
                raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
            made.append(1)
            return remover.probabilities(images, prompt)

    with pytest.raises(UserError, match=r"failed on p2\.png \(CUDA out of memory.*the 2 mask\(s\) made before it"):
        mask_folder(tmp_path, Failing(), threshold=0.5)
    assert (tmp_path / "p1-masklabel.png").is_file() and not (tmp_path / "p2-masklabel.png").exists()
    assert len(last_change(tmp_path, "masks").files) == 2  # one Undo takes them back


def test_fill_keeps_masks_already_there_and_undo_puts_back_each_byte(makers, tmp_path):
    square(tmp_path / "1_thing" / "own.png")
    own = tmp_path / "1_thing" / "own-MaskLabel.png"
    Image.new("L", (96, 64), 200).save(own)
    clear = Image.new("RGBA", (96, 64), (200, 10, 10, 255))
    clear.paste((0, 0, 0, 0), (0, 0, 20, 20))
    clear.save(tmp_path / "1_thing" / "clear.png")
    square(tmp_path / "1_thing" / "bare.png")
    before = files(tmp_path)
    remover = load_masker(choose("rembg", str(makers["rembg"])))
    run = mask_folder(tmp_path, remover, threshold=0.5)
    assert run.kept == 2 and [r["file"] for r in run.results] == ["1_thing/bare.png"]
    assert own.read_bytes() == before["1_thing/own-MaskLabel.png"]
    again = mask_folder(tmp_path, remover, mode="overwrite", threshold=0.5)
    assert again.written == 2  # bare's mask is the same bytes; own's and clear's new ones
    assert own.read_bytes() != before["1_thing/own-MaskLabel.png"]  # replaced in place, its own name kept
    assert not (tmp_path / "1_thing" / "own-masklabel.png").exists() or own.samefile(tmp_path / "1_thing" / "own-masklabel.png")
    assert main(["mask", str(tmp_path), "--undo"]) == 0
    assert main(["mask", str(tmp_path), "--undo"]) == 0
    assert files(tmp_path) == before and last_change(tmp_path, "masks") is None
    assert last_change(tmp_path) is None  # the captions' own journal is another one
    assert main(["mask", str(tmp_path), "--undo"]) == 2  # nothing left to undo: said, nothing touched
    with pytest.raises(UserError, match=r"threshold 1\.0"):
        mask_folder(tmp_path, remover, threshold=1.0)  # a threshold of 1 would mask nothing


def test_clipseg_through_the_cli_and_the_scan_then_finds_every_picture_masked(makers, tmp_path, capsys):
    for i in range(3):
        square(tmp_path / f"p{i}.png", box=(8 + 8 * i, 8, 40 + 8 * i, 40))
    cfg = DatasetConfig(path=str(tmp_path), trigger="zxc", masked_loss=True)
    assert sum(p["kind"] == "no_mask" for p in scan_dataset(cfg).problems) == 3
    assert main(["mask", str(tmp_path), "--model", str(makers["clipseg"]), "--prompt", "a square, a box",
                 "--threshold", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["written"] == 3 and out["masker"] == "clipseg" and not out["failed"]
    for i in range(3):
        m = mask_image(tmp_path / f"p{i}.png")
        assert m is not None and m.size == (96, 64) and len(set(np.asarray(m).ravel().tolist())) > 2  # soft
    kinds = {p["kind"] for p in scan_dataset(cfg).problems}
    assert "no_mask" not in kinds and "mask_files" in kinds  # the masks are masks, not pictures
    assert main(["mask", str(tmp_path), "--model", str(makers["clipseg"])]) == 2
    assert "CLIPSeg needs words" in capsys.readouterr().err
    assert main(["mask", str(tmp_path), "--masker", "rembg", "--model", str(tmp_path / "nothing.onnx")]) == 2
    assert "nothing.onnx" in capsys.readouterr().err
    assert main(["mask", str(tmp_path), "--masker", "rembg", "--model", str(makers["clipseg"])]) == 2  # not ONNX
    assert "model.onnx" in capsys.readouterr().err
    assert main(["mask", str(tmp_path), "--masker", "rembg", "--expand", "999"]) == 2
    assert "expand 999" in capsys.readouterr().err


@pytest.fixture(scope="module")
def api(wizard_api):
    return wizard_api


def test_the_wizard_previews_makes_and_undoes_masks(makers, api, tmp_path):
    for i in range(2):
        square(tmp_path / f"p{i}.png")
    before = files(tmp_path)
    folder = {"dataset_path": str(tmp_path), "trigger": "zxc", "reg_path": "", "val_path": "", "masked_loss": True}
    common = {**folder, "mask_kind": "rembg", "mask_model": str(makers["rembg"]), "mask_threshold": 0.5,
              "mask_expand": 0}
    shown = api("mask_preview", **common)
    assert len(shown["mask_gallery"]) == 2 and files(tmp_path) == before
    out = api("mask_all", **common)
    assert "2 masks written" in out["mask_msg"] and len(out["mask_gallery"]) == 2, out["mask_msg"]
    assert (tmp_path / "p0-masklabel.png").is_file() and "has no mask beside it" not in json.dumps(out["ds_problems"])
    undone = api("mask_undo", **folder)
    assert "2 mask files put back" in undone["mask_msg"] and files(tmp_path) == before
    assert "has no mask beside it" in json.dumps(undone["ds_problems"])  # scanned again: unmasked once more
    refused = api("mask_preview", **{**common, "mask_kind": "clipseg", "mask_model": str(makers["clipseg"])})
    assert "CLIPSeg needs words" in refused["mask_msg"]
