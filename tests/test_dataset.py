"""Dataset scan: kohya folders, captions, one problem per bad file, and the scan never crashing."""

from __future__ import annotations

import io
import json
import struct
import tracemalloc
import zlib

import numpy as np
import pytest
from PIL import Image

import words
from trainer.config.schema import DatasetConfig
from trainer.data.buckets import assign_bucket, buckets_for, crop_box, fit_to_bucket, make_buckets
from trainer.data.images import load_image_rgb
from trainer.data.problems import PROBLEM_KINDS
from trainer.data.scan import BOMB_PIXELS, scan_dataset
from trainer.errors import UserError


def cfg(path, **kw) -> DatasetConfig:
    return DatasetConfig(path=str(path), resolution=kw.pop("resolution", 64), **kw)


def kinds_by_file(report) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in report.problems:
        out.setdefault(p["file"], []).append(p["kind"])
    return out


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width × height`` but holds one byte of pixel data."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\0"))
        + chunk(b"IEND", b"")
    )


# ------------------------------------------------------------------------------------------------ folders


def test_kohya_folders_give_repeats_and_class_words(tmp_path, make_image):
    for i in range(3):
        make_image(tmp_path / "10_zxc girl" / f"a{i}.png", caption=f"zxc, pose {i}")
    make_image(tmp_path / "plain" / "b.png", caption="zxc, plain")
    make_image(tmp_path / "root.png", caption="zxc, root")
    make_image(tmp_path / "10_zxc girl" / "nocap.png")
    r = scan_dataset(cfg(tmp_path, trigger="zxc", repeats=2))
    folders = {f["name"]: f for f in r.folders}
    assert folders["10_zxc girl"] == {"name": "10_zxc girl", "repeats": 10, "images": 4}
    assert folders["plain"]["repeats"] == 2 and folders["."]["repeats"] == 2
    assert r.images == 6 and r.captions == 5
    assert r.image_repeats == 4 * 10 + 2 + 2
    nocap = next(it for it in r.items if it.rel.endswith("nocap.png"))
    # kohya's DreamBooth rule: an uncaptioned picture trains with the folder's words.
    assert nocap.caption == "zxc girl" and nocap.caption_source == "folder"
    assert kinds_by_file(r) == {"10_zxc girl/nocap.png": ["missing_caption"]}


def test_onetrainer_mask_files_are_not_trained_as_pictures(tmp_path, make_image):
    """``x-masklabel.png`` beside ``x.png`` is OneTrainer's mask: before, the scan took each for a picture (a white
    shape captioned with the trigger). They are no pictures, said once per folder; the doctor's colours skip them
    too. (What masked training does with them: tests/test_masked_loss.py.)"""
    from PIL import Image

    import words
    from trainer.config.schema import Config
    from trainer.doctor.pictures import training_pictures

    for i in range(3):
        make_image(tmp_path / "5_zxc" / f"a{i}.png", caption=f"zxc, pose {i}")
        Image.new("L", (64, 64), 255).save(tmp_path / "5_zxc" / f"a{i}-masklabel.png")
    Image.new("L", (64, 64), 255).save(tmp_path / "root-MaskLabel.png")
    r = scan_dataset(cfg(tmp_path, trigger="zxc"))
    assert r.images == 3 and not [it for it in r.items if "masklabel" in it.rel.lower()]
    said = {p["file"]: p for p in r.problems if p["kind"] == "mask_files"}
    assert set(said) == {"5_zxc", "."} and said["5_zxc"]["severity"] == "info" and said["5_zxc"]["excluded"]
    assert words.say(said["5_zxc"]["message"]).startswith("3 mask file(s) in OneTrainer's naming")
    assert "마스크 파일(이름-masklabel.png) 3개: 그림으로 학습하지 않습니다" in words.say(said["5_zxc"]["message"], "ko")
    config = Config.model_validate({"dataset": {"path": str(tmp_path)}})
    assert training_pictures(config, 64) and not [p for p in training_pictures(config, 64) if "mask" in p.name.lower()]


