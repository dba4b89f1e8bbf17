"""SD1.5's real UNet (full widths, random weights, 8×8 latents): convolution LoRA with ``attn_ff`` trains, and the
kohya file applies as AUTOMATIC1111/Forge/ComfyUI apply it, each module at its own ``alpha / rank``.

SD1.5's ``proj_in`` / ``proj_out`` and the resnets' ``conv_shortcut`` are 1×1 convolutions: they train, and must
be exported, at the network's rank and alpha (sd-scripts' rule), not the 3×3 convolutions' conv_rank/conv_alpha.
About 1.5 minutes on 2 CPU cores and ~4.5 GB of memory (one fp32 UNet; the base weights are its frozen ones).
"""

from __future__ import annotations

import json
import time
import types

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file

from tests.helpers import tiny_config, write_toy_dataset
from trainer.export.lora_files import write_diffusers, write_kohya
from trainer.models.base import MODEL_CONFIG_DIR
from trainer.models.lora import attach_lora
from trainer.plan.steps import plan_from_config

pytestmark = pytest.mark.slow

RANK, ALPHA, CONV_RANK, CONV_ALPHA = 4, 2.0, 2, 8.0  # alpha != rank, conv_rank != rank, conv_alpha != alpha


def _unwrap(unet: torch.nn.Module, names: list[str]) -> None:
    """Put each LoRA layer's base layer back in its place: the plain UNet with the (frozen) base weights."""
    for name in names:
        parent, _, child = name.rpartition(".")
        setattr(unet.get_submodule(parent), child, unet.get_submodule(name).get_base_layer())


def _a1111_delta(up: torch.Tensor, down: torch.Tensor, alpha: float) -> torch.Tensor:
    """AUTOMATIC1111's weight delta: up · down · alpha / rank, rank = lora_down's first dim; a convolution's
    ``lora_up`` is (out, r, 1, 1) and ``lora_down`` (r, in, k, k)."""
    scale = alpha / down.shape[0]
    if down.dim() == 2:
        return up @ down * scale
    return torch.einsum("or,rikl->oikl", up[:, :, 0, 0], down) * scale


