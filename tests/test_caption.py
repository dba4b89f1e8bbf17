"""Captioning without a model hub: the caption recipe (leave out, trigger first, fill/overwrite/append), the
journal that makes every change undoable byte for byte, the caption tools, the caption doctor on the demo's
datasets, and ``python -m trainer caption`` with a tiny WD14 tagger of the real ONNX layout."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import words
from trainer.caption.compose import final_caption, leave_out, merge, tidy_model_caption, trigger_first
from trainer.caption.journal import apply_changes, last_change, undo_last
from trainer.caption.models import DEFAULT_MODELS, choose, load_captioner
from trainer.caption.run import caption_folder, pictures_of, seconds_left
from trainer.caption.tagger import square_bgr
from trainer.caption.tiny import build_tiny_captioner
from trainer.caption.tools import find, frequency, insert_trigger, replace_tag
from trainer.cli import main
from trainer.data.caption_doctor import check_captions
from trainer.data.scan import scan_dataset
from trainer.demo.datasets import write_character_dataset
from trainer.errors import UserError
from trainer.message import msg


@pytest.fixture(scope="module")
def tagger(tmp_path_factory) -> Path:
    return build_tiny_captioner("tagger", tmp_path_factory.mktemp("tagger"))


def bare_folder(root: Path, make_image, n: int = 4) -> Path:
    for i in range(n):
        make_image(root / f"pic_{i}.png", size=(48 + 8 * i, 64))
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    """Every caption file's bytes (hidden journal folder left out)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.txt") if ".lora-doctor" not in p.parts}


# ------------------------------------------------------------------------------------------ the caption recipe


def test_a_models_stock_opening_and_artefacts_are_not_written():
    assert tidy_model_caption("The image shows a red car parked on a street.") == "a red car parked on a street."
    assert tidy_model_caption("arafed woman in a hat, ,") == "woman in a hat"


def test_left_out_words_go_from_tags_and_sentences_alike():
    assert leave_out("1girl, blue eyes, long hair, smile", ["blue eyes"]) == "1girl, long hair, smile"
    assert leave_out("a woman with blue eyes and a hat", ["blue eyes"]) == "a woman with and a hat"
    assert leave_out("a magenta diamond, on grass", ["MAGENTA DIAMOND"]) == "on grass"


def test_the_trigger_is_written_first_and_once():
    assert trigger_first("smile, zxc, hat", "zxc") == "zxc, smile, hat"
    assert trigger_first("smile", "") == "smile"


def test_modes_keep_replace_or_add_to_the_old_caption():
    assert merge("old, tags", "new, tags", "fill") == "old, tags"
    assert merge("", "new, tags", "fill") == "new, tags"
    assert merge("old, tags", "new, tags", "overwrite") == "new, tags"
    assert merge("old, tags", "new, TAGS", "append") == "old, tags, new"
    # fill leaves an existing caption exactly as it is, spacing and all
    assert final_caption("zxc ,  odd spacing", "new", "fill", "zxc") == "zxc ,  odd spacing"
    assert final_caption("", "blue eyes, hat", "fill", "zxc", ["blue eyes", "zxc"]) == "zxc, hat"


def test_the_tagger_reads_a_white_padded_bgr_square():
    im = Image.new("RGB", (20, 10), (255, 0, 0))
    arr = square_bgr(im, 20)
    assert arr.shape == (20, 20, 3) and arr.dtype == np.float32
    assert arr[10, 10].tolist() == [0.0, 0.0, 255.0]  # red, in BGR order
    assert arr[0, 0].tolist() == [255.0, 255.0, 255.0]  # the padding is white


def test_auto_picks_tags_for_an_anime_base_and_sentences_otherwise():
    assert choose("auto", base="cagliostrolab/animagine-xl-4.0").kind == "tagger"
    assert choose("auto", base="stabilityai/stable-diffusion-xl-base-1.0").kind == "florence2"
    assert choose("blip").model == DEFAULT_MODELS["blip"]
    with pytest.raises(UserError, match="unknown captioner"):
        choose("gpt")


# ------------------------------------------------------------------------------------------ journal and undo


def test_undo_restores_every_changed_caption_byte_for_byte(tmp_path, make_image):
    make_image(tmp_path / "a.png")
    make_image(tmp_path / "b.png")
    (tmp_path / "a.txt").write_bytes(b"\xef\xbb\xbfold caption with a BOM\r\n")  # Notepad's bytes
    before = snapshot(tmp_path)
    change = apply_changes(tmp_path, {tmp_path / "a.txt": "new a", tmp_path / "b.txt": "new b"}, msg("caption.change.trigger", trigger="t"))
    assert change is not None and sorted(change.files) == ["a.txt", "b.txt"]
    assert (tmp_path / "a.txt").read_text() == "new a\n" and last_change(tmp_path).files == change.files
    undone = undo_last(tmp_path)
    assert snapshot(tmp_path) == before and not (tmp_path / "b.txt").exists()  # b had no caption: none again
    assert words.say(undone.what) == 'trigger "t" put first'
    with pytest.raises(UserError, match="nothing to undo"):
        undo_last(tmp_path)


