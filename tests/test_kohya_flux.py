"""Flux.1 LoRA configs of kohya_ss and sd-scripts (flux_train_network.py, networks.lora_flux): a GUI JSON with
flux1_checkbox and an sd-scripts TOML import as model.family "flux" with every Flux.1 key reported; OFT, Chroma and
ControlNet configs are refused by name; a Flux.1 config exports for flux_train_network.py with the arguments that
train what ours trains, and comes back the same; sd-scripts has no Z-Image script, and a Z-Image export says so.
Key names as kohya_ss kohya_gui/class_flux1.py and lora_gui.py and sd-scripts library/flux_train_utils.py,
library/train_util.py and networks/lora_flux.py spell them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kohya_helpers import export_args, gui_json, kohya_dataset, preset_run

from trainer.config.presets import preset_config
from trainer.config.schema import diff_configs, save_config
from trainer.errors import UserError
from trainer.kohya.exporter import export_kohya
from trainer.kohya.flux import FLUX_DEV
from trainer.kohya.importer import import_kohya
from trainer.models.families.noise import FlowMatchSchedule
from words import say

# the Flux.1 fields of a kohya_ss GUI config as the GUI saves them (kohya_gui/class_flux1.py, lora_gui.py), set as
# sd-scripts' Flux.1 guide recommends (shift sampling, raw prediction, guidance 1), and the SD3 fields every GUI
# config carries
FLUX_GUI = {
    "flux1_checkbox": True, "LoRA_type": "Flux1", "model_type": "flux",
    "pretrained_model_name_or_path": "/models/flux1-dev.safetensors", "ae": "/models/ae.safetensors",
    "clip_l": "/models/clip_l.safetensors", "t5xxl": "/models/t5xxl_fp16.safetensors",
    "discrete_flow_shift": 3.1582, "model_prediction_type": "raw", "timestep_sampling": "shift",
    "guidance_scale": 1.0, "t5xxl_max_token_length": 512, "apply_t5_attn_mask": True, "split_mode": False,
    "train_blocks": "all", "split_qkv": True, "train_t5xxl": False, "enable_all_linear": False, "mem_eff_save": False,
    "cpu_offload_checkpointing": False, "blocks_to_swap": 8, "single_blocks_to_swap": 0, "double_blocks_to_swap": 0,
    "img_attn_dim": "", "img_mlp_dim": "", "img_mod_dim": "0", "single_dim": "", "txt_attn_dim": "",
    "txt_mlp_dim": "", "txt_mod_dim": "0", "single_mod_dim": "0", "in_dims": "",
    "train_double_block_indices": "all", "train_single_block_indices": "all",
    "flux1_cache_text_encoder_outputs": True, "flux1_cache_text_encoder_outputs_to_disk": True,
    "fp8_base": True, "fp8_base_unet": False, "mixed_precision": "bf16", "network_dim": 16, "network_alpha": 16,
    "learning_rate": 1e-4, "unet_lr": 1e-4, "text_encoder_lr": 0, "network_train_unet_only": True,
    "shuffle_caption": False, "caption_dropout_rate": 0, "max_token_length": 75,
    "sdxl_cache_text_encoder_outputs": True,
    "epoch": 4, "max_train_epochs": 0, "max_train_steps": 0, "min_snr_gamma": 0, "conv_dim": 1, "conv_alpha": 1,
    "sd3_checkbox": False, "sd3_cache_text_encoder_outputs": False, "weighting_scheme": "logit_normal",
    "logit_mean": 0.0, "logit_std": 1.0, "mode_scale": 1.29, "sd3_clip_l": "", "clip_g": "", "sd3_t5xxl": "",
    "t5xxl_dtype": "bf16",
}  # fmt: skip
FLUX_TOML = """# an sd-scripts --config_file for flux_train_network.py, its keys sorted as kohya_ss writes them
ae = "/models/ae.safetensors"
apply_t5_attn_mask = true
blocks_to_swap = 18
cache_text_encoder_outputs = true
cache_text_encoder_outputs_to_disk = true
clip_l = "/models/clip_l.safetensors"
fp8_base = true
guidance_scale = 1.0
learning_rate = 0.0001
max_train_epochs = 8
mixed_precision = "bf16"
model_prediction_type = "raw"
network_alpha = 16.0
network_args = ["img_mlp_dim=0", "txt_mlp_dim=0", "train_t5xxl=True", "train_blocks=single", "in_dims=[4,0,0,0,4]",
                "verbose=True"]