def test_full_width_sd15_conv_lora_kohya_file_applied_by_the_a1111_formula_gives_the_trained_output(tmp_path):
    from diffusers import UNet2DConditionModel
    from peft import LoraConfig, inject_adapter_in_model
    from peft.tuners.lora import LoraLayer

    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=2), tmp_path / "out", {
        "lora.rank": RANK, "lora.alpha": ALPHA, "lora.targets": "attn_ff",
        "lora.conv_rank": CONV_RANK, "lora.conv_alpha": CONV_ALPHA})
    unet_config = UNet2DConditionModel.load_config(str(MODEL_CONFIG_DIR / "sd15" / "unet"))
    torch.manual_seed(0)
    unet = UNet2DConditionModel.from_config(unet_config)  # ~860 M params, fp32
    assert list(unet.config.block_out_channels) == [320, 640, 1280, 1280] and not unet.config.use_linear_projection
    base_fingerprint = torch.stack([p.sum(dtype=torch.float64) for p in unet.parameters()])

    mods = attach_lora(types.SimpleNamespace(unet=unet), cfg.lora, "sd15", seed=0)
    gen = torch.Generator().manual_seed(1)
    latents, text = torch.randn(2, 1, 4, 8, 8, generator=gen), torch.randn(2, 1, 77, 768, generator=gen)
    timesteps = torch.tensor([[300], [700]])
    x, t, h = torch.randn(1, 4, 8, 8, generator=gen), torch.tensor([500]), torch.randn(1, 77, 768, generator=gen)

    optimizer = torch.optim.AdamW(mods.trainable("unet"), lr=1e-2)
    for step in range(2):
        noise = torch.randn(latents[step].shape, generator=gen)
        loss = torch.nn.functional.mse_loss(unet(latents[step], timesteps[step], text[step]).sample, noise)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    with torch.no_grad():
        for p in mods.trainable("unet"):  # the weights as the fp16 file holds them, so the comparison can be tight
            p.copy_(p.half().float())
        trained_out = unet(x, t, h).sample

    layers = {n: m for n, m in unet.named_modules() if isinstance(m, LoraLayer)}
    trained = {n: (m.r["default"], m.lora_alpha["default"]) for n, m in layers.items()}
    kernel = {n: tuple(getattr(m.get_base_layer(), "kernel_size", ())) for n, m in layers.items()}
    assert all(m.lora_B["default"].weight.abs().sum() > 0 for m in layers.values())
    # every kind SD1.5 has: linear layers, 1×1 convolutions (proj_in/proj_out, conv_shortcut) and 3×3 ones
    assert {n.rsplit(".", 1)[-1] for n, k in kernel.items() if k == (1, 1)} == {"proj_in", "proj_out", "conv_shortcut"}
    assert {n.rsplit(".", 1)[-1] for n, k in kernel.items() if k == (3, 3)} == {"conv1", "conv2"}

    # the project's writers, on a real run context
    report, plan = plan_from_config(cfg)
    ctx = {"config": cfg, "plan": plan, "report": report, "family": "sd15", "unet_config": dict(unet.config),
           "epoch": 1, "step": 2, "started_at": time.time()}
    states = mods.adapter_state_dicts()
    kohya = write_kohya(tmp_path / "lora.safetensors", states, ctx, mods.config_by_role)
    rebuilt = write_kohya(tmp_path / "rebuilt.safetensors", states, ctx)  # adapter configs rebuilt from the config
    twin = write_diffusers(tmp_path / "lora_diffusers.safetensors", states, mods.config_by_role, "sd15")
    del states, optimizer, mods

    tensors = load_file(str(kohya))
    rebuilt_tensors = load_file(str(rebuilt))
    assert tensors.keys() == rebuilt_tensors.keys()
    assert all(torch.equal(tensors[k], rebuilt_tensors[k]) for k in tensors)
    with safe_open(str(kohya), "pt") as f:
        meta = f.metadata()
    assert (meta["ss_network_dim"], float(meta["ss_network_alpha"])) == (str(RANK), ALPHA)
    args = json.loads(meta["ss_network_args"])
    assert (args["conv_dim"], float(args["conv_alpha"])) == (str(CONV_RANK), CONV_ALPHA)

    # (a) each module's alpha in the file: what it trained with; by kind, sd-scripts' rule
    _unwrap(unet, list(layers))
    module_of = {"lora_unet_" + n.replace(".", "_"): n for n, _ in unet.named_modules() if n}
    assert len(module_of) == len([n for n, _ in unet.named_modules() if n])  # the '_' names are unambiguous
    in_file = {module_of[k.removesuffix(".alpha")]: float(v) for k, v in tensors.items() if k.endswith(".alpha")}
    assert in_file.keys() == trained.keys()
    for name, alpha in in_file.items():
        rank = tensors["lora_unet_" + name.replace(".", "_") + ".lora_down.weight"].shape[0]
        assert (rank, alpha) == trained[name], name
        expected = (CONV_RANK, CONV_ALPHA) if kernel[name] == (3, 3) else (RANK, ALPHA)
        assert (rank, alpha) == expected, name

    # the diffusers twin's adapter metadata gives peft the same rank and alpha per module
    with safe_open(str(twin), "pt") as f:
        twin_meta = json.loads(f.metadata()["lora_adapter_metadata"])
    unet_meta = {k.removeprefix("unet."): v for k, v in twin_meta.items() if k.startswith("unet.")}
    with torch.device("meta"):
        skeleton = UNet2DConditionModel.from_config(unet_config)
    inject_adapter_in_model(LoraConfig(**unet_meta), skeleton, adapter_name="default")
    assert {n: (m.r["default"], m.lora_alpha["default"]) for n, m in skeleton.named_modules()
            if isinstance(m, LoraLayer)} == trained

    # (b) the base weights (frozen, unchanged) plus the file's deltas, as A1111 applies them
    assert torch.equal(torch.stack([p.sum(dtype=torch.float64) for p in unet.parameters()]), base_fingerprint)
    with torch.no_grad():
        base_out = unet(x, t, h).sample
        for name in trained:
            key = "lora_unet_" + name.replace(".", "_")
            weight = unet.get_submodule(name).weight
            delta = _a1111_delta(tensors[f"{key}.lora_up.weight"].float(), tensors[f"{key}.lora_down.weight"].float(),
                                 float(tensors[f"{key}.alpha"]))
            weight.add_(delta.reshape(weight.shape))
        applied_out = unet(x, t, h).sample
    effect = (trained_out - base_out).abs().max().item()
    error = (applied_out - trained_out).abs().max().item()
    assert effect > 1e-2, effect  # the LoRA moves the output well beyond the tolerance below
    assert error < 1e-4 * max(1.0, trained_out.abs().max().item()), (error, effect)