def test_a_change_that_changes_nothing_leaves_no_journal(tmp_path):
    (tmp_path / "a.txt").write_text("same\n", encoding="utf-8")
    assert apply_changes(tmp_path, {tmp_path / "a.txt": "same"}, msg("caption.change.trigger", trigger="t")) is None
    assert last_change(tmp_path) is None


# ------------------------------------------------------------------------------------------ the captioning run


class Recorder:
    """A captioner that answers from the picture's width, and counts its batches."""

    kind, model = "blip", "recorder"

    def __init__(self):
        self.batches = 0

    def caption(self, images):
        self.batches += 1
        return [f"The image shows a thing {im.width} wide, blue eyes" for im in images]

    def close(self):
        pass


def test_fill_mode_captions_only_the_bare_pictures_and_puts_the_trigger_first(tmp_path, make_image):
    bare_folder(tmp_path, make_image)
    (tmp_path / "pic_0.txt").write_bytes(b"kept as is \n")
    run = caption_folder(tmp_path, Recorder(), mode="fill", trigger="zxc", exclude=["blue eyes"], batch_size=2)
    assert run.kept == 1 and run.written == 3 and not run.failed
    assert (tmp_path / "pic_0.txt").read_bytes() == b"kept as is \n"
    assert (tmp_path / "pic_1.txt").read_text() == "zxc, a thing 56 wide\n"


def test_a_preview_writes_nothing_and_a_stop_leaves_each_caption_old_or_new(tmp_path, make_image):
    bare_folder(tmp_path, make_image, n=6)
    preview = caption_folder(tmp_path, Recorder(), limit=2, write=False)
    assert len(preview.results) == 2 and not snapshot(tmp_path) and last_change(tmp_path) is None
    stop, rec, ticks = threading.Event(), Recorder(), []

    def progress(done, total, left):
        ticks.append((done, total, left))
        stop.set()  # the user presses Stop during the first batch

    run = caption_folder(tmp_path, rec, batch_size=2, progress=progress, stop=stop.is_set)
    assert run.stopped and rec.batches == 1 and run.written == 2 and ticks[0][:2] == (2, 6)
    assert sorted(snapshot(tmp_path)) == ["pic_0.txt", "pic_1.txt"]
    undo_last(tmp_path)
    assert not snapshot(tmp_path)


def test_time_left_follows_the_pace_so_far():
    assert seconds_left(0, 10, 0.0) is None
    assert seconds_left(2, 10, 4.0) == pytest.approx(16.0)


def test_an_unreadable_picture_is_named_and_the_others_are_still_captioned(tmp_path, make_image):
    bare_folder(tmp_path, make_image, n=2)
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n cut off")
    run = caption_folder(tmp_path, Recorder())
    assert [f["file"] for f in run.failed] == ["broken.png"] and run.written == 2


# ------------------------------------------------------------------------------------------ caption tools


def test_tools_count_replace_remove_insert_and_find_and_each_is_undoable(tmp_path, make_image):
    for i, cap in enumerate(["zxc, red_hat, smile", "smile, Red Hat", "zxc, grass"]):
        make_image(tmp_path / f"p{i}.png", caption=cap)
    _, pics = pictures_of(tmp_path)
    assert frequency(pics)[:2] == [("smile", 2, pytest.approx(2 / 3)), ("zxc", 2, pytest.approx(2 / 3))]
    assert ("red", 2, pytest.approx(2 / 3)) in frequency(pics, by="word")
    assert [p.rel for p in find(pics, "RED HAT")] == ["p1.png"]
    before = snapshot(tmp_path)
    assert sorted(replace_tag(tmp_path, "red hat", "blue hat").files) == ["p0.png".replace("png", "txt"), "p1.txt"]
    assert (tmp_path / "p0.txt").read_text() == "zxc, blue hat, smile\n"
    assert replace_tag(tmp_path, "smile").files == ["p0.txt", "p1.txt"]
    assert insert_trigger(tmp_path, "zxc").files == ["p1.txt"]
    assert (tmp_path / "p1.txt").read_text() == "zxc, blue hat\n"
    for _ in range(3):
        undo_last(tmp_path)
    assert snapshot(tmp_path) == before


def test_put_the_trigger_first_moves_a_trigger_written_later_to_the_front(tmp_path, make_image):
    """Training keeps the first tags in place and shuffles the rest: a trigger written last must come first (the
    scan's "trigger after the first tag" warning sends the user to this button). A trigger inside a longer tag and
    one already first are left as they are; a caption without it gets it first, as before."""
    for i, cap in enumerate(["wearing a red hat, on grass, ZXC", "zxc, on sky", "a photo of zxc, smiling", "on sand"]):
        make_image(tmp_path / f"p{i}.png", caption=cap)
    before = snapshot(tmp_path)
    assert insert_trigger(tmp_path, "zxc").files == ["p0.txt", "p3.txt"]
    assert (tmp_path / "p0.txt").read_text() == "zxc, wearing a red hat, on grass\n"
    assert (tmp_path / "p3.txt").read_text() == "zxc, on sand\n"
    assert insert_trigger(tmp_path, "zxc") is None  # nothing left to move
    undo_last(tmp_path)
    assert snapshot(tmp_path) == before


