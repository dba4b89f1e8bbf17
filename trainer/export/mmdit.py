"""SD3.5's LoRA in sd-scripts' layout: the keys ``sd3_train_network.py`` writes and ComfyUI, Forge and SwarmUI
load. They name the MMDiT's modules as the original checkpoint does (``joint_blocks.N.x_block.attn.qkv``), where
diffusers names them ``transformer_blocks.N.attn.to_q`` and so on; the original fuses each attention's query,
key and value into one ``qkv`` layer.

A LoRA trained on the three separate layers is written as one LoRA on the fused layer, exactly: its ``lora_down``
is the parts' down matrices stacked (``n·r × in``), its ``lora_up`` places each part's up matrix in that part's
rows and columns (``3·out × n·r``, zeros elsewhere), and its alpha is ``n·α`` so that ``alpha / rank`` stays
``α / r``. A part that was not trained (``lora.targets = "cross_kv"`` trains the text stream's keys and values
only) is zero in its rows.
"""

from __future__ import annotations

import re

import torch

# diffusers' module (under transformer_blocks.N.) → (the original module under joint_blocks.N., its part of qkv)
MMDIT_MODULES: dict[str, tuple[str, int | None]] = {
    "attn.to_q": ("x_block.attn.qkv", 0),
    "attn.to_k": ("x_block.attn.qkv", 1),
    "attn.to_v": ("x_block.attn.qkv", 2),
    "attn.to_out.0": ("x_block.attn.proj", None),
    "attn.add_q_proj": ("context_block.attn.qkv", 0),
    "attn.add_k_proj": ("context_block.attn.qkv", 1),
    "attn.add_v_proj": ("context_block.attn.qkv", 2),
    "attn.to_add_out": ("context_block.attn.proj", None),
    "attn2.to_q": ("x_block.attn2.qkv", 0),
    "attn2.to_k": ("x_block.attn2.qkv", 1),
    "attn2.to_v": ("x_block.attn2.qkv", 2),
    "attn2.to_out.0": ("x_block.attn2.proj", None),
    "ff.net.0.proj": ("x_block.mlp.fc1", None),
    "ff.net.2": ("x_block.mlp.fc2", None),
    "ff_context.net.0.proj": ("context_block.mlp.fc1", None),
    "ff_context.net.2": ("context_block.mlp.fc2", None),
}


def original_module(module: str) -> tuple[str, int | None]:
    """diffusers ``transformer_blocks.3.attn.add_k_proj`` → (``joint_blocks.3.context_block.attn.qkv``, 1)."""
    m = re.fullmatch(r"transformer_blocks\.(\d+)\.(.+)", module)
    if not m or m[2] not in MMDIT_MODULES:
        raise ValueError(f"no original-layout name for SD3 transformer module {module!r}")
    name, part = MMDIT_MODULES[m[2]]
    return f"joint_blocks.{m[1]}.{name}", part


def kohya_name(original: str) -> str:
    return "lora_unet_" + original.replace(".", "_")


def mmdit_state_dict(peft_state: dict[str, torch.Tensor], rank_alpha, dtype=torch.float16) -> dict[str, torch.Tensor]:
    """sd-scripts' tensors of the transformer's LoRA (peft's state dict, keys ``<module>.lora_A.weight``);
    ``rank_alpha(module)`` gives the rank and alpha each module trained with."""
    return fused_state_dict(peft_state, rank_alpha, lambda module: (*original_module(module), None), dtype)


def fused_state_dict(peft_state: dict[str, torch.Tensor], rank_alpha, locate, dtype=torch.float16
                     ) -> dict[str, torch.Tensor]:
    """sd-scripts' tensors of a LoRA whose original layout fuses some of diffusers' layers (q, k and v; Flux's single
    blocks also the MLP's input): ``locate(module)`` gives (the original module, the module's part of it or None,
    the output widths of all the fused layer's parts in order, or None when they are equal: three of the trained
    parts' width). Each fused layer is one LoRA of the parts' downs stacked and their ups block-diagonal, an untrained
    part zeros, at ``n × α`` for ``n`` parts so that alpha / rank stays ``α / r``."""
    modules: dict[str, dict[str, torch.Tensor]] = {}
    for key, tensor in peft_state.items():
        m = re.match(r"(.*)\.lora_([AB])\.weight$", key)
        if m:
            modules.setdefault(m[1], {})[m[2]] = tensor.float()
    fused: dict[str, dict[int, tuple[torch.Tensor, torch.Tensor, int, float]]] = {}
    widths_of: dict[str, list[int] | None] = {}
    out: dict[str, torch.Tensor] = {}
    for module, ab in sorted(modules.items()):
        original, part, widths = locate(module)
        rank, alpha = rank_alpha(module)
        if ab["A"].shape[0] != rank:
            raise ValueError(f"{module}: lora_A has rank {ab['A'].shape[0]}, its adapter config gives {rank}")
        if part is None:
            name = kohya_name(original)
            out[f"{name}.lora_down.weight"] = ab["A"].to(dtype)
            out[f"{name}.lora_up.weight"] = ab["B"].to(dtype)
            out[f"{name}.alpha"] = torch.tensor(alpha, dtype=dtype)
        else:
            fused.setdefault(original, {})[part] = (ab["A"], ab["B"], rank, alpha)
            widths_of[original] = widths
    for original, parts in fused.items():
        ranks = {r for _, _, r, _ in parts.values()}
        alphas = {a for _, _, _, a in parts.values()}
        if len(ranks) != 1 or len(alphas) != 1:
            raise ValueError(f"{original}: its fused parts trained with different ranks or alphas; they cannot be fused")
        rank, alpha = ranks.pop(), alphas.pop()
        order = sorted(parts)
        widths = widths_of[original] or [next(iter(parts.values()))[1].shape[0]] * 3
        starts = [sum(widths[:p]) for p in range(len(widths))]
        down = torch.cat([parts[p][0] for p in order])
        up = torch.zeros(sum(widths), rank * len(order))
        for column, p in enumerate(order):
            if parts[p][1].shape[0] != widths[p]:
                raise ValueError(f"{original}: part {p} is {parts[p][1].shape[0]} wide, the layer's part {widths[p]}")
            up[starts[p]:starts[p] + widths[p], column * rank:(column + 1) * rank] = parts[p][1]
        name = kohya_name(original)
        out[f"{name}.lora_down.weight"] = down.to(dtype)
        out[f"{name}.lora_up.weight"] = up.to(dtype)
        out[f"{name}.alpha"] = torch.tensor(alpha * len(order), dtype=dtype)
    return out
