"""Importing kohya_ss GUI and sd-scripts configs: values, the report, the step count against kohya's, and one
clear error for files that are not kohya LoRA configs."""

from __future__ import annotations

import json
import shutil

import pytest
from kohya_helpers import DATA, gui_json, kohya_dataset, pictures, sd_files

from trainer.errors import UserError
from trainer.kohya.importer import import_kohya
from trainer.kohya.mapping import BY_GUI
from trainer.kohya.steps import BucketRules, Subset, count
from words import say


def test_gui_config_values_arrive_converted(tmp_path):
    img = kohya_dataset(tmp_path)
    cfg, _ = import_kohya(gui_json(tmp_path, img), bf16=True)
    assert cfg.model.base == "/models/v1-5-pruned-emaonly.safetensors" and cfg.model.family == "auto"
    assert cfg.dataset.path == str(img) and cfg.dataset.trigger == "zxc" and cfg.dataset.resolution == 512
    assert (cfg.dataset.shuffle_tags, cfg.dataset.keep_tokens, cfg.dataset.caption_dropout) == (True, 1, 0.05)
    assert (cfg.lora.rank, cfg.lora.alpha, cfg.lora.conv_rank, cfg.lora.conv_alpha) == (16, 8.0, 8, 4.0)
    assert cfg.lora.train_text_encoder is True  # network_train_unet_only = false
    assert (cfg.optim.optimizer, cfg.optim.lr, cfg.optim.te_lr) == ("adamw8bit", 2e-4, 1e-4)
    assert (cfg.optim.weight_decay, cfg.optim.beta1, cfg.optim.beta2) == (0.05, 0.9, 0.99)
    assert cfg.optim.scheduler == "cosine" and cfg.optim.warmup_steps == 4  # 10 % of kohya's 40 steps
    assert (cfg.train.epochs, cfg.train.max_steps, cfg.train.batch_size, cfg.train.grad_accum) == (4, 0, 2, 2)
    assert (cfg.train.seed, cfg.train.min_snr_gamma, cfg.train.noise_offset) == (1234, 5.0, 0.05)
    assert cfg.train.gradient_checkpointing is True
    assert cfg.sample.prompts == ["zxc girl, sitting on a bench", "zxc girl, red raincoat, city street"]
    assert (cfg.sample.negative_prompt, cfg.sample.steps, cfg.sample.guidance) == ("lowres, blurry", 28, 7.0)
    assert cfg.sample.every_steps == 50 and cfg.save.every_steps == 10  # save every epoch = 10 steps
    assert cfg.save.name == "zxc_lora"


def test_fp16_becomes_bf16_only_where_the_device_has_it(tmp_path):
    path = gui_json(tmp_path, kohya_dataset(tmp_path))
    cfg, report = import_kohya(path, bf16=True, compare_steps=False)
    change = next(e for e in report.of("changed") if e["key"] == "mixed_precision")
    assert cfg.train.precision == "bf16" and "bf16" in say(change["note"], "en") and say(change["note"], "ko")
    cfg, report = import_kohya(path, bf16=False, compare_steps=False)
    assert cfg.train.precision == "fp16" and not any(e["key"] == "mixed_precision" for e in report.of("changed"))


def test_nothing_in_the_file_is_dropped_silently(tmp_path):
    path = gui_json(tmp_path, kohya_dataset(tmp_path), my_own_key=3, clip_skip=2)
    _, report = import_kohya(path, bf16=True)
    source = json.loads(path.read_text())
    listed = report.source_keys() | set(report.defaulted)
    missing = [k for k in source if k not in listed and not any(x.startswith(k + " ") for x in listed)]
    assert not missing
    text = report.text(say)
    assert "Not recognised" in text and "my_own_key = 3" in text
    assert "clip_skip = 2: ours reads the text encoder's last layer" in text
    assert "xformers" in text and "left at an idle value" in text
    assert "| `clip_skip` = `2` | ✗ |" in report.markdown(say) and "설명" in report.markdown(say, "ko")


