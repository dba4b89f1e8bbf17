"""Exporting to sd-scripts and the round trips: kohya file → our config → sd-scripts files gives back the same
value for every supported key; the docs' table (docs/kohya.md, docs/ko/kohya.md) is the one the importer reads."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from kohya_helpers import gui_json, kohya_dataset, pictures, sd_files

from trainer.config.schema import diff_configs, save_config
from trainer.errors import UserError
from trainer.kohya.exporter import export_kohya
from trainer.kohya.importer import import_kohya
from trainer.kohya.mapping import BY_SD, ROWS, render_table
from trainer.run.samples import expand_prompts
from trainer.toml_writer import dumps_toml
from words import say

REPO = Path(__file__).resolve().parent.parent
# GUI keys whose value comes back under another key: the folder as subsets, saving by epochs as steps
GUI_ELSEWHERE = ("train_data_dir", "save_every_n_steps")


def _export(tmp_path: Path, cfg) -> tuple[dict, dict, str]:
    save_config(cfg, tmp_path / "ours.toml")
    files, command, _ = export_kohya(tmp_path / "ours.toml", tmp_path / "sd")
    args = tomllib.loads(files["config"].read_text())
    dataset = tomllib.loads(files["dataset"].read_text())
    return args, dataset, command


def _same_training(a, b) -> bool:
    """Equal configs, where sample prompts count as the text the sampler gets (sd-scripts has no {trigger}: the
    export fills it in)."""
    differ = diff_configs(a, b)
    assert set(differ) <= {"sample.prompts"}, differ
    return expand_prompts(a.sample.prompts, a.dataset.trigger) == expand_prompts(b.sample.prompts, b.dataset.trigger)


def _sd_value(args: dict, dataset: dict, key: str):
    """Where sd-scripts would read ``key``: subset, dataset, [general], then the arguments."""
    ds = dataset["datasets"][0]
    for level in (ds["subsets"][0], ds, dataset.get("general", {}), args):
        if key in level:
            return level[key]
    return None


def test_sd_scripts_round_trip_gives_back_every_supported_value(tmp_path):
    img = kohya_dataset(tmp_path)
    cfg_path, ds_path = sd_files(tmp_path, img)
    cfg, _ = import_kohya(cfg_path, bf16=True)
    args, dataset, command = _export(tmp_path, cfg)
    source = tomllib.loads(cfg_path.read_text())
    source_ds = tomllib.loads(ds_path.read_text())
    checked = 0
    for key, value in {**source, **source_ds["general"], **{k: v for k, v in source_ds["datasets"][0].items()
                                                              if k != "subsets"}}.items():
        name = "train_batch_size" if key == "batch_size" else key
        row = BY_SD.get(name)
        if row is None or not row.supported:
            continue
        back = _sd_value(args, dataset, key)
        assert row.to_ours(back) == row.to_ours(value), key
        checked += 1
    assert checked >= 30
    assert args["network_args"] == source["network_args"] and args["optimizer_args"] == source["optimizer_args"]
    assert args["lr_warmup_steps"] == 20 and args["max_train_epochs"] == 4 and args["mixed_precision"] == "bf16"
    subsets = dataset["datasets"][0]["subsets"]
    assert [(Path(s["image_dir"]).name, s["num_repeats"], s["class_tokens"]) for s in subsets] == [
        ("10_zxc girl", 10, "zxc girl"), ("5_zxc portrait", 5, "zxc portrait")]
    assert command.startswith("accelerate launch train_network.py --config_file ")
    again, report = import_kohya(tmp_path / "sd" / "sd_config.toml", bf16=True)
    assert _same_training(again, cfg) and report.steps["match"]


def test_gui_round_trip_through_sd_scripts_gives_back_the_same_config(tmp_path):
    img = kohya_dataset(tmp_path)
    gui_path = gui_json(tmp_path, img)
    cfg, _ = import_kohya(gui_path, bf16=True)
    args, dataset, _ = _export(tmp_path, cfg)
    gui = json.loads(gui_path.read_text())
    for row in ROWS:  # every key both tools spell, read back from the exported files
        if row.supported and not row.special and row.gui in gui and row.sd and row.gui not in GUI_ELSEWHERE:
            back = _sd_value(args, dataset, "batch_size" if row.sd == "train_batch_size" else row.sd)
            if back is None:  # written only when on (noise offset 0, no dropout...)
                assert row.to_ours(gui[row.gui]) in (0, 0.0, False, ""), row.gui
            else:
                assert row.to_ours(back) == row.to_ours(gui[row.gui]), row.gui
    assert args["save_every_n_steps"] == gui["save_every_n_epochs"] * 10  # one epoch is 10 steps here
    prompts = (tmp_path / "sd" / "sample_prompts.txt").read_text().splitlines()
    assert prompts[0] == "zxc girl, sitting on a bench --s 28 --l 7 --d 1234 --n lowres, blurry"
    again, _ = import_kohya(tmp_path / "sd" / "sd_config.toml", bf16=True)
    assert _same_training(again, cfg)


def test_export_from_a_run_folder_with_reg_and_sdxl(tmp_path):
    img = kohya_dataset(tmp_path)
    pictures(tmp_path / "reg" / "1_person", 2)
    pictures(img / "3_extra" / "nested", 1)
    cfg, _ = import_kohya(gui_json(tmp_path, img, reg_data_dir=str(tmp_path / "reg"), sdxl=True), bf16=True)
    run = tmp_path / "runs" / "zxc" / "run-1"
    run.mkdir(parents=True)
    save_config(cfg, run / "config.toml")
    files, command, report = export_kohya(run, tmp_path / "sd")
    assert "sdxl_train_network.py" in command
    subsets = tomllib.loads(files["dataset"].read_text())["datasets"][0]["subsets"]
    assert [s.get("is_reg", False) for s in subsets] == [False, False, False, True]
    keys = {e["key"] for e in report.entries}
    assert any(k.startswith("dataset.path 3_extra") for k in keys)  # sd-scripts reads no nested folders
    changed = {e["key"] for e in report.of("changed")}
    assert "dataset.reg_path" in changed and "model.family" in changed
    assert {"ema.enabled", "guard.on_nonfinite", "lora.targets"} <= {e["key"] for e in report.of("unsupported")}
    with pytest.raises(UserError, match=r"without config\.toml"):
        export_kohya(tmp_path / "runs", tmp_path / "sd2")


def test_toml_writer_writes_the_dataset_config_shape():
    data = {"general": {"shuffle_caption": True},
            "datasets": [{"resolution": 512, "subsets": [{"image_dir": "/a", "num_repeats": 3}, {"image_dir": "/b"}]}]}
    assert tomllib.loads(dumps_toml(data)) == data


def test_docs_table_is_the_one_the_importer_reads():
    for lang, page in (("en", "docs/kohya.md"), ("ko", "docs/ko/kohya.md")):
        text = (REPO / page).read_text(encoding="utf-8")
        m = re.search(rf"<!-- kohya-table:{lang} -->\n(.*?)\n<!-- /kohya-table:{lang} -->", text, re.S)
        assert m, f"{page} lacks the {lang} kohya table markers"
        assert m.group(1) == render_table(say, lang)
