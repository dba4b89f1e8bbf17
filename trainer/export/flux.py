"""Flux.1's LoRA in sd-scripts' layout: the keys ``flux_train_network.py`` (``networks.lora_flux``) writes and ComfyUI
and Forge load, which diffusers' ``FluxPipeline.load_lora_weights`` also reads (its ``_convert_kohya_flux_lora_to_
diffusers``). They name the transformer's modules as Black Forest Labs' checkpoint does:

- a double-stream block ``double_blocks.N``: ``img_attn.qkv`` (diffusers' ``attn.to_q``, ``to_k``, ``to_v`` fused),
  ``img_attn.proj`` (``attn.to_out.0``), ``img_mlp.0`` / ``img_mlp.2`` (``ff.net.0.proj`` / ``ff.net.2``), and the
  text stream's ``txt_attn.qkv`` (``attn.add_q_proj``, ``add_k_proj``, ``add_v_proj``), ``txt_attn.proj``
  (``attn.to_add_out``), ``txt_mlp.0`` / ``txt_mlp.2`` (``ff_context.*``);
- a single-stream block ``single_blocks.N``: ``linear1`` (``attn.to_q``, ``to_k``, ``to_v`` and ``proj_mlp`` fused:
  three of the model's width and the MLP's four) and ``linear2`` (``proj_out``).

Fused layers are written exactly as SD3.5's (:func:`trainer.export.mmdit.fused_state_dict`): downs stacked, ups
block-diagonal, an untrained part (``proj_mlp`` when only the attention trains) zeros in its rows.
"""

from __future__ import annotations

import re

import torch

from trainer.export.mmdit import fused_state_dict

# diffusers' module under transformer_blocks.N. → (the original module under double_blocks.N., its part of qkv)
DOUBLE: dict[str, tuple[str, int | None]] = {
    "attn.to_q": ("img_attn.qkv", 0), "attn.to_k": ("img_attn.qkv", 1), "attn.to_v": ("img_attn.qkv", 2),
    "attn.to_out.0": ("img_attn.proj", None),
    "attn.add_q_proj": ("txt_attn.qkv", 0), "attn.add_k_proj": ("txt_attn.qkv", 1),
    "attn.add_v_proj": ("txt_attn.qkv", 2), "attn.to_add_out": ("txt_attn.proj", None),
    "ff.net.0.proj": ("img_mlp.0", None), "ff.net.2": ("img_mlp.2", None),
    "ff_context.net.0.proj": ("txt_mlp.0", None), "ff_context.net.2": ("txt_mlp.2", None),
}
# ... under single_transformer_blocks.N. → under single_blocks.N.
SINGLE: dict[str, tuple[str, int | None]] = {
    "attn.to_q": ("linear1", 0), "attn.to_k": ("linear1", 1), "attn.to_v": ("linear1", 2), "proj_mlp": ("linear1", 3),
    "proj_out": ("linear2", None),
}


def original_module(module: str, config) -> tuple[str, int | None, list[int] | None]:
    """diffusers ``single_transformer_blocks.3.proj_mlp`` → (``single_blocks.3.linear1``, 3, the widths of
    linear1's four parts) for the transformer of ``config``."""
    from trainer.models.families.flux import MLP_RATIO

    width = int(config["num_attention_heads"]) * int(config["attention_head_dim"])
    m = re.fullmatch(r"(transformer_blocks|single_transformer_blocks)\.(\d+)\.(.+)", module)
    table = DOUBLE if m and m[1] == "transformer_blocks" else SINGLE
    if not m or m[3] not in table:
        raise ValueError(f"no original-layout name for Flux transformer module {module!r}")
    name, part = table[m[3]]
    if m[1] == "transformer_blocks":
        return f"double_blocks.{m[2]}.{name}", part, None if part is None else [width] * 3
    return f"single_blocks.{m[2]}.{name}", part, None if part is None else [width] * 3 + [MLP_RATIO * width]


def flux_state_dict(peft_state: dict[str, torch.Tensor], rank_alpha, config, dtype=torch.float16
                    ) -> dict[str, torch.Tensor]:
    """sd-scripts' tensors of the Flux transformer's LoRA (peft's state dict); ``rank_alpha(module)`` gives the rank
    and alpha each module trained with, ``config`` is the transformer's."""
    return fused_state_dict(peft_state, rank_alpha, lambda module: original_module(module, config), dtype)
