"""SD3.5 configs of kohya_ss and sd-scripts (sd3_train_network.py, networks.lora_sd3): a GUI JSON with sd3_checkbox
and an sd-scripts TOML import as model.family "sd3" with every SD3 key reported; a config with Flux.1's checkbox too
is Flux.1's (tests/test_kohya_flux.py), the other DiT models are still refused; an SD3 config exports for
sd3_train_network.py with the flow-matching arguments ours trains with, and comes back the same. Key names as
kohya_ss kohya_gui/lora_gui.py and sd-scripts library/sd3_train_utils.py and library/train_util.py spell them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from kohya_helpers import DATA, export_args, gui_json, kohya_dataset, preset_run
from safetensors.numpy import save_file

from trainer.config.schema import diff_configs
from trainer.errors import UserError
from trainer.kohya.importer import import_kohya
from words import say

# the SD3 section of a kohya_ss GUI config as the GUI saves it (kohya_gui/class_sd3.py's defaults), and the Flux.1
# fields every GUI config carries
SD3_GUI = {
    "sd3_checkbox": True, "sd3_cache_text_encoder_outputs": False, "sd3_cache_text_encoder_outputs_to_disk": False,
    "sd3_fused_backward_pass": False, "clip_g": "", "clip_g_dropout_rate": 0.0, "sd3_clip_l": "",
    "sd3_clip_l_dropout_rate": 0.0, "sd3_disable_mmap_load_safetensors": False, "sd3_enable_scaled_pos_embed": False,
    "logit_mean": 0.0, "logit_std": 1.0, "mode_scale": 1.29, "pos_emb_random_crop_rate": 0.0, "save_clip": False,
    "save_t5xxl": False, "sd3_t5_dropout_rate": 0.0, "sd3_t5xxl": "", "t5xxl_device": "", "t5xxl_dtype": "bf16",
    "sd3_text_encoder_batch_size": 1, "weighting_scheme": "logit_normal", "blocks_to_swap": 0,
    "clip_l": "", "t5xxl": "", "apply_t5_attn_mask": False, "t5xxl_max_token_length": 512, "train_t5xxl": False,
    "pretrained_model_name_or_path": "/models/sd3.5_medium.safetensors", "LoRA_type": "Standard",
}  # fmt: skip
SD3_TOML = """# an sd-scripts --config_file for sd3_train_network.py
pretrained_model_name_or_path = "/models/sd3.5_large.safetensors"
clip_l = "/models/clip_l.safetensors"
clip_g = "/models/clip_g.safetensors"
t5xxl = "/models/t5xxl_fp16.safetensors"
network_module = "networks.lora_sd3"
network_dim = 16
network_alpha = 16.0
network_args = ["context_mod_dim=0", "x_mod_dim=0", "train_t5xxl=True"]
network_train_unet_only = true
learning_rate = 0.0001
optimizer_type = "AdamW8bit"
mixed_precision = "bf16"
max_train_epochs = 8
train_data_dir = "IMG"
resolution = "1024,1024"
training_shift = 3.0
t5xxl_max_token_length = 512
apply_t5_attn_mask = true
apply_lg_attn_mask = false
t5_dropout_rate = 0.1
logit_mean = 0.5
blocks_to_swap = 10
fp8_base = true
cache_text_encoder_outputs = true
cache_text_encoder_outputs_to_disk = true
enable_scaled_pos_embed = true
v_parameterization = true
"""


def _by_key(report, kind: str) -> dict:
    return {e["key"]: e for e in report.of(kind)}


def _note(entry) -> str:
    return say(entry["note"], "en")


def test_a_gui_config_with_sd3_checkbox_imports_as_sd3_with_its_keys_reported(tmp_path):
    img = kohya_dataset(tmp_path)
    path = gui_json(tmp_path, img, **{**SD3_GUI, "sd3_clip_l": "/m/clip_l.safetensors", "t5xxl": "/m/flux_t5.sft",
                                      "sd3_t5_dropout_rate": 0.1, "sd3_cache_text_encoder_outputs": True,
                                      "LoRA_type": "Kohya LoCon", "conv_dim": 8, "v_parameterization": False})
    cfg, report = import_kohya(path, bf16=True, compare_steps=False)
    assert cfg.model.family == "sd3" and cfg.model.prediction_type == "auto"
    assert cfg.lora.targets == "attn_ff"  # the GUI passes no type dims: networks.lora_sd3 trains every linear layer
    assert cfg.lora.conv_rank == 0  # SD3.5's transformer has no convolutions
    assert (cfg.lora.rank, cfg.optim.optimizer, cfg.train.epochs) == (16, "adamw8bit", 4)
    mapped, changed, dropped = (_by_key(report, k) for k in ("mapped", "changed", "unsupported"))
    assert mapped["sd3_checkbox"]["ours"] == "model.family" and mapped["sd3_checkbox"]["our_value"] == "sd3"
    assert mapped["weighting_scheme"]["our_value"] == "logit_normal" and mapped["logit_std"]["our_value"] == 1.0
    # the GUI never passes training_shift for SD3: sd-scripts trained at its default 1.0, ours at the base's 3.0
    assert "training_shift" in report.defaulted
    assert (changed["training_shift"]["value"], changed["training_shift"]["our_value"]) == (1.0, 3.0)
    assert changed["LoRA_type"]["our_value"] == "attn_ff" and "adaLN" in _note(changed["LoRA_type"])
    assert "model.base" in _note(dropped["sd3_clip_l"])
    assert "caption_dropout" in _note(dropped["sd3_t5_dropout_rate"])
    # kohya's text-encoder cache is our offload switch, which needs frozen encoders and captions as written: this
    # GUI config trains the text encoders and shuffles tags (sd-scripts would refuse to cache), so it stays off
    cache = changed["sd3_cache_text_encoder_outputs"]
    assert cache["ours"] == "model.offload_text_encoders" and cfg.model.offload_text_encoders is False
    assert "lora.train_text_encoder, dataset.shuffle_tags" in _note(cache)
    assert "sd3_cache_text_encoder_outputs" in _note(dropped["sdxl_cache_text_encoder_outputs"])
    assert "Flux.1 only" in _note(dropped["t5xxl"]) and "Flux.1 only" in _note(dropped["t5xxl_max_token_length"])
    assert "no convolutions" in _note(dropped["conv_dim"]) and "fp32" in _note(dropped["t5xxl_dtype"])
    assert "mode" in _note(dropped["mode_scale"]) and "flow matching" in _note(dropped["v_parameterization"])
    listed = report.source_keys() | set(report.defaulted)
    source = json.loads(path.read_text())
    assert not [k for k in source if k not in listed and not any(x.startswith(k + " ") for x in listed)]
    assert not any("sd3" in k or k in SD3_GUI for k in (e["key"] for e in report.of("unknown")))
    korean = report.text(say, "ko")
    assert "인코더별 드롭아웃은 없음" in korean and "SD3일 때만" not in korean and "은(는)" not in korean


def test_an_sd_scripts_toml_for_sd3_train_network_imports(tmp_path):
    img = kohya_dataset(tmp_path)
    path = tmp_path / "sd3.toml"
    path.write_text(SD3_TOML.replace('"IMG"', json.dumps(str(img))))
    cfg, report = import_kohya(path, bf16=True)
    assert cfg.model.family == "sd3" and cfg.model.base == "/models/sd3.5_large.safetensors"
    assert cfg.lora.targets == "attn_ff" and cfg.lora.train_text_encoder is False
    assert (cfg.lora.rank, cfg.train.epochs, cfg.dataset.resolution, cfg.model.prediction_type) == (16, 8, 1024, "auto")
    mapped, changed, dropped = (_by_key(report, k) for k in ("mapped", "changed", "unsupported"))
    assert mapped["network_module"]["ours"] == "model.family" and mapped["network_module"]["our_value"] == "sd3"
    assert mapped["network_args context_mod_dim, x_mod_dim"]["our_value"] == "attn_ff"
    assert mapped["training_shift"]["our_value"] == 3.0  # the shipped SD3.5 scheduler's shift
    # sd-scripts' default weighting_scheme is uniform: ours draws logit-normal
    assert "weighting_scheme" in report.defaulted
    assert (changed["weighting_scheme"]["value"], changed["weighting_scheme"]["our_value"]) == ("uniform", "logit_normal")
    assert (changed["t5xxl_max_token_length"]["value"], changed["t5xxl_max_token_length"]["our_value"]) == (512, 256)
    assert "logit_normal" in _note(dropped["logit_mean"])  # read only with logit_normal
    assert "never trains T5-XXL" in _note(dropped["network_args train_t5xxl"])
    for key, words in (("clip_l", "model.base"), ("clip_g", "model.base"), ("t5xxl", "model.base"),
                       ("apply_t5_attn_mask", "unmasked"), ("t5_dropout_rate", "caption_dropout"),
                       ("cache_text_encoder_outputs_to_disk", "memory"), ("enable_scaled_pos_embed", "position"),
                       ("v_parameterization", "flow matching")):
        assert words in _note(dropped[key]), key
    assert mapped["cache_text_encoder_outputs"]["our_value"] is True and cfg.model.offload_text_encoders
    # the low-memory switches: the last 10 blocks in CPU memory, the frozen weights in fp8
    assert (mapped["blocks_to_swap"]["our_value"], mapped["fp8_base"]["our_value"]) == (10, "fp8")
    assert (cfg.model.block_swap, cfg.model.base_quant) == (10, "fp8")
    assert not report.of("unknown")
    assert report.steps["kohya_total"] == report.steps["ours_total"]  # same pictures, same buckets


def test_flux_wins_over_sd3_as_the_gui_runs_it(tmp_path):
    path = tmp_path / "both.json"
    path.write_text(json.dumps({**json.loads((DATA / "kohya_ss_lora.json").read_text()), **SD3_GUI,
                                "flux1_checkbox": True, "LoRA_type": "Flux1"}))
    cfg, report = import_kohya(path, compare_steps=False, bf16=True)
    assert cfg.model.family == "flux"  # kohya_ss runs flux_train_network.py before sd3_train_network.py
    dropped = _by_key(report, "unsupported")
    assert "sd3_train_network.py" in _note(dropped["sd3_checkbox"]) and "only for SD3" in _note(dropped["clip_g_dropout_rate"])


def test_other_dit_models_are_still_refused(tmp_path):
    path = tmp_path / "lumina.toml"
    path.write_text('network_module = "networks.lora_lumina"\npretrained_model_name_or_path = "l.sft"\n')
    with pytest.raises(UserError, match="is a a DiT model config"):
        import_kohya(path, compare_steps=False, bf16=True)


def test_sd3_keys_in_a_config_that_is_not_sd3_are_read_only_for_sd3(tmp_path):
    path = gui_json(tmp_path, tmp_path / "none", **{**SD3_GUI, "sd3_checkbox": False,
                                                    "pretrained_model_name_or_path": "/m/v1-5.safetensors"})
    cfg, report = import_kohya(path, compare_steps=False, bf16=True)
    assert cfg.model.family == "auto" and cfg.lora.targets == "attn"
    dropped = _by_key(report, "unsupported")
    assert "only for SD3" in _note(dropped["weighting_scheme"]) and "only for SD3" in _note(dropped["t5xxl_dtype"])
    assert not [e["key"] for e in report.of("unknown") if e["key"] in SD3_GUI]


def _sd3_cfg(tmp_path: Path, base: str, **lora):
    return preset_run(tmp_path, "sd3-character", base, **lora)


_export = export_args


def _single_file(path: Path, encoders: tuple[str, ...]) -> str:
    tensors = {"model.diffusion_model.joint_blocks.0.x_block.attn.qkv.weight": np.zeros((2, 2), np.float16)}
    tensors |= {f"text_encoders.{te}.transformer.x": np.zeros(1, np.float16) for te in encoders}
    save_file(tensors, str(path))
    return str(path)


def test_the_sd3_character_preset_exports_for_sd3_train_network(tmp_path):
    from trainer.models.families.noise import FlowMatchSchedule

    args, command, report = _export(tmp_path, _sd3_cfg(tmp_path, "stabilityai/stable-diffusion-3.5-medium"))
    assert command.startswith("accelerate launch sd3_train_network.py --config_file ")
    assert args["network_module"] == "networks.lora_sd3"
    assert args["weighting_scheme"] == "logit_normal"
    assert (args["logit_mean"], args["logit_std"]) == (FlowMatchSchedule.logit_mean, FlowMatchSchedule.logit_std)
    assert (args["logit_mean"], args["logit_std"]) == (0.0, 1.0)
    assert args["training_shift"] == 3.0 and args["t5xxl_max_token_length"] == 256
    assert args["network_train_unet_only"] is True and "train_t5xxl" not in args
    # lora.targets = attn: feed-forward and modulation layers at rank 0
    assert args["network_args"] == ["context_mlp_dim=0", "x_mlp_dim=0", "context_mod_dim=0", "x_mod_dim=0"]
    assert "cache_text_encoder_outputs" not in args  # the preset shuffles tags: sd-scripts refuses to cache then
    # a hub id: sd-scripts wants single files, so the model and all three text encoders are placeholders to fill
    assert args["pretrained_model_name_or_path"] == "<path to the SD3.5 model .safetensors>"
    assert [args[te] for te in ("clip_l", "clip_g", "t5xxl")] == [f"<path to {te}.safetensors>"
                                                                   for te in ("clip_l", "clip_g", "t5xxl")]
    changed = {e["ours"]: e for e in report.of("changed") if e["key"] == "model.base"}
    assert set(changed) == {"pretrained_model_name_or_path", "clip_l", "clip_g", "t5xxl"}
    assert "single .safetensors" in _note(changed["pretrained_model_name_or_path"])
    assert "파일 하나를 받음" in say(changed["clip_l"]["note"], "ko")
    assert "lora.targets" not in {e["key"] for e in report.of("unsupported")}


def test_a_single_file_base_is_read_as_is_and_only_missing_encoders_are_asked_for(tmp_path):
    whole = _single_file(tmp_path / "sd3_incl_te.safetensors", ("clip_l", "clip_g", "t5xxl"))
    args, _, report = _export(tmp_path, _sd3_cfg(tmp_path, whole))
    assert args["pretrained_model_name_or_path"] == whole and not {"clip_l", "clip_g", "t5xxl"} & set(args)
    [base] = [e for e in report.entries if e["key"] == "model.base"]
    assert base["kind"] == "mapped" and "from this file" in _note(base)
    no_t5 = _single_file(tmp_path / "sd3_no_t5.safetensors", ("clip_l", "clip_g"))
    args, _, report = _export(tmp_path / "b", _sd3_cfg(tmp_path / "b", no_t5))
    assert args["t5xxl"] == "<path to t5xxl.safetensors>" and "clip_l" not in args
    assert "does not hold t5xxl" in _note(next(e for e in report.of("changed") if e["ours"] == "t5xxl"))


def test_a_diffusers_folder_exports_its_own_shift_and_placeholders(tmp_path):
    base = tmp_path / "sd35"
    (base / "scheduler").mkdir(parents=True)
    (base / "scheduler" / "scheduler_config.json").write_text('{"_class_name": "FlowMatchEulerDiscreteScheduler", '
                                                              '"shift": 2.5}')
    args, _, _ = _export(tmp_path, _sd3_cfg(tmp_path, str(base), targets="cross_kv"))
    assert args["training_shift"] == 2.5
    assert args["pretrained_model_name_or_path"].startswith("<path to") and args["t5xxl"].startswith("<path to")
    assert args["network_args"] == ["context_mlp_dim=0", "x_mlp_dim=0", "context_mod_dim=0", "x_mod_dim=0"]


@pytest.mark.parametrize("lora", [{"targets": "attn"}, {"targets": "attn_ff", "train_text_encoder": True}])
def test_sd3_round_trip_through_sd_scripts_gives_back_the_same_training(tmp_path, lora):
    cfg = _sd3_cfg(tmp_path, _single_file(tmp_path / "sd3.safetensors", ("clip_l", "clip_g", "t5xxl")), **lora)
    cfg.dataset.shuffle_tags, cfg.dataset.caption_dropout = False, 0.0
    args, _, _ = _export(tmp_path, cfg)
    assert args.get("cache_text_encoder_outputs", False) is not cfg.lora.train_text_encoder
    again, report = import_kohya(tmp_path / "sd" / "sd_config.toml", bf16=True)
    differ = diff_configs(cfg, again)
    # the dose zone is ours alone; sd-scripts samples at the save points and has no {trigger}
    # sd-scripts caches the text encoders' outputs whenever it can; imported, that is our offload switch, which
    # changes no number of the training
    assert set(differ) <= {"dose.fit_low", "dose.fit_high", "dose.provisional", "sample.every_steps",
                           "sample.prompts", "model.offload_text_encoders"}, differ
    assert again.model.offload_text_encoders is not cfg.lora.train_text_encoder
    assert (again.model.family, again.lora.targets, again.lora.train_text_encoder) == (
        "sd3", lora["targets"], lora.get("train_text_encoder", False))
    sd3_keys = {"network_module", "weighting_scheme", "logit_mean", "logit_std", "training_shift",
                "t5xxl_max_token_length"}
    assert sd3_keys <= {e["key"] for e in report.of("mapped")}
    assert not [e for e in report.of("changed") if e["key"] in sd3_keys or e["key"].startswith("network_args")]
    assert report.steps["match"]