def test_step_count_matches_kohya_on_one_bucket(tmp_path):
    _, report = import_kohya(gui_json(tmp_path, kohya_dataset(tmp_path)), bf16=True)
    s = report.steps
    # GUI: ceil(40 picture-repeats ÷ 2 ÷ 2 × 4 epochs) = 40; ours: 20 batches ÷ 2 = 10 steps × 4
    assert (s["kohya_total"], s["ours_total"], s["match"]) == (40, 40, True) and not s["differences"]


def test_duplicate_picture_is_named_as_the_difference(tmp_path):
    img = kohya_dataset(tmp_path)
    shutil.copy(img / "10_zxc girl" / "0.png", img / "10_zxc girl" / "dup.png")
    _, report = import_kohya(gui_json(tmp_path, img), bf16=True)
    s = report.steps
    assert (s["kohya_total"], s["ours_total"]) == (50, 40) and not s["match"]
    differences = [say(d, "en") for d in s["differences"]]
    assert any("10_zxc girl/dup.png" in d and "skips" in d and "0.png" in d for d in differences)


def test_regularisation_images_double_kohyas_steps_and_the_report_says_why_ours_differs(tmp_path):
    img = kohya_dataset(tmp_path)
    pictures(tmp_path / "reg" / "1_person", 4)
    cfg, report = import_kohya(gui_json(tmp_path, img, reg_data_dir=str(tmp_path / "reg")), bf16=True)
    assert cfg.dataset.reg_path == str(tmp_path / "reg")
    s = report.steps
    assert s["kohya_total"] == 80  # ceil(40 ÷ 2 ÷ 2 × 4 × reg factor 2)
    assert s["kohya"]["reg_repeats"] == 40  # sd-scripts repeats the 4 reg pictures up to the 40 training ones
    assert s["ours_total"] == 44  # (40 + 4 reg picture-repeats) ÷ 2 = 22 batches → 11 steps × 4
    assert any("regularisation" in d and "(40)" in d and "(4)" in d for d in (say(d, "en") for d in s["differences"]))


def test_sd_scripts_bucket_rules():
    rules = BucketRules(512, 512, enable=True)
    table = rules.resolutions()
    assert (512, 512) in table and (384, 640) in table and (640, 384) in table
    assert rules.bucket(768, 512, table) == (640, 384) and rules.bucket(512, 512, table) == (512, 512)
    assert BucketRules(512, 512, enable=False).bucket(900, 300, table) == (512, 512)
    assert BucketRules(512, 512, enable=True, no_upscale=True).bucket(300, 200, table) == (256, 192)


def test_gui_formula_ignores_buckets_and_the_report_says_where_to_stop(tmp_path):
    img = tmp_path / "img"
    pictures(img / "1_zxc girl", 3)
    pictures(img / "1_zxc girl", 1, size=(768, 512), start=3)
    _, report = import_kohya(gui_json(tmp_path, img, epoch=1, gradient_accumulation_steps=1), bf16=True)
    s = report.steps
    assert (s["kohya_total"], s["ours_total"]) == (2, 3)  # ceil(4 ÷ 2) vs square 2 batches + landscape 1
    assert s["kohya"]["batches_per_epoch"] == 3  # sd-scripts' own buckets agree with ours
    assert any("without buckets" in d and "train.max_steps = 2" in d for d in (say(d, "en") for d in s["differences"]))
    subsets = [Subset(str(img / "1_zxc girl"), 1)]
    sd = count(subsets, batch=2, accum=1, epochs=3, rules=BucketRules(512, 512, enable=True))
    assert (sd.how, sd.total) == ("epochs", 9)


def test_sd_scripts_config_with_dataset_config(tmp_path):
    img = kohya_dataset(tmp_path)
    cfg_path, ds_path = sd_files(tmp_path, img)
    cfg, report = import_kohya(cfg_path, bf16=True)  # dataset_config is named inside the file
    assert cfg.dataset.path == str(img) and cfg.dataset.tag_dropout == 0.1 and cfg.dataset.caption_ext == ".txt"
    assert (cfg.optim.scheduler, cfg.optim.num_cycles, cfg.optim.warmup_steps) == ("cosine_with_restarts", 3, 20)
    assert (cfg.optim.weight_decay, cfg.optim.eps, cfg.lora.conv_rank) == (0.05, 1e-8, 8)
    assert cfg.train.epochs == 4 and cfg.train.precision == "bf16" and cfg.train.batch_size == 2
    assert report.steps["match"] and report.steps["kohya_total"] == 40
    assert "sd-scripts: 4 epochs" in report.steps["kohya_formula"]
    cfg2, _ = import_kohya(cfg_path, ds_path, bf16=True)
    assert cfg2 == cfg


