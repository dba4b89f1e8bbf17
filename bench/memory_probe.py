"""Measured peak memory of one LoRA training step on the real SD1.5 / SDXL / SD3.5 architectures (full width, random
weights from the shipped configs, no download), counted at the allocator.

``torch.profiler.profile(profile_memory=True)`` records every CPU allocator allocation and free as a ``[memory]``
event; summed in time order they give the live bytes the step added, and their maximum is its peak. A
``TorchDispatchMode`` that tallies the storages each op creates (until they expire) gives the same figure on a
two-layer MLP (36.02 MiB both, the gradients' 32 MiB plus one 4 MiB activation), so the counting is checked;
the profiler is used because it also sees allocations made inside kernels.

What is measured is the *transient* peak of a forward + backward with LoRA attached (first step, gradients
allocated during backward): the activations saved for backward, the workspaces, and the LoRA gradients. The
weights, LoRA params and optimizer state exist before the step and are counted from their tensors.
"""

from __future__ import annotations

import contextlib
import json
import types

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from trainer.models.base import MODEL_CONFIG_DIR

# Z-Image's caption tokens in a measured step: a long caption's (about 90 words), chat template included; the
# pipeline's cap is 512, a short tag list is ~30
ZIMAGE_TEXT_TOKENS = 128


class TensorTally(TorchDispatchMode):
    """Live bytes of the tensor storages that ops create, until each expires; its peak."""

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, tuple[StorageWeakRef, int]] = {}
        self.total = self.peak = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {a.untyped_storage()._cdata for a in tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)}
        for t in tree_leaves(out):  # a view or an in-place result shares an input's storage: not new
            st = t.untyped_storage() if isinstance(t, torch.Tensor) else None
            if st is not None and st._cdata not in inputs and st._cdata not in self.live:
                self.live[st._cdata] = (StorageWeakRef(st), st.nbytes())
                self.total += st.nbytes()
        self.peak = max(self.peak, self.total)
        for key in [k for k, (ref, _) in self.live.items() if ref.expired()]:
            self.total -= self.live.pop(key)[1]
        return out


def peaks(fn) -> dict[str, int]:
    """Bytes above the start during ``fn()``: ``allocator`` the CPU allocator's highest live total (every
    allocation, kernels' scratch included), ``tensors`` the highest live total of tensors ops returned."""
    from torch.profiler import ProfilerActivity, profile

    tally = TensorTally()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof, tally:
        fn()
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events() if e.name() == "[memory]")
    live = peak = 0
    for _, n in events:
        live += n
        peak = max(peak, live)
    return {"allocator": peak, "tensors": tally.peak}


def build_unet(family: str, dtype: torch.dtype, configs: str | None = None, **overrides):
    """The family's real denoiser (SD1.5/SDXL's UNet, SD3.5's transformer) from its shipped config (the folder
    ``configs``, by default the family's own), with ``overrides`` on it, random weights, built directly in ``dtype``
    (SDXL's 2.6 G params would need 10 GB in fp32 first)."""
    from trainer.models.family import family as model_family

    adapter = model_family(family)
    config_dir = MODEL_CONFIG_DIR / (configs or family) / adapter.denoiser_component
    config = {**json.loads((config_dir / "config.json").read_text()), **overrides}
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        torch.manual_seed(0)
        return adapter.denoiser_from_config(config)
    finally:
        torch.set_default_dtype(previous)


def attach(unet, family: str, rank: int = 16, targets: str = "attn"):
    from trainer.config.schema import LoraConfig
    from trainer.models.family import family as model_family
    from trainer.models.lora import attach_lora

    role = model_family(family).denoiser_component
    return attach_lora(types.SimpleNamespace(**{role: unet}), LoraConfig(rank=rank, alpha=rank, targets=targets),
                       family, seed=0)


