"""LoRA on the UNet's resnet convolutions (lora.conv_rank, kohya's conv_dim): what trains, and files other tools load."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from tests.helpers import images_of_both_formats, lora_image, tiny_config, write_toy_dataset
from trainer.config.schema import from_dict
from trainer.errors import UserError
from trainer.export.lora_files import unet_module_to_sgm
from trainer.models.lora import attach_lora
from trainer.models.tiny import build_tiny_pipeline
from trainer.review.strength import load_lora_onto
from trainer.run.events import MemorySink
from trainer.train.loop import run_training

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_toy_dataset(tmp_path_factory.mktemp("data"))


def _train(dataset, out, base="tiny-sd15", **overrides):
    cfg = tiny_config(dataset, out, {"lora.conv_rank": 2, "lora.conv_alpha": 1.0, "optim.lr": 1e-2,
                                     "train.max_steps": 4, **overrides}, base=base)
    result = run_training(cfg, MemorySink())
    assert result.status == "finished", result.message
    return result.run_dir / "final"


def test_conv_rank_puts_lora_on_the_chosen_resnets_with_its_own_rank_and_alpha():
    pipe = build_tiny_pipeline("sd15")
    cfg = from_dict({"lora": {"rank": 4, "alpha": 4.0, "conv_rank": 2, "conv_blocks": ["up_blocks"]}})
    mods = attach_lora(pipe, cfg.lora, "sd15", seed=0)
    convs = {n: p.shape for n, p in mods.named_trainable() if p.dim() == 4}
    assert convs and all(".up_blocks." in n and ".resnets." in n for n in convs)
    # sd-scripts' rule by kind: 3×3 convolutions at conv_rank 2; the 1×1 conv_shortcut, like linear layers, at rank 4
    assert {s[0] for n, s in convs.items() if "lora_A" in n and s[2:] == (3, 3)} == {2}
    assert {s[0] for n, s in convs.items() if "lora_A" in n and s[2:] == (1, 1)} == {4}
    assert any(".conv_shortcut." in n for n in convs)
    assert {p.shape[0] for n, p in mods.named_trainable() if "lora_A" in n and p.dim() == 2} == {4}
    layer = pipe.unet.get_submodule("up_blocks.1.resnets.0.conv1")
    assert layer.scaling["default"] == pytest.approx(4.0 / 4 * 2 / 2)  # conv_alpha 0: the linear ratio, x rank
    shortcut = pipe.unet.get_submodule("up_blocks.1.resnets.0.conv_shortcut")
    assert (shortcut.r["default"], shortcut.lora_alpha["default"]) == (4, 4.0)
    assert from_dict({"lora": {"rank": 8, "alpha": 4.0, "conv_rank": 4}}).lora.effective_conv_alpha == 2.0
    wrong = from_dict({"lora": {"conv_rank": 2, "conv_blocks": ["up_blocks.3"]}}).lora  # the tiny UNet has 2 levels
    with pytest.raises(UserError, match=r"lora.conv_blocks: .* no resnet under 'up_blocks.3'.* up_blocks.1"):
        attach_lora(build_tiny_pipeline("sd15"), wrong, "sd15", seed=0)


def test_sd15_conv_lora_files_load_in_diffusers_alike_and_the_convolutions_count(dataset, tmp_path):
    final = _train(dataset, tmp_path)
    with safe_open(str(final / "lora.safetensors"), "pt") as f:
        keys = list(f.keys())
        meta = f.metadata()
        down = f.get_tensor("lora_unet_down_blocks_0_resnets_0_conv1.lora_down.weight")
        up = f.get_tensor("lora_unet_down_blocks_0_resnets_0_conv1.lora_up.weight")
        conv_alpha = float(f.get_tensor("lora_unet_down_blocks_0_resnets_0_conv1.alpha"))
        attn_alpha = float(f.get_tensor("lora_unet_down_blocks_0_attentions_0_transformer_blocks_0_attn1_to_q.alpha"))
        shortcut_down = f.get_tensor("lora_unet_down_blocks_1_resnets_0_conv_shortcut.lora_down.weight")
        shortcut_alpha = float(f.get_tensor("lora_unet_down_blocks_1_resnets_0_conv_shortcut.alpha"))
    assert down.shape[:2] == (2, 32) and down.shape[2:] == (3, 3) and up.shape[1:] == (2, 1, 1)
    assert (conv_alpha, attn_alpha) == (1.0, 4.0)
    assert shortcut_down.shape == (4, 32, 1, 1) and shortcut_alpha == 4.0  # 1×1: the network's rank and alpha
    assert json.loads(meta["ss_network_args"])["conv_dim"] == "2"
    assert "lora_unet_down_blocks_1_resnets_0_conv_shortcut.lora_down.weight" in keys

    images = images_of_both_formats(final, "sd15")
    assert np.abs(images["lora.safetensors"] - images["lora_diffusers.safetensors"]).max() <= 1e-3

    # the convolutions' part is applied: the same file without it draws something else
    tensors = load_file(str(final / "lora.safetensors"))
    save_file({k: v for k, v in tensors.items() if "resnets" not in k}, str(tmp_path / "attn_only.safetensors"))
    pipe = build_tiny_pipeline("sd15")
    pipe.load_lora_weights(str(tmp_path), weight_name="attn_only.safetensors")
    assert np.abs(lora_image(pipe) - images["lora.safetensors"]).max() > 1e-3


def test_sdxl_conv_lora_in_original_layout_names_loads_in_diffusers(dataset, tmp_path):
    final = _train(dataset, tmp_path, base="tiny-sdxl")
    with safe_open(str(final / "lora.safetensors"), "pt") as f:
        keys = list(f.keys())
    assert any(k.startswith("lora_unet_input_blocks_1_0_in_layers_2.") for k in keys)
    assert any(k.startswith("lora_unet_middle_block_2_out_layers_3.") for k in keys)
    assert not any("resnets" in k for k in keys)
    images = images_of_both_formats(final, "sdxl")
    assert np.abs(images["lora.safetensors"] - images["lora_diffusers.safetensors"]).max() <= 1e-3


def test_sgm_names_of_resnets_follow_the_original_block_numbering():
    cfg = {"layers_per_block": 2, "up_block_types": ["a", "b", "c"]}
    assert unet_module_to_sgm("down_blocks.0.resnets.1.conv1", cfg) == "input_blocks.2.0.in_layers.2"
    assert unet_module_to_sgm("down_blocks.1.resnets.0.conv_shortcut", cfg) == "input_blocks.4.0.skip_connection"
    assert unet_module_to_sgm("down_blocks.1.attentions.0.proj_in", cfg) == "input_blocks.4.1.proj_in"
    assert unet_module_to_sgm("mid_block.resnets.1.conv2", cfg) == "middle_block.2.out_layers.3"
    assert unet_module_to_sgm("mid_block.attentions.0.proj_out", cfg) == "middle_block.1.proj_out"
    assert unet_module_to_sgm("up_blocks.1.resnets.2.conv1", cfg) == "output_blocks.5.0.in_layers.2"
    assert unet_module_to_sgm("up_blocks.1.attentions.2.proj_in", cfg) == "output_blocks.5.1.proj_in"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_lean_linear_forward_matches_peft_in_values_and_gradients(dtype):
    """The training forward of LoRA Linear layers (trainer.models.lora.use_lean_linear_forward) against peft's own."""
    from peft.tuners.lora.layer import Linear as LoraLinear

    def run(lean: bool):
        torch.manual_seed(0)
        pipe = build_tiny_pipeline("sd15")
        pipe.unet.to(dtype)
        mods = attach_lora(pipe, from_dict({"lora": {"rank": 4, "alpha": 2.0}}).lora, "sd15", seed=0)
        layers = [m for m in pipe.unet.modules() if isinstance(m, LoraLinear)]
        assert layers and all(("forward" in m.__dict__) for m in layers)  # attach_lora installs it
        if not lean:
            for m in layers:
                del m.forward
        for _, p in mods.named_trainable():
            torch.nn.init.normal_(p, std=0.1)
        x, t, h = torch.randn(2, 4, 32, 32), torch.tensor([10, 500]), torch.randn(2, 77, 32)
        out = pipe.unet(x.to(dtype), t, h.to(dtype)).sample
        out.float().square().mean().backward()
        return out.float(), {n: p.grad.clone() for n, p in mods.named_trainable()}

    out_lean, grads_lean = run(True)
    out_peft, grads_peft = run(False)
    assert out_lean.dtype == out_peft.dtype
    assert torch.equal(out_lean, out_peft)
    assert grads_lean.keys() == grads_peft.keys()
    for name in grads_peft:
        torch.testing.assert_close(grads_lean[name], grads_peft[name], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("family", ["sd15", "sdxl"])
def test_cross_kv_targets_only_the_cross_attention_keys_and_values(family):
    pipe = build_tiny_pipeline(family)
    cfg = from_dict({"lora": {"rank": 4, "alpha": 4.0, "targets": "cross_kv"}})
    mods = attach_lora(pipe, cfg.lora, family, seed=0)
    names = [n for n, _ in mods.named_trainable()]
    cross = [n for n, _ in pipe.unet.named_modules() if n.endswith(("attn2.to_k", "attn2.to_v"))]
    assert cross and len(names) == 2 * len(cross)  # lora_A and lora_B of each
    assert all(".attn2.to_k." in n or ".attn2.to_v." in n for n in names)


def test_cross_kv_lora_files_load_in_diffusers_alike(dataset, tmp_path):
    # One alpha for every module: diffusers' kohya loader keeps only the most common alpha when they differ, and
    # with cross_kv the convolutions outnumber the attention layers (docs/families.md, "LoRA on the
    # convolutions").
    final = _train(dataset, tmp_path, **{"lora.targets": "cross_kv", "lora.conv_alpha": 4.0})
    with safe_open(str(final / "lora.safetensors"), "pt") as f:
        keys = list(f.keys())
    assert any("_attn2_to_k." in k for k in keys) and any("_attn2_to_v." in k for k in keys)
    assert not any("_attn1_" in k or "_attn2_to_q." in k or "_to_out_" in k for k in keys)
    assert any("_resnets_0_conv1." in k for k in keys)  # conv_rank still applies beside it
    images = images_of_both_formats(final, "sd15")
    assert np.abs(images["lora.safetensors"] - images["lora_diffusers.safetensors"]).max() <= 1e-3


def test_review_loads_each_modules_alpha_where_diffusers_kohya_loader_keeps_one(dataset, tmp_path):
    # cross_kv with convolution LoRA everywhere: 12 attention layers and 7 1×1 shortcuts at alpha 4 (rank 4),
    # 24 3×3 convolutions at alpha 1
    final = _train(dataset, tmp_path, **{"lora.targets": "cross_kv"})
    # diffusers 0.42's kohya loader gives the attention layers the convolutions' alpha here (scale 0.25)
    name = "down_blocks.0.attentions.0.transformer_blocks.0.attn2.to_k"
    pipe = build_tiny_pipeline("sd15")
    read = load_lora_onto(pipe, final / "lora.safetensors", "review")
    assert read.name == "lora_diffusers.safetensors"
    assert pipe.unet.get_submodule(name).scaling["review"] == pytest.approx(1.0)  # alpha 4 / rank 4, as trained
    assert pipe.unet.get_submodule("up_blocks.1.resnets.0.conv1").scaling["review"] == pytest.approx(0.5)