# ------------------------------------------------------------------------------------------ caption doctor


def _findings(tmp_path, features: bool):
    write_character_dataset(tmp_path, write_features=features)
    report = scan_dataset(path=str(tmp_path), trigger="zxc", resolution=64, shuffle_tags=True)
    return report.caption_findings


def test_the_doctor_names_the_features_written_in_every_caption_of_the_demo(tmp_path):
    warned = [f for f in _findings(tmp_path, features=True) if f["severity"] == "warning"]
    assert [f["kind"] for f in warned] == ["caption_everywhere"]
    en, ko = (words.say(warned[0]["message"], lang) for lang in words.LANGS)
    assert '"a magenta diamond with yellow stripes and two eyes"' in en and "leave it out" in en
    assert "magenta diamond" in ko and "트리거" in ko


def test_the_demos_own_captions_raise_no_warning_and_the_hat_is_only_a_note(tmp_path):
    found = _findings(tmp_path, features=False)
    assert not [f for f in found if f["severity"] == "warning"]
    assert any(f["kind"] == "caption_word_everywhere" and "hat" in words.say(f["message"]) for f in found)


def test_the_doctor_sees_a_late_trigger_shared_captions_a_long_caption_and_an_everyday_trigger():
    caps = {f"{i}.png": f"smile, girl, pose {i}" for i in range(8)}
    caps.update({"same1.png": "girl", "same2.png": "girl", "same3.png": "girl"})
    caps["long.png"] = "girl, " + ", ".join(f"tag number {i}" for i in range(40))
    by_kind = {f["kind"]: f for f in check_captions(caps, "girl", keep_tokens=1, shuffled=True)}
    assert by_kind["trigger_not_first"]["files"][:2] == ["0.png", "1.png"]
    assert by_kind["identical_captions"]["files"] == ["same1.png", "same2.png", "same3.png"]
    cut = words.say(by_kind["caption_too_long"]["message"])
    assert "191 tokens" in cut and "the end is cut" in cut and "tag number" in cut.split("cut:")[1]
    assert "everyday word" in words.say(by_kind["trigger_common_word"]["message"])
    assert not any(f["kind"] == "trigger_common_word" for f in check_captions(caps, "zxc"))
    # without shuffling or dropping tags, where the trigger sits changes nothing
    assert "trigger_not_first" not in {f["kind"] for f in check_captions(caps, "girl", keep_tokens=1)}


# ------------------------------------------------------------------------------------------ the CLI


def test_the_cli_captions_with_a_tiny_tagger_keeps_old_captions_and_undoes_exactly(tmp_path, make_image, tagger, capsys):
    bare_folder(tmp_path, make_image)
    (tmp_path / "pic_2.txt").write_bytes(b"mine, keep me\n")
    before = snapshot(tmp_path)
    assert main(["caption", str(tmp_path), "--captioner", "tagger", "--model", str(tagger), "--trigger", "zxc",
                 "--general-threshold", "0.2", "--exclude", "hat", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["written"] == 3 and out["kept"] == 1 and out["captioner"] == "tagger"
    for r in out["results"]:
        assert r["new"].startswith("zxc, ") and "hat" not in r["new"].split(", ")
    assert (tmp_path / "pic_2.txt").read_bytes() == b"mine, keep me\n"
    assert main(["caption", str(tmp_path), "--undo"]) == 0
    assert snapshot(tmp_path) == before


def test_the_cli_names_a_missing_folder_a_bad_model_and_an_unreadable_picture(tmp_path, make_image, tagger, capsys):
    assert main(["caption", str(tmp_path / "nope"), "--captioner", "tagger", "--model", str(tagger)]) == 2
    assert "not found" in capsys.readouterr().err
    bare_folder(tmp_path, make_image, n=2)
    assert main(["caption", str(tmp_path), "--captioner", "tagger", "--model", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "WD14 tagger" in err and "model.onnx" in err
    (tmp_path / "broken.jpg").write_bytes(b"not a jpeg")
    assert main(["caption", str(tmp_path), "--captioner", "tagger", "--model", str(tagger)]) == 2
    captured = capsys.readouterr()
    assert "broken.jpg" in captured.err and captured.err.count("\n") == 1
    assert (tmp_path / "pic_0.txt").is_file() and (tmp_path / "pic_1.txt").is_file()
    assert main(["caption", str(tmp_path), "--general-threshold", "2"]) == 2
    assert "--general-threshold" in capsys.readouterr().err


def test_the_tiny_tagger_has_the_real_layout(tagger):
    import onnxruntime as ort

    inp = ort.InferenceSession(str(tagger / "model.onnx")).get_inputs()[0]
    assert inp.shape[1:] == [32, 32, 3] and inp.type == "tensor(float)"
    header = (tagger / "selected_tags.csv").read_text().splitlines()[0]
    assert header == "tag_id,name,category,count"
    names = load_captioner(choose("tagger", str(tagger), general_threshold=0.0, character_threshold=0.0))
    assert "red hat" in names.caption([Image.new("RGB", (40, 30))])[0]  # underscores read as spaces
