"""FLUX.1-dev's real transformer at full width (the shipped config: 3072 channels, 24 heads of 128, the guidance
embedding), cut to 2 double-stream and 2 single-stream blocks, random fp32 weights, 64 px and 16 text tokens: LoRA on
the attention and the MLPs trains through the family's own forward pass; the kohya file names exactly the modules
sd-scripts' Flux network has for those blocks (Black Forest Labs' names, q/k/v fused, the single blocks' q/k/v and MLP
input fused into linear1), each applying the trained change at its alpha / rank as ComfyUI and Forge apply it; and
diffusers' own converter of sd-scripts Flux files (FLUX.1's widths written into it) reads every one of them back onto
the diffusers module it came from. About 30 s on 2 CPU cores and ~5 GB of memory (1.3 B weights).
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
DOUBLE, SINGLE = 2, 2


def expected_sd_scripts_modules(double: int, single: int) -> set[str]:
    """sd-scripts' Flux LoRA module names for the ``attn_ff`` targets: every double block's picture (img) and text
    (txt) stream has attention qkv / proj and the MLP's two layers; every single block linear1 and linear2."""
    names = {f"double_blocks.{i}.{s}_{m}" for i in range(double) for s in ("img", "txt")
             for m in ("attn.qkv", "attn.proj", "mlp.0", "mlp.2")}
    names |= {f"single_blocks.{i}.{m}" for i in range(single) for m in ("linear1", "linear2")}
    return {"lora_unet_" + n.replace(".", "_") for n in names}


def test_full_width_flux_lora_trains_and_exports_sd_scripts_names(tmp_path):
    from diffusers import FluxPipeline, FluxTransformer2DModel

    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=2), tmp_path / "out", {
        "lora.rank": RANK, "lora.alpha": ALPHA, "lora.targets": "attn_ff", "model.family": "flux"})
    config = json.loads((MODEL_CONFIG_DIR / "flux" / "transformer" / "config.json").read_text())
    assert (config["num_layers"], config["num_single_layers"], config["num_attention_heads"] * config["attention_head_dim"]) \
        == (19, 38, 3072)
    transformer = random_full_width(FluxTransformer2DModel,
                                    {**config, "num_layers": DOUBLE, "num_single_layers": SINGLE})
    flux = family("flux")
    mods = attach_lora(types.SimpleNamespace(transformer=transformer), cfg.lora, "flux", seed=0)
    gen = torch.Generator().manual_seed(1)
    hidden, pooled = torch.randn(1, 16, 4096, generator=gen), torch.randn(1, 768, generator=gen)
    loss = train_full_width(flux, transformer, mods,
                            {"num_train_timesteps": 1000, "shift": 3.0, "use_dynamic_shifting": True}, hidden, pooled)
    assert torch.isfinite(loss)

    kohya, modules = exported_kohya(tmp_path / "lora.safetensors", cfg, mods, "flux", transformer)
    assert modules == expected_sd_scripts_modules(DOUBLE, SINGLE)
    states = mods.adapter_state_dicts()
    # the shapes of the original checkpoint's layers: qkv 3 × 3072, linear1 3 × 3072 + the MLP's 12288, linear2 back
    # from 3072 + 12288
    assert kohya["lora_unet_double_blocks_0_txt_attn_qkv.lora_up.weight"].shape[0] == 3 * 3072
    assert kohya["lora_unet_single_blocks_1_linear1.lora_up.weight"].shape[0] == 3 * 3072 + 12288
    assert kohya["lora_unet_single_blocks_1_linear2.lora_down.weight"].shape[1] == 3072 + 12288

    def applied(name: str) -> torch.Tensor:
        return kohya_delta(kohya, name)

    sd = states["transformer"]

    def trained(module: str) -> torch.Tensor:
        return peft_delta(sd, module, ALPHA, RANK)

    for i in range(SINGLE):
        fused = applied(f"lora_unet_single_blocks_{i}_linear1")
        parts = torch.cat([trained(f"single_transformer_blocks.{i}.{p}")
                           for p in ("attn.to_q", "attn.to_k", "attn.to_v", "proj_mlp")])
        assert torch.allclose(fused, parts, atol=1e-2 * float(parts.abs().max()))
    img = applied("lora_unet_double_blocks_1_img_attn_qkv")
    assert torch.allclose(img, torch.cat([trained(f"transformer_blocks.1.attn.{p}") for p in ("to_q", "to_k", "to_v")]),
                          atol=1e-2 * float(img.abs().max()))

    # diffusers' converter of sd-scripts Flux files: every trained module back, with the change it trained
    converted = FluxPipeline.lora_state_dict({k: v.float() for k, v in kohya.items()})
    converted = converted[0] if isinstance(converted, tuple) else converted
    assert {k.rsplit(".", 2)[0] for k in converted} == {f"transformer.{k.rsplit('.', 2)[0]}" for k in sd}
    for module in sorted({k.rsplit(".", 2)[0] for k in sd}):
        theirs = converted[f"transformer.{module}.lora_B.weight"] @ converted[f"transformer.{module}.lora_A.weight"]
        ours = trained(module)
        assert torch.allclose(theirs, ours, atol=1e-2 * float(ours.abs().max())), module