network_dim = 32
network_module = "networks.lora_flux"
network_train_unet_only = true
optimizer_type = "AdamW8bit"
pretrained_model_name_or_path = "/models/flux1-dev.safetensors"
resolution = "1024,1024"
sigmoid_scale = 1.0
t5xxl = "/models/t5xxl_fp16.safetensors"
t5xxl_max_token_length = 256
timestep_sampling = "sigmoid"
train_data_dir = "IMG"
weighting_scheme = "logit_normal"
"""


def _by_key(report, kind: str) -> dict:
    return {e["key"]: e for e in report.of(kind)}


def _note(entry, lang: str = "en") -> str:
    return say(entry["note"], lang)


def _toml(tmp_path: Path, text: str, name: str = "flux.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_gui_config_with_flux1_checkbox_imports_as_flux_with_its_keys_reported(tmp_path):
    img = kohya_dataset(tmp_path)
    path = gui_json(tmp_path, img, **FLUX_GUI)
    cfg, report = import_kohya(path, bf16=True)
    assert (cfg.model.family, cfg.model.base, cfg.model.guidance) == ("flux", FLUX_DEV, 1.0)
    assert (cfg.model.base_quant, cfg.model.block_swap, cfg.model.offload_text_encoders) == ("fp8", 8, True)
    assert cfg.lora.targets == "attn_ff" and cfg.lora.conv_rank == 0 and not cfg.lora.train_text_encoder
    assert (cfg.lora.rank, cfg.lora.alpha, cfg.optim.lr, cfg.train.epochs) == (16, 16.0, 1e-4, 4)
    mapped, changed, dropped = (_by_key(report, k) for k in ("mapped", "changed", "unsupported"))
    assert mapped["flux1_checkbox"]["ours"] == "model.family" and mapped["flux1_checkbox"]["our_value"] == "flux"
    # the modulation dims at 0 and q, k, v split: exactly our attn_ff
    assert mapped["img_mod_dim, txt_mod_dim, single_mod_dim, split_qkv"]["our_value"] == "attn_ff"
    assert mapped["guidance_scale"]["our_value"] == 1.0 and mapped["blocks_to_swap"]["our_value"] == 8
    assert mapped["timestep_sampling"]["our_value"] == "logit_normal" and mapped["model_prediction_type"]
    assert mapped["t5xxl_max_token_length"]["our_value"] == 512
    # FLUX.1-dev's scheduler shifts only when sampling: ours trains on unshifted noise levels
    assert (changed["discrete_flow_shift"]["value"], changed["discrete_flow_shift"]["our_value"]) == (3.1582, 1.0)
    # sd-scripts reads a single file, ours a diffusers folder: FLUX.1-dev's stands in, and the report says so
    base = changed["pretrained_model_name_or_path"]
    assert base["our_value"] == FLUX_DEV and "flux1-dev.safetensors" in _note(base) and "diffusers" in _note(base)
    for key in ("clip_l", "t5xxl", "ae"):
        assert "model.base" in _note(dropped[key]), key
    assert "unmasked" in _note(dropped["apply_t5_attn_mask"]) and "split_mode" in _note(dropped["train_blocks"])
    assert "only for SD3" in _note(dropped["weighting_scheme"]) and "only for SD3" in _note(dropped["logit_std"])
    assert "flux1_cache_text_encoder_outputs" in _note(dropped["sdxl_cache_text_encoder_outputs"])
    assert "Flux.1 has no convolutions" in _note(dropped["conv_dim"])
    assert mapped["flux1_cache_text_encoder_outputs"]["our_value"] is True
    listed = report.source_keys() | set(report.defaulted)
    named = {part.split(" ")[0] for key in listed for part in key.split(", ")}  # "optimizer_args betas", "a, b"
    assert not [k for k in json.loads(path.read_text()) if k not in listed | named]
    assert not any(k in FLUX_GUI for k in (e["key"] for e in report.of("unknown")))
    assert report.steps["match"]  # the GUI's count and ours: 40 picture-repeats × 4 epochs
    korean = report.text(say, "ko")
    assert "diffusers 폴더(트랜스포머" in korean and "기반 모델의 학습 shift" in korean and "은(는)" not in korean


def test_an_sd_scripts_toml_for_flux_train_network_imports(tmp_path):
    img = kohya_dataset(tmp_path)
    cfg, report = import_kohya(_toml(tmp_path, FLUX_TOML.replace('"IMG"', json.dumps(str(img)))), bf16=True)
    assert (cfg.model.family, cfg.model.base, cfg.model.guidance) == ("flux", FLUX_DEV, 1.0)
    assert (cfg.model.base_quant, cfg.model.block_swap, cfg.model.offload_text_encoders) == ("fp8", 18, True)
    assert (cfg.lora.rank, cfg.lora.alpha, cfg.train.epochs, cfg.dataset.resolution) == (32, 16.0, 8, 1024)
    assert cfg.lora.targets == "attn" and cfg.optim.optimizer == "adamw8bit"
    mapped, changed, dropped = (_by_key(report, k) for k in ("mapped", "changed", "unsupported"))
    assert mapped["network_module"]["ours"] == "model.family" and mapped["network_module"]["our_value"] == "flux"
    # the double blocks' feed-forward at 0, q, k and v fused: attn is the closest, and why
    targets = changed["network_args img_mlp_dim, txt_mlp_dim"]
    assert targets["our_value"] == "attn" and "split_qkv" in _note(targets)
    assert changed["network_args train_blocks"]["value"] == "single"
    assert "input layers" in _note(dropped["network_args in_dims"])
    assert "never trains T5-XXL" in _note(dropped["network_args train_t5xxl"])
    assert dropped["network_args verbose"]["value"] == "True"
    # sigmoid at scale 1 on FLUX.1-dev's unshifted noise levels is what ours draws
    assert mapped["timestep_sampling"]["our_value"] == "logit_normal" and mapped["sigmoid_scale"]["our_value"] == 1.0
    assert "discrete_flow_shift" in report.defaulted and "shift or sigma" in _note(dropped["discrete_flow_shift"])
    assert "timestep_sampling sigma" in _note(dropped["weighting_scheme"])
    assert (changed["t5xxl_max_token_length"]["value"], changed["t5xxl_max_token_length"]["our_value"]) == (256, 512)
    assert mapped["fp8_base"]["our_value"] == "fp8" and mapped["cache_text_encoder_outputs"]["our_value"] is True
    assert "memory" in _note(dropped["cache_text_encoder_outputs_to_disk"])
    assert not report.of("unknown")
    assert report.steps["kohya_total"] == report.steps["ours_total"]


def test_sd_scripts_defaults_are_what_differs_from_ours(tmp_path):
    text = ('network_module = "networks.lora_flux"\npretrained_model_name_or_path = "/models/FLUX.1-dev"\n'
            'network_dim = 16\n')
    cfg, report = import_kohya(_toml(tmp_path, text), compare_steps=False, bf16=True)
    assert cfg.model.base == "/models/FLUX.1-dev"  # a diffusers folder is read as it is
    assert cfg.model.guidance == 3.5  # sd-scripts' default guidance_scale
    assert cfg.lora.targets == "attn_ff"  # networks.lora_flux trains every linear layer, the modulation too
    changed = _by_key(report, "changed")
    assert {"timestep_sampling", "discrete_flow_shift", "model_prediction_type", "network_module"} <= set(changed)
    prediction = changed["model_prediction_type"]
    assert prediction["value"] == "sigma_scaled" and "raw" in _note(prediction)
    assert "(weighting_scheme uniform)" in changed["timestep_sampling"]["value"]
    defaulted = {"timestep_sampling", "discrete_flow_shift", "model_prediction_type", "guidance_scale"}
    assert defaulted <= set(report.defaulted)


def test_a_toml_naming_a_t5xxl_is_flux_and_flux_wins_over_sd3_keys(tmp_path):
    text = 'pretrained_model_name_or_path = "f.sft"\nclip_l = "l.sft"\nt5xxl = "t5.sft"\nnetwork_dim = 16\n'
    cfg, _ = import_kohya(_toml(tmp_path, text), compare_steps=False, bf16=True)
    assert cfg.model.family == "flux"


def test_flux_keys_in_a_config_that_is_not_flux_are_read_only_for_flux(tmp_path):
    path = gui_json(tmp_path, tmp_path / "none", **{**FLUX_GUI, "flux1_checkbox": False, "LoRA_type": "Standard",
                                                    "pretrained_model_name_or_path": "/m/v1-5.safetensors"})
    cfg, report = import_kohya(path, compare_steps=False, bf16=True)
    assert cfg.model.family == "auto" and cfg.model.guidance == 1.0 and cfg.model.block_swap == 0
    dropped = _by_key(report, "unsupported")
    assert "only for Flux.1" in _note(dropped["guidance_scale"]) and "only for Flux.1" in _note(dropped["clip_l"])
    assert "Flux.1일 때만" in _note(dropped["discrete_flow_shift"], "ko")
    assert not [e["key"] for e in report.of("unknown") if e["key"] in FLUX_GUI]


@pytest.mark.parametrize("changes, words", [
    ({"LoRA_type": "Flux1 OFT"}, "is a Flux.1 OFT config (LoRA_type = 'Flux1 OFT')"),
    ({"model_type": "chroma"}, "is a Chroma config (model_type = 'chroma')"),
])
def test_what_we_do_not_train_is_refused_by_name(tmp_path, changes, words):
    with pytest.raises(UserError, match=r"SD 1\.5, SDXL, SD 3\.5 and Flux\.1 only") as e:
        import_kohya(gui_json(tmp_path, tmp_path / "none", **{**FLUX_GUI, **changes}), compare_steps=False, bf16=True)
    assert words in str(e.value) and "Flux.1의 kohya LoRA 설정만" in e.value.say("ko")


@pytest.mark.parametrize("text, words", [
    ('network_module = "networks.oft_flux"\npretrained_model_name_or_path = "f.sft"\n', "Flux.1 OFT"),
    ('network_module = "networks.lora_flux"\ncontrolnet_model_name_or_path = "c.sft"\n', "Flux.1 ControlNet"),
])
def test_oft_and_controlnet_tomls_are_refused(tmp_path, text, words):
    with pytest.raises(UserError, match=words):
        import_kohya(_toml(tmp_path, text), compare_steps=False, bf16=True)


@pytest.mark.parametrize("text, key", [
    ("guidance_scale = 40.0\n", "guidance_scale = 40.0 → model.guidance"),
    ('network_args = ["img_mod_dim=x"]\n', "network_args img_mod_dim = 'x'"),
    ('timestep_sampling = "shift"\ndiscrete_flow_shift = "three"\n', "discrete_flow_shift = 'three'"),
    ("t5xxl_max_token_length = 5.5\n", "t5xxl_max_token_length = 5.5"),
])
def test_a_bad_value_is_one_message_naming_the_key(tmp_path, text, key):
    path = _toml(tmp_path, 'network_module = "networks.lora_flux"\nnetwork_dim = 16\n' + text)
    with pytest.raises(UserError) as e:
        import_kohya(path, compare_steps=False, bf16=True)
    assert key in str(e.value) and str(path) in str(e.value)


# ------------------------------------------------------------------------------------------------ export


def _flux_cfg(tmp_path: Path, **lora):
    return preset_run(tmp_path, "flux-character", FLUX_DEV, **lora)


_export = export_args


def test_the_flux_character_preset_exports_for_flux_train_network(tmp_path):
    args, command, report = _export(tmp_path, _flux_cfg(tmp_path))
    assert command.startswith("accelerate launch flux_train_network.py --config_file ")
    assert args["network_module"] == "networks.lora_flux" and args["guidance_scale"] == 1.0
    # ours: logit-normal noise levels (sd-scripts' sigmoid of a standard normal), FLUX.1-dev's unshifted
    assert (args["timestep_sampling"], args["sigmoid_scale"], args["discrete_flow_shift"]) == ("shift", 1.0, 1.0)
    assert (FlowMatchSchedule.logit_mean, FlowMatchSchedule.logit_std) == (0.0, 1.0)
    assert args["model_prediction_type"] == "raw"
    assert args["fp8_base"] is True and "blocks_to_swap" not in args and args["network_train_unet_only"] is True
    assert args["pretrained_model_name_or_path"] == "<path to the FLUX.1 model .safetensors>"
    files = ("clip_l", "t5xxl", "ae")
    assert [args[k] for k in files] == [f"<path to {k}.safetensors>" for k in files]
    # attn: the closest networks.lora_flux comes (the single blocks whole), and the report says why
    assert args["network_args"] == ["img_mlp_dim=0", "txt_mlp_dim=0", "img_mod_dim=0", "txt_mod_dim=0",
                                    "single_mod_dim=0", "split_qkv=True"]
    changed = {e["ours"]: e for e in report.of("changed")}
    assert "linear1" in _note(changed["network_args"]) and "linear1" in _note(changed["network_args"], "ko")
    assert "cache_text_encoder_outputs" not in args  # the preset drops captions: sd-scripts cannot cache then
    assert "flux1-dev.safetensors" in _note(changed["pretrained_model_name_or_path"])
    prompts = (tmp_path / "sd" / "sample_prompts.txt").read_text().splitlines()
    assert all("--g 3.5 --l 1 " in line for line in prompts)
    assert "lora.targets" not in {e["key"] for e in report.of("unsupported")}
    assert "model.guidance" in report.source_keys()
    assert "model.guidance" not in {e["key"] for e in report.of("unsupported")}


@pytest.mark.parametrize("lora", [{"targets": "attn_ff"}, {"targets": "attn", "train_text_encoder": True}])
def test_flux_round_trip_through_sd_scripts_gives_back_the_same_training(tmp_path, lora):
    cfg = _flux_cfg(tmp_path, **lora)
    cfg.dataset.caption_dropout = 0.0
    cfg.model.block_swap = 6
    if cfg.lora.train_text_encoder:
        cfg.model.offload_text_encoders = False
    args, _, _ = _export(tmp_path, cfg)
    assert args.get("cache_text_encoder_outputs", False) is not cfg.lora.train_text_encoder
    assert args["blocks_to_swap"] == 6
    again, report = import_kohya(tmp_path / "sd" / "sd_config.toml", bf16=True)
    differ = diff_configs(cfg, again)
    # the dose zone is ours alone; sd-scripts samples at the save points with its own guidance flags
    assert set(differ) <= {"dose.fit_low", "dose.fit_high", "dose.provisional", "sample.every_steps",
                           "sample.prompts", "sample.guidance"}, differ
    assert (again.model.family, again.model.base, again.lora.targets) == ("flux", FLUX_DEV, lora["targets"])
    flux_keys = {"network_module", "guidance_scale", "timestep_sampling", "sigmoid_scale", "discrete_flow_shift",
                 "model_prediction_type"}
    assert flux_keys <= {e["key"] for e in report.of("mapped")}
    changed = {e["key"] for e in report.of("changed")}  # and the dataset's folders, as for every family
    assert "pretrained_model_name_or_path" in changed and not changed & flux_keys
    assert {k for k in changed if k.startswith("network_args")} == (
        {"network_args img_mlp_dim, txt_mlp_dim, img_mod_dim, txt_mod_dim, single_mod_dim, split_qkv"}
        if lora["targets"] == "attn" else set())
    assert report.steps["match"]


def test_sd_scripts_has_no_z_image_script_and_an_export_says_so(tmp_path):
    cfg = preset_config("zimage-character")
    cfg.model.base = "Tongyi-MAI/Z-Image"
    save_config(cfg, tmp_path / "ours.toml")
    with pytest.raises(UserError, match="sd-scripts does not train Z-Image") as e:
        export_kohya(tmp_path / "ours.toml", tmp_path / "sd")
    assert "musubi-tuner" in str(e.value) and "sd-scripts는 Z-Image 모델을 학습하지 않습니다" in e.value.say("ko")
    assert not (tmp_path / "sd").exists()

