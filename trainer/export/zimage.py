"""Z-Image's LoRA in the layout ComfyUI loads: ``lora_unet_`` + the original (ComfyUI / Lumina 2) module name, dots
as underscores. ComfyUI maps a ``lora_unet_X`` key onto its model's ``diffusion_model.X.weight`` (comfy/lora.py,
``model_lora_keys_unet``), and its Z-Image model (comfy/ldm/lumina) fuses each attention's query, key and value into
one ``attention.qkv`` layer and calls the output ``attention.out``, where diffusers has ``attention.to_q`` … and
``attention.to_out.0`` (diffusers' own single-file converter, ``convert_z_image_transformer_checkpoint_to_diffusers``,
splits ``qkv`` in three equal parts and renames ``out``). The feed forward (``feed_forward.w1``/``w2``/``w3``) and the
blocks (``layers.N``, ``noise_refiner.N``, ``context_refiner.N``) keep their names.

q, k and v trained apart are written as one LoRA on ``qkv`` exactly (trainer/export/mmdit.py's fusion: down matrices
stacked, each up matrix in its part's rows, alpha times the parts): the layout musubi-tuner's
``convert_z_image_lora_to_comfy.py`` writes for ComfyUI from its own (``lora_unet_layers_0_attention_to_q``) one.
"""

from __future__ import annotations

import re

import torch

from trainer.export.mmdit import fused_state_dict

# diffusers' module inside a block → (ComfyUI's module inside that block, its part of qkv)
ZIMAGE_MODULES: dict[str, tuple[str, int | None]] = {
    "attention.to_q": ("attention.qkv", 0),
    "attention.to_k": ("attention.qkv", 1),
    "attention.to_v": ("attention.qkv", 2),
    "attention.to_out.0": ("attention.out", None),
    "feed_forward.w1": ("feed_forward.w1", None),
    "feed_forward.w2": ("feed_forward.w2", None),
    "feed_forward.w3": ("feed_forward.w3", None),
    "adaLN_modulation.0": ("adaLN_modulation.0", None),
}


def original_module(module: str) -> tuple[str, int | None]:
    """diffusers ``layers.3.attention.to_k`` → (``layers.3.attention.qkv``, 1)."""
    m = re.fullmatch(r"((?:layers|noise_refiner|context_refiner)\.\d+)\.(.+)", module)
    if not m or m[2] not in ZIMAGE_MODULES:
        raise ValueError(f"no ComfyUI name for Z-Image transformer module {module!r}")
    name, part = ZIMAGE_MODULES[m[2]]
    return f"{m[1]}.{name}", part


def zimage_state_dict(peft_state: dict[str, torch.Tensor], rank_alpha, dtype=torch.float16) -> dict[str, torch.Tensor]:
    """ComfyUI's tensors of the transformer's LoRA (peft's state dict); ``rank_alpha(module)`` gives each module's
    rank and alpha."""
    return fused_state_dict(peft_state, rank_alpha, lambda module: (*original_module(module), None), dtype)
