"""Each captioner kind, as a tiny random-weight model of its real architecture (``python -m trainer
tiny-captioner``), captions a folder through the CLI and through the wizard's Dataset step: existing captions
are kept in fill mode, the trigger comes first, and Undo restores the old captions byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainer.cli import main

KINDS = ("tagger", "florence2", "blip")


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("captioners")
    for kind in KINDS:
        assert main(["tiny-captioner", kind, str(root / kind)]) == 0
    return {kind: root / kind for kind in KINDS}


def half_captioned(root: Path, make_image) -> dict[str, bytes]:
    """Three pictures, the middle one with a caption of its own; the caption files' bytes before."""
    for i in range(3):
        make_image(root / "4_subject" / f"p{i}.png", size=(40 + 10 * i, 48))
    (root / "4_subject" / "p1.txt").write_bytes(b"my own words, kept\n")
    return snapshot(root)


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.txt") if ".lora-doctor" not in p.parts}


def test_tiny_captioners_are_saved_the_way_real_downloads_are(models):
    assert {p.name for p in models["tagger"].iterdir()} == {"model.onnx", "selected_tags.csv"}
    for kind in ("florence2", "blip"):
        names = {p.name for p in models[kind].iterdir()}
        assert {"config.json", "model.safetensors", "processor_config.json"} <= names, kind
    arch = json.loads((models["florence2"] / "config.json").read_text())["architectures"]
    assert arch == ["Florence2ForConditionalGeneration"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_cli_captions_with_each_kind_and_undo_restores(kind, models, tmp_path, make_image, capsys):
    before = half_captioned(tmp_path, make_image)
    assert main(["caption", str(tmp_path), "--captioner", kind, "--model", str(models[kind]), "--trigger", "zxc",
                 "--mode", "fill", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["written"] == 2 and out["kept"] == 1 and not out["failed"]
    for name in ("p0.txt", "p2.txt"):
        text = (tmp_path / "4_subject" / name).read_text(encoding="utf-8")
        assert text.startswith("zxc, ") and len(text) > len("zxc, \n"), (kind, text)
    assert (tmp_path / "4_subject" / "p1.txt").read_bytes() == b"my own words, kept\n"
    assert main(["caption", str(tmp_path), "--undo"]) == 0
    assert snapshot(tmp_path) == before


@pytest.fixture(scope="module")
def api(wizard_api):
    return wizard_api


@pytest.mark.parametrize("kind", KINDS)
def test_the_wizard_captions_with_each_kind_previews_and_undoes(kind, models, api, tmp_path, make_image):
    before = half_captioned(tmp_path, make_image)
    folder = {"dataset_path": str(tmp_path), "trigger": "zxc", "reg_path": "", "val_path": ""}
    common = {**folder, "captioner": kind, "caption_model": str(models[kind]), "cap_mode": "fill"}
    shown = api("caption_preview", **common)
    assert len(shown["cap_results"]["data"]) == 2 and snapshot(tmp_path) == before  # a preview writes nothing
    out = api("caption_all", **common)
    assert "2 captions written, 1 kept" in out["cap_msg"], out["cap_msg"]
    assert all(row[2].startswith("zxc, ") for row in out["cap_results"]["data"])
    assert "**3** usable pictures, **3** with captions" in out["ds_summary"]  # scanned again
    assert (tmp_path / "4_subject" / "p1.txt").read_bytes() == b"my own words, kept\n"
    undone = api("caption_undo", **folder)
    assert "2 caption files put back" in undone["cap_msg"] and snapshot(tmp_path) == before


def test_the_caption_tools_work_from_the_wizard(api, tmp_path, make_image):
    for i, cap in enumerate(["zxc, red hat, smile", "smile, red hat", "grass"]):
        make_image(tmp_path / f"p{i}.png", caption=cap)
    common = {"dataset_path": str(tmp_path), "trigger": "zxc", "reg_path": "", "val_path": ""}
    freq = api("caption_frequency", cap_freq_by="tag", **common)["cap_freq"]["data"]
    assert freq[0][:2] == ["red hat", 2]
    assert api("caption_find", cap_find_text="grass", **common)["cap_found"]["data"] == [["p2.png", "grass"]]
    out = api("caption_replace", cap_tag="red hat", cap_tag_new="blue hat", **common)
    assert "2 caption files changed" in out["cap_msg"]
    api("caption_insert_trigger", **common)
    assert (tmp_path / "p2.txt").read_text() == "zxc, grass\n"
    api("caption_undo", **common)
    api("caption_undo", **common)
    assert (tmp_path / "p0.txt").read_text() == "zxc, red hat, smile"  # written by hand, no newline: restored as it was