def test_sd_scripts_defaults_fill_what_its_toml_leaves_out(tmp_path):
    path = tmp_path / "bare.toml"
    path.write_text('pretrained_model_name_or_path = "/m.safetensors"\nnetwork_dim = 8\n')
    cfg, report = import_kohya(path, compare_steps=False, bf16=True)
    assert cfg.dataset.caption_ext == ".caption" and cfg.lora.alpha == 1.0 and cfg.optim.lr == 2e-6
    assert cfg.train.max_steps == 1600 and cfg.train.precision == "fp32" and cfg.lora.train_text_encoder
    assert "caption_extension" in report.defaulted


@pytest.mark.parametrize("make, words", [
    (lambda d: (d / "comfyui_workflow.json").read_text(), "ComfyUI workflow"),
    (lambda d: (d / "kohya_ss_lora.json").read_text()[:400], "not valid JSON"),
    (lambda d: (d / "sd_config.toml").read_text()[:300] + '\nnetwork_args = ["conv', "not valid TOML"),
    (lambda d: (d / "dataset_config.toml").read_text(), "dataset config"),
    (lambda d: json.dumps({**json.loads((d / "kohya_ss_lora.json").read_text()), "flux1_checkbox": True,
                           "LoRA_type": "Flux1 OFT"}), "Flux.1 OFT"),
    (lambda d: json.dumps({**json.loads((d / "kohya_ss_lora.json").read_text()), "lumina_checkbox": True}), "Lumina"),
    (lambda d: json.dumps({**json.loads((d / "kohya_ss_lora.json").read_text()), "v2": True}), "SD 2.x"),
    (lambda d: 'network_module = "networks.oft_flux"\npretrained_model_name_or_path = "f.sft"\n', "Flux.1 OFT"),
    (lambda d: json.dumps([1, 2]), "one table of settings"),
    (lambda d: json.dumps({"prompt": "a cat"}), "not a kohya_ss or sd-scripts LoRA config"),
])
def test_foreign_or_broken_files_are_one_clear_error(tmp_path, make, words):
    text = make(DATA)
    suffix = ".toml" if not text.lstrip().startswith(("{", "[")) or "[general]" in text else ".json"
    path = tmp_path / f"input{suffix}"
    path.write_text(text)
    with pytest.raises(UserError) as e:
        import_kohya(path, compare_steps=False, bf16=True)
    assert str(path) in str(e.value) and words in str(e.value)


def test_a_bad_value_names_the_kohya_key(tmp_path):
    with pytest.raises(UserError, match=r"network_dim = 0 → lora\.rank"):
        import_kohya(gui_json(tmp_path, tmp_path / "none", network_dim=0), compare_steps=False, bf16=True)
    with pytest.raises(UserError, match="train_batch_size = 'two'"):
        import_kohya(gui_json(tmp_path, tmp_path / "none", train_batch_size="two"), compare_steps=False, bf16=True)


def test_lycoris_types_and_unknown_optimizers_are_changed_with_a_reason(tmp_path):
    path = gui_json(tmp_path, tmp_path / "none", LoRA_type="LyCORIS/LoHa", optimizer="Lion8bit",
                    lr_scheduler="polynomial")
    cfg, report = import_kohya(path, compare_steps=False, bf16=True)
    changed = {e["key"]: e for e in report.of("changed")}
    assert cfg.lora.conv_rank == 0 and "LoHa" in say(changed["LoRA_type"]["note"], "en")
    assert cfg.optim.optimizer == "adamw" and "Lion8bit" in say(changed["optimizer"]["note"], "en")
    assert cfg.optim.scheduler == "linear" and say(changed["lr_scheduler"]["note"], "ko")
    assert BY_GUI["optimizer"].to_ours("PagedAdamW8bit").value == "adamw8bit"
    assert BY_GUI["max_resolution"].to_ours("1024,1024") == 1024
