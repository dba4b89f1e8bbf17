"""The demo's pictures are shown at a size a person can judge, and the default preset samples as docs/demo.md says.

The demo draws 64 px pictures; the Review grid and the Train gallery enlarge them for display
(``trainer.data.images.for_display``) by a whole factor, nearest neighbour: each pixel becomes a block of its own
colour, so what a person judges is exactly what was drawn and measured.
"""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from trainer.config.presets import preset_config
from trainer.data.images import DISPLAY_SIDE, display_scale, for_display
from trainer.demo.world import character_scene, demo_sample_prompts, render_scene

DEMO_PAGE = Path(__file__).resolve().parent.parent / "docs" / "demo.md"


def _blocks_equal_pixels(small: Image.Image, big: Image.Image) -> bool:
    k = big.width // small.width
    a = np.asarray(small.convert("RGB"))
    return big.size == (small.width * k, small.height * k) and np.array_equal(
        np.repeat(np.repeat(a, k, axis=0), k, axis=1), np.asarray(big))


def test_a_demo_picture_is_enlarged_to_256_px_pixel_for_pixel():
    picture = render_scene(character_scene("sky", "center", "small"), 64)
    shown = for_display(picture)
    assert min(shown.size) >= 256 and shown.mode == "RGB"
    assert _blocks_equal_pixels(picture, shown)  # every 4x4 block is the original pixel: nothing invented or blurred


def test_display_keeps_proportions_and_leaves_big_pictures_alone():
    bucket = Image.new("RGB", (48, 64), (10, 20, 30))
    bucket.putpixel((47, 63), (250, 0, 0))
    assert display_scale(bucket.size) == 4
    assert _blocks_equal_pixels(bucket, for_display(bucket))  # 192 x 256: the bucket's shape, within the box
    photo = Image.new("RGB", (512, 384))
    assert display_scale(photo.size) == 1 and for_display(photo).size == (512, 384)
    assert for_display(Image.new("RGBA", (64, 64))).mode == "RGB"


def test_the_review_grid_inlines_the_enlarged_picture_losslessly(tmp_path):
    from ui.steps.review import _data_uri

    picture = render_scene(character_scene("grass", "left", "large", "green"), 64)
    path = tmp_path / "00_trigger.png"
    picture.save(path)
    head, data = _data_uri(str(path)).split(",", 1)
    assert head == "data:image/png;base64"  # PNG: the blocks stay exact (JPEG would smear them)
    shown = Image.open(io.BytesIO(base64.b64decode(data)))
    assert min(shown.size) >= 256 and _blocks_equal_pixels(picture, shown.convert("RGB"))


def test_a_prompts_seeds_are_tiled_in_one_grid_cell_each_pixel_for_pixel(tmp_path):
    """Four pictures of one prompt (four sample seeds): one 256 px cell, 2 x 2 tiles of 128 px, each tile its
    picture enlarged by 2 exactly."""
    from ui.steps.review import _data_uri

    pictures = [render_scene(character_scene(bg, "left", "large", "green"), 64) for bg in ("grass", "sky", "sand", "grass")]
    paths = []
    for i, picture in enumerate(pictures):
        paths.append(str(tmp_path / f"00_trigger_s{i}.png"))
        picture.save(paths[-1])
    head, data = _data_uri(paths).split(",", 1)
    shown = Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")
    assert head == "data:image/png;base64" and shown.size == (256, 256)
    for i, picture in enumerate(pictures):
        x, y = (i % 2) * 128, (i // 2) * 128
        assert _blocks_equal_pixels(picture, shown.crop((x, y, x + 128, y + 128)))


def test_the_train_gallery_opens_samples_enlarged(tmp_path):
    from ui.live import open_rgb

    picture = render_scene(character_scene("sand", "bottom", "small"), 64)
    picture.save(tmp_path / "s.png")
    assert _blocks_equal_pixels(picture, open_rgb(tmp_path / "s.png"))


def test_the_default_preset_samples_as_the_demo_page_says():
    sample = preset_config("demo-character").sample
    text = DEMO_PAGE.read_text(encoding="utf-8")
    status = text[text.index("### Demo status"):]
    found = re.search(r"samples with (\d+) DDIM steps, guidance ([\d.]+) and sample seed (\d+)", status)
    assert found, "docs/demo.md's Demo status names the preset's sample settings"
    steps, guidance, seed = int(found[1]), float(found[2]), int(found[3])
    assert (sample.steps, sample.guidance, sample.seed) == (steps, guidance, seed)
    assert [p.replace("{trigger}", "zxc") for p in sample.prompts] == demo_sample_prompts()
    assert f"{DISPLAY_SIDE} px" in status  # and says how big the grid shows them


@pytest.mark.slow
def test_a_sample_drawn_by_the_demo_base_is_shown_pixel_for_pixel():
    """The same on a picture the trainer draws: the demo base, the preset's sampler settings, its sample seed."""
    import torch

    from trainer.config.schema import ModelConfig
    from trainer.models.base import DEMO_BASE_DIR, load_pipeline
    from trainer.models.precision import decide_precision
    from trainer.sampling import render, sampling_pipeline

    if not (DEMO_BASE_DIR / "model_index.json").is_file():
        pytest.skip("demo/base is missing: run scripts/train_demo_base.py")
    cfg = preset_config("demo-character")
    pipe, info = load_pipeline(ModelConfig(base="demo"))
    plan = decide_precision("fp32", torch.device("cpu"))
    picture = render(sampling_pipeline(pipe, info.family, info.prediction_type), "zxc", cfg.sample, (64, 64), torch.device("cpu"),
                     plan, cfg.sample.seed)
    shown = for_display(picture)
    assert picture.size == (64, 64) and shown.size == (256, 256)
    assert _blocks_equal_pixels(picture, shown)