def test_missing_path_file_path_and_empty_folder_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="not found"):
        scan_dataset(cfg(tmp_path / "nope"))
    f = tmp_path / "file.png"
    f.write_bytes(b"x")
    with pytest.raises(UserError, match="is a file"):
        scan_dataset(cfg(f))
    empty = tmp_path / "empty"
    (empty / "10_x").mkdir(parents=True)
    (empty / "notes.txt").write_text("hi")
    with pytest.raises(UserError, match="no images") as e:
        scan_dataset(cfg(empty))
    assert str(empty) in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(UserError):
        scan_dataset(DatasetConfig(path=""))


def test_keyword_overrides_replace_config_fields(tmp_path, make_image):
    make_image(tmp_path / "a.png", caption="zxc")
    r = scan_dataset(DatasetConfig(), path=str(tmp_path), resolution=64, trigger="zxc")
    assert r.images == 1 and r.trigger_share == 1.0


# ---------------------------------------------------------------------------------------------- problems


def test_each_bad_file_gets_exactly_one_problem_and_good_files_none(tmp_path, make_image):
    for i in range(3):
        make_image(tmp_path / f"good{i}.png", caption="zxc, smiling")
    good_jpg = make_image(tmp_path / "photo.jpg", size=(128, 96), caption="zxc, outdoors")
    data = good_jpg.read_bytes()
    (tmp_path / "truncated.jpg").write_bytes(data[: len(data) // 2])
    (tmp_path / "truncated.txt").write_text("zxc")
    (tmp_path / "zero.png").write_bytes(b"")
    (tmp_path / "zero.txt").write_text("zxc")
    (tmp_path / "text.png").write_text("this is not a picture")
    (tmp_path / "text.txt").write_text("zxc")
    make_image(tmp_path / "tiny.png", size=(1, 1), caption="zxc")
    make_image(tmp_path / "nocaption.png")

    r = scan_dataset(cfg(tmp_path, trigger="zxc"))

    assert kinds_by_file(r) == {
        "truncated.jpg": ["unreadable_image"],
        "zero.png": ["zero_byte"],
        "text.png": ["not_an_image"],
        "tiny.png": ["too_small"],
        "nocaption.png": ["missing_caption"],
    }
    assert r.usable and r.images == 5  # 3 good pngs, the jpg, the uncaptioned one
    for p in r.problems:
        assert p["severity"] in {"error", "warning", "info"}
        en, ko = words.say(p["message"], "en"), words.say(p["message"], "ko")
        assert en and ko and "{" not in en + ko
    errors = {p["file"] for p in r.problems if p["severity"] == "error"}
    assert errors == {"truncated.jpg", "zero.png", "text.png", "tiny.png"}
    assert errors.isdisjoint(it.rel for it in r.items)
    json.dumps(r.to_json(), allow_nan=False)  # what the CLI and plan.json write


def test_nothing_usable_is_a_report_not_a_crash(tmp_path):
    (tmp_path / "a.png").write_bytes(b"")
    (tmp_path / "b.jpg").write_text("nope")
    r = scan_dataset(cfg(tmp_path))
    assert not r.usable and r.images == 0 and len(r.problems) == 2


@pytest.mark.parametrize("pillow_limit", ["default", "disabled"])
def test_decompression_bomb_is_refused_from_the_header(tmp_path, make_image, monkeypatch, pillow_limit):
    if pillow_limit == "disabled":
        monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", None)  # then only our own header check stands
    make_image(tmp_path / "ok.png", caption="x")
    (tmp_path / "bomb.png").write_bytes(png_header_only(100_000, 100_000))
    side = int(BOMB_PIXELS**0.5) + 100
    (tmp_path / "big.png").write_bytes(png_header_only(side, side))
    tracemalloc.start()
    try:
        r = scan_dataset(cfg(tmp_path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert kinds_by_file(r) == {"bomb.png": ["decompression_bomb"], "big.png": ["decompression_bomb"]}
    assert peak < 20 * 2**20  # decoding either would need gigabytes


def test_animated_cmyk_alpha_and_16bit_are_converted_and_noted(tmp_path, make_image):
    frames = [Image.new("RGB", (64, 64), c) for c in ("red", "blue", "green")]
    frames[0].save(tmp_path / "anim.gif", save_all=True, append_images=frames[1:])
    make_image(tmp_path / "print.jpg", mode="CMYK")
    rgba = Image.new("RGBA", (64, 64), (255, 0, 0, 255))
    rgba.paste((0, 0, 0, 0), (0, 0, 32, 64))  # left half transparent
    rgba.save(tmp_path / "cutout.png")
    make_image(tmp_path / "opaque.png", mode="RGBA")  # alpha present but all opaque: nothing to say
    Image.new("I;16", (64, 64), 65535).save(tmp_path / "deep.png")
    for name in ("anim", "print", "cutout", "opaque", "deep"):
        (tmp_path / f"{name}.txt").write_text("x")

    r = scan_dataset(cfg(tmp_path))

    assert kinds_by_file(r) == {
        "anim.gif": ["animated"],
        "print.jpg": ["cmyk"],
        "cutout.png": ["alpha_channel"],
        "deep.png": ["high_bit_depth"],
    }
    assert all(p["severity"] == "info" and not p["excluded"] for p in r.problems)
    assert r.images == 5
    assert "3 frames" in next(words.say(p["message"]) for p in r.problems if p["kind"] == "animated")

    cut = load_image_rgb(tmp_path / "cutout.png")
    assert (
        cut.mode == "RGB" and cut.getpixel((0, 0)) == (255, 255, 255) and cut.getpixel((63, 0)) == (255, 0, 0)
    )
    assert load_image_rgb(tmp_path / "deep.png").getpixel((5, 5)) == (255, 255, 255)  # scaled, not clipped
    assert load_image_rgb(tmp_path / "print.jpg").mode == "RGB"
    assert load_image_rgb(tmp_path / "anim.gif").convert("RGB").getpixel((5, 5)) == (255, 0, 0)


def test_exif_rotated_portrait_reports_upright_size(tmp_path):
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90° clockwise to view"
    Image.new("RGB", (128, 64), "gray").save(tmp_path / "portrait.jpg", exif=exif)
    (tmp_path / "portrait.txt").write_text("x")
    r = scan_dataset(cfg(tmp_path, resolution=64, bucket_step=8, min_bucket_side=8))
    (item,) = r.items
    assert (item.width, item.height) == (64, 128)
    assert item.bucket[1] > item.bucket[0]  # a tall bucket
    assert kinds_by_file(r) == {"portrait.jpg": ["exif_rotated"]}
    assert load_image_rgb(item.path).size == (64, 128)


def test_duplicate_later_file_is_the_problem(tmp_path, make_image):
    a = make_image(tmp_path / "1_a" / "x.png", caption="x")
    (tmp_path / "2_b").mkdir()
    (tmp_path / "2_b" / "copy.png").write_bytes(a.read_bytes())
    (tmp_path / "2_b" / "copy.txt").write_text("x")
    r = scan_dataset(cfg(tmp_path))
    (p,) = r.problems
    assert (p["file"], p["kind"], p["excluded"]) == ("2_b/copy.png", "duplicate", True)
    assert "1_a/x.png" in words.say(p["message"])
    assert r.images == 1 and r.image_repeats == 1


def _scene(path, seed: int, size=(96, 96)):
    """A picture with shapes in it (a few random blocks of colour on a gradient), each seed its own."""
    rng = np.random.default_rng(seed)
    a = np.zeros((*size[::-1], 3), np.float32) + np.linspace(30, 200, size[0])[None, :, None]
    for _ in range(6):
        x, y = rng.integers(0, size[0] - 20, 2)
        a[y:y + rng.integers(8, 30), x:x + rng.integers(8, 30)] = rng.integers(0, 256, 3)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(a.clip(0, 255).astype(np.uint8)).save(path)
    path.with_suffix(".txt").write_text("zxc", encoding="utf-8")
    return path


def test_a_resized_recoloured_copy_is_named_and_kept_and_different_pictures_are_not(tmp_path):
    """The same picture enlarged and saved as JPEG, or made brighter, is named against the first file (kept: the
    user decides); twelve different pictures, the demo world's 50 in plain folders and a 90 % crop are not."""
    from PIL import ImageEnhance

    from trainer.demo.datasets import write_character_dataset, write_prior_dataset

    for i in range(12):
        _scene(tmp_path / "10_zxc" / f"p{i:02}.png", i)
    src = Image.open(tmp_path / "10_zxc" / "p03.png")
    src.resize((384, 384), Image.Resampling.BICUBIC).save(tmp_path / "10_zxc" / "web_copy.jpg", quality=70)
    ImageEnhance.Brightness(src).enhance(1.15).save(tmp_path / "10_zxc" / "q_brighter.png")
    src.crop((5, 5, 91, 91)).resize((96, 96)).save(tmp_path / "10_zxc" / "r_cropped.png")
    for extra in ("web_copy", "q_brighter", "r_cropped"):
        (tmp_path / "10_zxc" / f"{extra}.txt").write_text("zxc", encoding="utf-8")
    r = scan_dataset(cfg(tmp_path))
    near = [p for p in r.problems if p["kind"] == "near_copy"]
    assert {p["file"]: p["message"].values["original"] for p in near} == {
        "10_zxc/q_brighter.png": "10_zxc/p03.png", "10_zxc/web_copy.jpg": "10_zxc/p03.png"}
    assert all(p["severity"] == "warning" and not p["excluded"] for p in near) and r.images == 15
    said = words.say(near[0]["message"])
    assert "10_zxc/p03.png" in said and "twice as often" in said and "10_zxc/p03.png" in words.say(near[0]["message"], "ko")
    # the demo world's own pictures: the same character on the same sky a few pixels apart is not a copy
    write_character_dataset(tmp_path / "demo" / "c")
    write_prior_dataset(tmp_path / "demo" / "p")
    demo = scan_dataset(cfg(tmp_path / "demo" / "c", reg_path=str(tmp_path / "demo" / "p")))
    assert demo.images == 50 and "near_copy" not in demo.problem_counts


def test_near_copies_are_found_across_comparison_blocks_and_flat_pictures_match_nothing(monkeypatch):
    from trainer.data import near_copies

    monkeypatch.setattr(near_copies, "_BLOCK", 3)  # 8 pictures in three blocks
    rng = np.random.default_rng(0)
    seen = near_copies.Seen()
    shapes = [Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)) for _ in range(6)]
    for i, im in enumerate(shapes):
        seen.add(f"{i}.png", near_copies.thumbnail(im))
    seen.add("copy_of_1.png", near_copies.thumbnail(shapes[1].resize((64, 64))))
    seen.add("copy_of_5.png", near_copies.thumbnail(shapes[5].resize((48, 48))))
    for shade in (40, 200):  # flat pictures (and one with a single odd pixel) have no shape to compare
        flat = Image.new("RGB", (64, 64), (shade, shade // 2, 9))
        flat.putpixel((0, 0), (255, 0, 255))
        assert near_copies.thumbnail(flat) is None
    assert [(a, b) for a, b, _ in seen.near_copies()] == [("copy_of_1.png", "1.png"), ("copy_of_5.png", "5.png")]


def test_caption_problems_not_utf8_empty_and_no_trigger(tmp_path, make_image):
    make_image(tmp_path / "ok.png", caption="zxc, red hair")
    make_image(tmp_path / "euckr.png")
    (tmp_path / "euckr.txt").write_bytes("zxc, 빨간 머리".encode("cp949"))
    make_image(tmp_path / "blank.png", caption="  \n ")
    make_image(tmp_path / "other.png", caption="zxcv, a girl")  # "zxcv" is not the word "zxc"
    make_image(tmp_path / "bom.png")
    (tmp_path / "bom.txt").write_bytes("\ufeffZXC, smiling".encode())
    r = scan_dataset(cfg(tmp_path, trigger="zxc"))
    assert kinds_by_file(r) == {
        "euckr.png": ["caption_not_utf8"],
        "blank.png": ["empty_caption"],
        "other.png": ["no_trigger"],
    }
    captions = {it.rel: (it.caption, it.caption_source) for it in r.items}
    assert captions["euckr.png"] == ("zxc", "trigger")
    assert captions["bom.png"] == ("ZXC, smiling", "file")
    assert r.images == 5 and r.captions == 3


def test_tag_counts_trigger_share_and_welded_tag_warning(tmp_path, make_image):
    caps = [
        "zxc, blue eyes, smiling",
        "zxc, blue eyes, sitting",
        "zxc, blue eyes",
        "blue eyes, zxc, red coat",
    ]
    caps += ["blue eyes, standing"]
    for i, c in enumerate(caps):
        make_image(tmp_path / f"{i}.png", caption=c)
    r = scan_dataset(cfg(tmp_path, trigger="zxc"))
    assert list(r.tags.items())[:2] == [("blue eyes", 5), ("zxc", 4)]
    assert r.tags["red coat"] == 1
    assert r.trigger_share == pytest.approx(0.8)
    assert [w["tag"] for w in r.tag_warnings] == ["blue eyes"]  # never the trigger itself
    assert "welded" in words.say(r.tag_warnings[0]["message"]) and words.say(r.tag_warnings[0]["message"], "ko")


def test_histograms_and_buckets_cover_every_usable_image(tmp_path, make_image):
    make_image(tmp_path / "sq.png", size=(64, 64), caption="x")
    make_image(tmp_path / "wide.png", size=(256, 64), caption="x")
    make_image(tmp_path / "3_tall" / "t.png", size=(64, 128), caption="x")
    r = scan_dataset(cfg(tmp_path, resolution=128, bucket_step=32, min_bucket_side=32))
    assert sum(b["count"] for b in r.size_histogram) == 3
    assert sum(b["count"] for b in r.aspect_histogram) == 3
    assert sum(b["images"] for b in r.buckets) == 3 and sum(b["image_repeats"] for b in r.buckets) == 5
    by_name = {it.rel: it.bucket for it in r.items}
    assert (
        by_name["wide.png"][0] > by_name["wide.png"][1]
        and by_name["3_tall/t.png"][1] > by_name["3_tall/t.png"][0]
    )
    assert set(r.to_json()) >= {
        "usable",
        "images",
        "captions",
        "problems",
        "buckets",
        "tags",
        "image_repeats",
        "folders",
    }


def test_every_problem_kind_has_both_languages():
    for kind, (severity, excluded) in PROBLEM_KINDS.items():
        en, ko = words.TEXTS[f"problem.{kind}"]
        assert severity in {"error", "warning", "info"}, kind
        assert en and ko and isinstance(excluded, bool)
        assert severity != "error" or excluded, kind  # an error file is never trained on


# ----------------------------------------------------------------------------------------------- buckets


def test_buckets_are_step_multiples_within_area_and_include_square():
    for res, step in [(512, 64), (1024, 64), (768, 32), (512, 8)]:
        bs = make_buckets(res, step, min(256, res), max(1024, res))
        assert (res, res) in bs
        for w, h in bs:
            assert w % step == 0 and h % step == 0 and w * h <= res * res
            assert min(256, res) <= min(w, h) and max(w, h) <= max(1024, res)
            assert (h, w) in bs  # symmetric


def test_two_to_one_image_goes_to_a_wide_bucket_and_square_without_buckets(tmp_path):
    bs = make_buckets(512, 64, 256, 1024)
    w, h = assign_bucket(2000, 1000, bs)
    assert w / h == pytest.approx(2.0, rel=0.15) and w > h
    assert assign_bucket(1000, 1000, bs) == (512, 512)
    assert buckets_for(DatasetConfig(path=str(tmp_path), buckets=False)) == [(512, 512)]


def test_crop_box_covers_the_bucket_and_centres():
    box = crop_box(1000, 500, (512, 256))
    assert (box.resize_w, box.resize_h) == (512, 256) and (box.left, box.top) == (0, 0)
    box = crop_box(300, 200, (128, 128))
    assert box.resize_h == 128 and box.resize_w == 192 and box.left == 32 and box.top == 0
    out = fit_to_bucket(Image.new("RGB", (300, 200)), (128, 128))
    assert out.size == (128, 128)


def test_load_image_rgb_draft_keeps_at_least_the_requested_size(tmp_path):
    buf = io.BytesIO()
    Image.new("RGB", (800, 400), "blue").save(buf, "JPEG")
    (tmp_path / "big.jpg").write_bytes(buf.getvalue())
    img = load_image_rgb(tmp_path / "big.jpg", min_size=(256, 128))
    assert img.mode == "RGB" and img.size[0] >= 256 and img.size[1] >= 128 and img.size[0] < 800
