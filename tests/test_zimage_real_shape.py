"""Z-Image's real transformer blocks (the shipped config at full width: 3840 channels, 30 heads, Qwen3's 2560-wide
captions; 2 main blocks and 1 refiner of each kind instead of 30 and 2, random fp32 weights, 64 px and 16 text
tokens): LoRA on the attention and the feed forward trains through the family's own forward pass; the ComfyUI file
names exactly the modules ComfyUI's Z-Image model has (q/k/v fused into ``attention.qkv``, ``attention.out``), each
applying the trained change at its alpha / rank, and the diffusers file names the real modules.
About half a minute on 2 CPU cores and ~4 GB of memory.
"""

from __future__ import annotations

import json
import types

import pytest
import torch
from safetensors.torch import load_file

from tests.helpers import (
    exported_kohya,
    kohya_delta,
    peft_delta,
    random_full_width,
    tiny_config,
    train_full_width,
    write_toy_dataset,
)
from trainer.export.lora_files import write_diffusers
from trainer.models.base import MODEL_CONFIG_DIR
from trainer.models.family import family
from trainer.models.lora import attach_lora

pytestmark = pytest.mark.slow

RANK, ALPHA = 4, 2.0
BLOCKS = ("noise_refiner.0", "context_refiner.0", "layers.0", "layers.1")


def expected_comfy_modules() -> set[str]:
    """ComfyUI's names of the ``attn_ff`` targets, from the architecture alone: every block has one fused attention
    input (``attention.qkv``), its output (``attention.out``) and the SwiGLU's three layers."""
    parts = ("attention.qkv", "attention.out", "feed_forward.w1", "feed_forward.w2", "feed_forward.w3")
    return {"lora_unet_" + f"{b}.{p}".replace(".", "_") for b in BLOCKS for p in parts}


def test_full_width_zimage_lora_trains_and_exports_comfyui_names(tmp_path):
    from diffusers import ZImageTransformer2DModel

    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=2), tmp_path / "out", {
        "lora.rank": RANK, "lora.alpha": ALPHA, "lora.targets": "attn_ff", "model.family": "zimage"})
    config = json.loads((MODEL_CONFIG_DIR / "zimage" / "transformer" / "config.json").read_text())
    assert (config["n_layers"], config["dim"], config["n_heads"], config["cap_feat_dim"]) == (30, 3840, 30, 2560)
    config.update(n_layers=2, n_refiner_layers=1)
    transformer = random_full_width(ZImageTransformer2DModel, config)
    zimage = family("zimage")
    assert len(zimage.denoiser_blocks(transformer)) == len(BLOCKS)
    mods = attach_lora(types.SimpleNamespace(transformer=transformer), cfg.lora, "zimage", seed=0)
    hidden, mask = torch.randn(1, 16, 2560, generator=torch.Generator().manual_seed(1)), torch.ones(1, 16)
    loss = train_full_width(zimage, transformer, mods, {"num_train_timesteps": 1000, "shift": 6.0}, hidden, mask)
    assert torch.isfinite(loss)

    comfy, modules = exported_kohya(tmp_path / "lora.safetensors", cfg, mods, "zimage", transformer)
    assert modules == expected_comfy_modules()
    states = mods.adapter_state_dicts()

    def applied(name: str) -> torch.Tensor:
        return kohya_delta(comfy, name)

    def trained(module: str) -> torch.Tensor:
        return peft_delta(states["transformer"], module, ALPHA, RANK)

    for block in BLOCKS:
        fused = applied(f"lora_unet_{block.replace('.', '_')}_attention_qkv")
        parts = torch.cat([trained(f"{block}.attention.{p}") for p in ("to_q", "to_k", "to_v")])
        assert fused.shape == (3 * 3840, 3840)
        assert torch.allclose(fused, parts, atol=1e-2 * float(parts.abs().max()))
    ffn = applied("lora_unet_layers_1_feed_forward_w1")
    assert ffn.shape == (10240, 3840)
    assert torch.allclose(ffn, trained("layers.1.feed_forward.w1"), atol=1e-2 * float(ffn.abs().max()))

    diffusers = load_file(str(write_diffusers(tmp_path / "lora_diffusers.safetensors", states, mods.config_by_role,
                                              "zimage")))
    names = {k.removeprefix("transformer.").rsplit(".lora_", 1)[0] for k in diffusers}
    real = {n for n, _ in transformer.named_modules()}
    assert names <= real and len(names) == 7 * len(BLOCKS)
