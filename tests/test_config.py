"""The typed config and the presets: unknown keys, wrong types and ranges are errors naming the key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from trainer.config.overrides import parse_override
from trainer.config.presets import list_presets, load_preset, preset_config
from trainer.config.schema import Config, diff_configs, dumps_toml, from_dict, load_config, save_config
from trainer.errors import UserError

REQUIRED_KEYS = ["model.base", "model.family", "dataset.path", "dataset.trigger", "dataset.resolution", "dataset.repeats", "dataset.caption_ext", "dataset.shuffle_tags", "dataset.keep_tokens", "dataset.caption_dropout", "dataset.buckets", "dataset.cache_latents", "lora.rank", "lora.alpha", "lora.train_text_encoder", "optim.optimizer", "optim.lr", "optim.te_lr", "optim.scheduler", "optim.warmup_steps", "optim.max_grad_norm", "train.epochs", "train.max_steps", "train.batch_size", "train.grad_accum", "train.precision", "train.seed", "train.gradient_checkpointing", "train.noise_offset", "train.min_snr_gamma", "ema.enabled", "ema.decay", "save.output_dir", "save.name", "save.every_steps", "save.keep_last", "sample.every_steps", "sample.prompts", "sample.seed", "sample.steps", "sample.guidance", "guard.on_nonfinite"]


def test_every_contract_key_exists():
    cfg = Config()
    for key in REQUIRED_KEYS:
        cfg.get(key)


def test_unknown_key_is_named_with_what_is_allowed(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text("[lora]\nrnak = 8\n")
    with pytest.raises(UserError) as e:
        load_config(p)
    assert "lora.rnak" in str(e.value) and "rank" in str(e.value) and str(p) in str(e.value)


@pytest.mark.parametrize(("toml", "key"), [
    ("[lora]\nrank = 0\n", "lora.rank"),
    ("[lora]\nrank = 'big'\n", "lora.rank"),
    ("[train]\nprecision = 'fp8'\n", "train.precision"),
    ("[optim]\nlr = -1.0\n", "optim.lr"),
    ("[dataset]\nresolution = 500\n", "dataset.resolution"),
    ("[dataset]\ncaption_ext = 'txt'\n", "dataset.caption_ext"),
    ("[dose]\nfit_low = 1.0\nfit_high = 0.5\n", "dose"),
    ("version = 2\n", "version"),
])
def test_bad_values_name_the_key_and_value(tmp_path, toml, key):
    p = tmp_path / "c.toml"
    p.write_text(toml)
    with pytest.raises(UserError) as e:
        load_config(p)
    assert key in str(e.value)


def test_set_overrides_parse_types():
    assert parse_override("optim.lr=5e-5") == ("optim.lr", 5e-5)
    assert parse_override("lora.train_text_encoder=true") == ("lora.train_text_encoder", True)
    assert parse_override("dataset.path=/data/my set") == ("dataset.path", "/data/my set")
    assert parse_override('sample.prompts=["a", "b"]') == ("sample.prompts", ["a", "b"])
    cfg = load_config(None, ["lora.rank=8", "train.precision=fp16"])
    assert cfg.lora.rank == 8 and cfg.train.precision == "fp16"
    with pytest.raises(UserError, match=r"section\.key=value"):
        load_config(None, ["lora.rank"])
    with pytest.raises(UserError, match=r"lora\.rnak"):
        load_config(None, ["lora.rnak=3"])


def test_resolved_config_round_trips_through_toml():
    cfg = from_dict({"lora": {"rank": 8}, "sample": {"prompts": ['say "hi"\\n', "zxc, 한글"]}})
    text = cfg.to_toml()
    again = from_dict(tomllib.loads(text))
    assert again == cfg
    assert not diff_configs(cfg, again)


def test_preset_is_applied_under_the_user_file(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text('preset = "sd15-style"\n[lora]\nrank = 48\n')
    cfg = load_config(p)
    assert cfg.lora.rank == 48 and cfg.lora.alpha == 16.0 and cfg.preset == "sd15-style"


EXPECTED = {"sd15-character", "sd15-style", "sd15-concept", "sdxl-character", "sd3-character", "sd3-style",
            "flux-character", "flux-character-16gb", "flux-character-12gb",
            "zimage-character", "zimage-character-16gb", "zimage-character-12gb",
            "stability-first", "low-vram",
            "demo-character"}


def test_all_presets_load_validate_and_round_trip():
    presets = {p.id: p for p in list_presets()}
    assert set(presets) >= EXPECTED
    for pid, preset in presets.items():
        assert preset.version == 1 and preset.name["ko"] and preset.description["en"]
        cfg = preset_config(pid)
        assert from_dict(tomllib.loads(cfg.to_toml())) == cfg
        assert cfg.lora.alpha in (cfg.lora.rank, cfg.lora.rank / 2)
        assert 0 < cfg.dose.fit_low < cfg.dose.fit_high


def test_presets_follow_the_seeds():
    assert 8 <= preset_config("sd15-character").lora.rank <= 32
    assert 16 <= preset_config("sd15-style").lora.rank <= 64
    assert preset_config("sd15-character").optim.lr == 1e-4
    stable = preset_config("stability-first")
    assert stable.train.precision == "bf16" and stable.optim.optimizer == "adamw"
    assert stable.optim.max_grad_norm == 1.0 and stable.optim.lr < 1e-4
    low = preset_config("low-vram")
    assert low.train.gradient_checkpointing and low.optim.optimizer == "adamw8bit" and low.dataset.cache_latents
    assert preset_config("sdxl-character").model.family == "sdxl"


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(UserError, match="sd15-character"):
        load_preset("nope")


def test_a_presets_subject_is_one_the_doctor_knows(tmp_path):
    """``[preset] subject`` (character, concept or style) tells the doctor what the model measures can see; a value
    it does not know is one message naming the file, the value and the choices."""
    path = tmp_path / "mine.toml"
    meta = '[preset]\nversion = 1\nname_en = "a"\nname_ko = "a"\ndescription_en = "a"\ndescription_ko = "a"\n'
    path.write_text(meta)
    assert load_preset(str(path)).subject == "character"
    path.write_text(meta + 'subject = "styles"\n')
    with pytest.raises(UserError) as e:
        load_preset(str(path))
    assert all(w in str(e.value) for w in (str(path), "'styles'", "character, concept, style"))


def test_a_runs_config_from_a_preset_of_the_users_own_reads_back_without_it(tmp_path):
    """The app writes a run's settings whole, with the preset's name (a preset saved in the workspace); Review,
    the diagnosis and Continue read them back where that preset is not on the search path. A sparse config still
    needs its preset found."""
    from trainer.run.contents import load_run_config

    cfg = Config()
    cfg.preset, cfg.lora.rank = "my style", 7
    run = tmp_path / "run"
    run.mkdir()
    save_config(cfg, run / "config.toml")
    back = load_run_config(run)
    assert (back.preset, back.lora.rank) == ("my style", 7) and back == cfg
    with pytest.raises(UserError, match="unknown preset 'my style'"):
        from_dict({"preset": "my style", "lora": {"rank": 3}})


def test_toml_writer_handles_nested_tables():
    text = dumps_toml({"a": 1, "t": {"x": 1.5, "s": "q\"", "sub": {"y": [1, 2]}}})
    assert tomllib.loads(text) == {"a": 1, "t": {"x": 1.5, "s": 'q"', "sub": {"y": [1, 2]}}}


def test_picture_folders_written_relative_in_a_file_are_relative_to_that_file(tmp_path, monkeypatch):
    (tmp_path / "project" / "pics").mkdir(parents=True)
    (tmp_path / "project" / "prior").mkdir()
    (tmp_path / "project" / "held").mkdir()
    cfg_file = tmp_path / "project" / "run.toml"
    cfg_file.write_text('[dataset]\npath = "pics"\nreg_path = "prior"\n[validation]\npath = "held"\n')
    monkeypatch.chdir(tmp_path)  # not the file's folder
    cfg = load_config(cfg_file)
    assert (cfg.dataset.path, cfg.dataset.reg_path, cfg.validation.path) == tuple(
        str(tmp_path / "project" / name) for name in ("pics", "prior", "held"))


def _run_from_a_users_preset(workspace: Path) -> Path:
    """A run folder in ``workspace`` whose config came from the user's own preset "mine" (lr 1e-5), at 100x its lr."""
    (workspace / "presets").mkdir()
    (workspace / "presets" / "mine.toml").write_text(
        '[preset]\nversion = 1\nname_en = "m"\nname_ko = "m"\ndescription_en = "m"\ndescription_ko = "m"\n'
        '[optim]\nlr = 1e-5\n', encoding="utf-8")
    run = workspace / "runs" / "lora" / "20260101-000000"
    run.mkdir(parents=True)
    cfg = Config()
    cfg.preset, cfg.optim.lr = "mine", 1e-3
    save_config(cfg, run / "config.toml")
    return run


