"""SD3.5 Medium's real transformer (the shipped config: 24 joint blocks of 1536 channels, dual attention in the
first 13, the last block's text stream ending early; random fp32 weights, 64 px and 16 text tokens, so a step is a
few seconds on a CPU): LoRA on the attention and
the feed-forward layers trains through the family's own forward pass, and the kohya file names exactly the modules
sd-scripts' SD3 network has (the original MMDiT's names, q/k/v fused), each applying the trained change at its
alpha / rank as ComfyUI and Forge apply it. About a minute on 2 CPU cores and ~11 GB of memory (2.5 B weights).
"""

from __future__ import annotations

import json
import types

import pytest
import torch

from tests.helpers import (
    exported_kohya,
    kohya_delta,
    peft_delta,
    random_full_width,
    tiny_config,
    train_full_width,
    write_toy_dataset,
)
from trainer.models.base import MODEL_CONFIG_DIR
from trainer.models.family import family
from trainer.models.lora import attach_lora

pytestmark = pytest.mark.slow

RANK, ALPHA = 4, 2.0


def expected_sd_scripts_modules(config: dict) -> set[str]:
    """sd-scripts' SD3 LoRA module names for the ``attn_ff`` targets, from the architecture alone: every joint block's
    picture stream (x_block) has attention qkv / proj and the MLP, the dual-attention blocks a second attention,
    and the text stream (context_block) the same except in the last block, which only feeds the others' attention
    (no attention output, no MLP)."""
    names = set()
    last = config["num_layers"] - 1
    for i in range(config["num_layers"]):
        names |= {f"joint_blocks.{i}.x_block.{m}" for m in ("attn.qkv", "attn.proj", "mlp.fc1", "mlp.fc2")}
        if i in config["dual_attention_layers"]:
            names |= {f"joint_blocks.{i}.x_block.attn2.qkv", f"joint_blocks.{i}.x_block.attn2.proj"}
        names.add(f"joint_blocks.{i}.context_block.attn.qkv")
        if i != last:
            names |= {f"joint_blocks.{i}.context_block.{m}" for m in ("attn.proj", "mlp.fc1", "mlp.fc2")}
    return {"lora_unet_" + n.replace(".", "_") for n in names}


def test_full_width_sd35_medium_lora_trains_and_exports_sd_scripts_names(tmp_path):
    from diffusers import SD3Transformer2DModel

    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=2), tmp_path / "out", {
        "lora.rank": RANK, "lora.alpha": ALPHA, "lora.targets": "attn_ff", "model.family": "sd3"})
    config = json.loads((MODEL_CONFIG_DIR / "sd3" / "transformer" / "config.json").read_text())
    assert (config["num_layers"], config["num_attention_heads"] * config["attention_head_dim"]) == (24, 1536)
    transformer = random_full_width(SD3Transformer2DModel, config)
    sd3 = family("sd3")
    mods = attach_lora(types.SimpleNamespace(transformer=transformer), cfg.lora, "sd3", seed=0)
    gen = torch.Generator().manual_seed(1)
    hidden, pooled = torch.randn(1, 16, 4096, generator=gen), torch.randn(1, 2048, generator=gen)
    loss = train_full_width(sd3, transformer, mods, {"num_train_timesteps": 1000, "shift": 3.0}, hidden, pooled)
    assert torch.isfinite(loss)

    kohya, modules = exported_kohya(tmp_path / "lora.safetensors", cfg, mods, "sd3", transformer)
    assert modules == expected_sd_scripts_modules(config)
    states = mods.adapter_state_dicts()

    def applied(name: str) -> torch.Tensor:
        return kohya_delta(kohya, name)

    def trained(module: str) -> torch.Tensor:
        return peft_delta(states["transformer"], module, ALPHA, RANK)

    for i in (0, 23):
        fused = applied(f"lora_unet_joint_blocks_{i}_context_block_attn_qkv")
        parts = torch.cat([trained(f"transformer_blocks.{i}.attn.{p}") for p in ("add_q_proj", "add_k_proj", "add_v_proj")])
        assert fused.shape == (3 * 1536, 1536)
        assert torch.allclose(fused, parts, atol=1e-2 * float(parts.abs().max()))
    second = applied("lora_unet_joint_blocks_12_x_block_attn2_qkv")
    assert torch.allclose(second, torch.cat([trained(f"transformer_blocks.12.attn2.{p}") for p in ("to_q", "to_k", "to_v")]),
                          atol=1e-2 * float(second.abs().max()))
