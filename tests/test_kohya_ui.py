"""The Preset step's "Import a kohya config": the uploaded files become field values, a Markdown report and a
saved full config; the wrong set of files is a UserError; while shared no dataset folder is read."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from kohya_helpers import gui_json, kohya_dataset, sd_files

from trainer.config.schema import load_config
from trainer.errors import UserError
from ui.fields import config_from_values, values_from_config
from ui.steps.preset import import_kohya_files


def _ui(tmp_path, restricted=False):
    policy = SimpleNamespace(restricted=restricted)
    return SimpleNamespace(ctx=SimpleNamespace(bf16=True, policy=policy, configs_dir=tmp_path / "configs"))


def test_upload_fills_the_fields_and_saves_the_whole_config(tmp_path):
    img = kohya_dataset(tmp_path)
    cfg, markdown, saved = import_kohya_files(_ui(tmp_path), [str(gui_json(tmp_path, img))], "ko")
    values = values_from_config(cfg)
    assert (values["rank"], values["lr"], values["conv_rank"], values["dataset_path"]) == (16, 2e-4, 8, str(img))
    assert markdown.startswith("| kohya | → | LoRA Doctor | 설명 |") and "`network_dim` = `16`" in markdown
    assert "스텝 수: kohya 40, LoRA Doctor 40" in markdown
    assert load_config(saved) == cfg  # weight decay and betas have no field: the saved config keeps them
    back = config_from_values(values, tmp_path / "runs")
    assert (back.lora.rank, back.optim.lr, back.train.epochs) == (16, 2e-4, 4)


def test_sd_scripts_config_and_its_dataset_config_together(tmp_path):
    img = kohya_dataset(tmp_path)
    cfg_path, ds_path = sd_files(tmp_path, img)
    cfg, _, _ = import_kohya_files(_ui(tmp_path), [str(ds_path), str(cfg_path)], "en")
    assert cfg.dataset.path == str(img) and cfg.dataset.tag_dropout == 0.1
    with pytest.raises(UserError, match="at most one dataset config"):
        import_kohya_files(_ui(tmp_path), [str(cfg_path), str(ds_path), str(ds_path)], "en")
    with pytest.raises(UserError, match="choose a kohya config file"):
        import_kohya_files(_ui(tmp_path), [], "en")


def test_while_shared_no_folder_the_file_names_is_read(tmp_path):
    img = kohya_dataset(tmp_path)
    _, markdown, _ = import_kohya_files(_ui(tmp_path, restricted=True), [str(gui_json(tmp_path, img))], "en")
    assert "Step count" not in markdown
    cfg_path, _ = sd_files(tmp_path, img)  # names its dataset config: not opened while shared
    cfg, markdown, _ = import_kohya_files(_ui(tmp_path, restricted=True), [str(cfg_path)], "en")
    assert "not read: files a config names are not opened" in markdown and cfg.dataset.path == ""