def test_the_doctor_finds_a_runs_preset_in_its_workspace(tmp_path):
    """A run the app started from a preset the user saved: the diagnosis measures its lr against that preset (in
    ``<workspace>/presets``), not against nothing."""
    from trainer.doctor.registry import RunInputs, collect
    from trainer.run.contents import load_run_config

    run = _run_from_a_users_preset(tmp_path)
    found = [f for f in collect(RunInputs.read(run, load_run_config(run)), "settings") if f.signal == "lr_far_from_preset"]
    assert len(found) == 1 and found[0].values["preset"] == "mine" and found[0].values["ratio"] == pytest.approx(100)


def test_back_to_the_preset_reads_the_users_own_preset(tmp_path):
    """"Go back to the preset's learning rate" on such a run sets the lr the user's preset has: in the diagnosis,
    in the alert's first advice and as a rollback's change (it was refused as out of range: the preset unread)."""
    import words
    from trainer.doctor.diagnose import alert_prescription, diagnose
    from trainer.doctor.kb import apply_change, load_kb
    from trainer.errors import UserError
    from trainer.run.contents import load_run_config

    run = _run_from_a_users_preset(tmp_path)
    rx = next(p for p in diagnose(run, write=False)["prescriptions"] if p["id"] == "preset_lr")
    assert rx["applicable"] and rx["change"]["diff"] == {"optim.lr": [1e-3, 1e-5]}
    advice = alert_prescription(run, "loss_spike")
    assert advice is not None and "1e-05" in words.say(advice["change"], "en")
    from ui.steps.troubleshoot import rx_choices

    offered = rx_choices(run, diagnose(run, write=False), None, "ko")  # Troubleshoot's one-change list
    assert any(pid == "preset_lr" and "1e-05" in label for label, pid in offered)
    change = load_kb().prescription("preset_lr").change
    with pytest.raises(UserError):  # without the workspace the preset cannot be found: said, not guessed
        apply_change(load_run_config(run), change)
    from ui.steps.troubleshoot import symptom_markdown

    assert "1e-05" in symptom_markdown("lr_far_from_preset", run, "en", None)
    (tmp_path / "presets" / "mine.toml").unlink()  # the user deleted it: the advice stays, without a value
    assert "프리셋의 학습률로 되돌리기" in symptom_markdown("lr_far_from_preset", run, "ko", None)