def step_inputs(unet, family: str, resolution: int, batch: int) -> tuple[torch.Tensor, dict, torch.Tensor]:
    """(noisy latents, the denoiser's other inputs, a target) as the family's training step gives them."""
    gen = torch.Generator().manual_seed(0)
    weight_dtype = next(p for p in unet.parameters() if not p.requires_grad).dtype
    channels = int(unet.config.in_channels)
    side = resolution // 8
    latents = torch.randn(batch, channels, side, side, generator=gen).to(weight_dtype)
    target = torch.randn(batch, channels, side, side, generator=gen)
    if family == "flux":  # the latents in 2x2 patches of 64 channels, T5's 512 tokens, their ids, a sigma, guidance 1
        from diffusers import FluxPipeline

        from trainer.models.families.flux import T5_TOKENS

        tokens, cfg = (side // 2) ** 2, unet.config
        latents = torch.randn(batch, tokens, channels, generator=gen).to(weight_dtype)
        target = torch.randn(batch, tokens, channels, generator=gen)
        kwargs = {"encoder_hidden_states": torch.randn(batch, T5_TOKENS, cfg.joint_attention_dim, generator=gen),
                  "pooled_projections": torch.randn(batch, cfg.pooled_projection_dim, generator=gen),
                  "timestep": torch.rand(batch, generator=gen),
                  "img_ids": FluxPipeline._prepare_latent_image_ids(batch, side // 2, side // 2, "cpu", torch.float32),
                  "txt_ids": torch.zeros(T5_TOKENS, 3),
                  "guidance": torch.ones(batch) if cfg.guidance_embeds else None}
        return latents, kwargs, target
    if family == "zimage":  # ZIMAGE_TEXT_TOKENS of Qwen3's states (a long caption's), their mask, a sigma × 1000
        hidden = torch.randn(batch, ZIMAGE_TEXT_TOKENS, unet.config.cap_feat_dim, generator=gen)
        kwargs = {"hidden": hidden, "pooled": torch.ones(batch, ZIMAGE_TEXT_TOKENS),
                  "timesteps": torch.rand(batch, generator=gen) * 1000}
        return latents, kwargs, target
    if family == "sd3":  # CLIP-L + CLIP-G's 77 tokens and T5's 256, the pooled CLIP embeddings, a sigma × 1000
        from trainer.models.families.sd3 import T5_TOKENS

        kwargs = {"encoder_hidden_states": torch.randn(batch, 77 + T5_TOKENS, unet.config.joint_attention_dim,
                                                       generator=gen),
                  "pooled_projections": torch.randn(batch, unet.config.pooled_projection_dim, generator=gen),
                  "timestep": torch.rand(batch, generator=gen) * 1000}
        return latents, kwargs, target
    kwargs = {"timestep": torch.randint(0, 1000, (batch,), generator=gen),
              "encoder_hidden_states": torch.randn(batch, 77, unet.config.cross_attention_dim, generator=gen)}
    if family == "sdxl":
        kwargs["added_cond_kwargs"] = {
            "text_embeds": torch.randn(batch, 1280, generator=gen),
            "time_ids": torch.tensor([[resolution, resolution, 0, 0, resolution, resolution]] * batch).float()}
    return latents, kwargs, target


def step_peak(unet, family: str, resolution: int, batch: int, precision: str, checkpointing: bool) -> dict[str, int]:
    """Transient peak bytes of one forward + backward, as the trainer's step runs it (autocast in the half
    precisions, frozen weights already in their dtype, the loss in fp32), gradients cleared first."""
    for p in unet.parameters():
        p.grad = None
    unet.train()
    unet.enable_gradient_checkpointing() if checkpointing else unet.disable_gradient_checkpointing()
    latents, kwargs, target = step_inputs(unet, family, resolution, batch)
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext())

    def run():
        with autocast:
            if family == "zimage":  # a list-of-pictures transformer: through the family's own forward pass
                from trainer.models.family import family as model_family

                pred = model_family(family).predict(unet, latents, kwargs["timesteps"], kwargs["hidden"],
                                                    kwargs["pooled"], [(resolution, resolution)] * batch)
            else:
                pred = unet(latents, return_dict=False, **kwargs)[0]
        loss = torch.nn.functional.mse_loss(pred.float(), target)
        loss.backward()

    return peaks(run)


def vae_encode_peak(vae, resolution: int, batch: int = 1) -> dict[str, int]:
    """Transient peak bytes of the VAE encoding a batch of pictures without gradients (latents not cached)."""
    pixels = torch.randn(batch, 3, resolution, resolution, dtype=next(vae.parameters()).dtype)

    def run():
        with torch.no_grad():
            vae.encode(pixels).latent_dist.sample()

    return peaks(run)


def text_encoder_step_peak(encoder, batch: int, precision: str) -> dict[str, int]:
    """Transient peak bytes of a text encoder's forward + backward with LoRA on it (77 tokens a caption)."""
    ids = torch.randint(0, 49407, (batch, 77), generator=torch.Generator().manual_seed(0))
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext())
    encoder.train()

    def run():
        with autocast:
            out = encoder(ids, output_hidden_states=True)
        out.hidden_states[-2].float().square().mean().backward()

    return peaks(run)
