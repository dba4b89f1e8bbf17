"""Measured peak memory of one LoRA training step on the real SD1.5 / SDXL architectures (full width, random
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
import types

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from trainer.models.base import MODEL_CONFIG_DIR


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


def build_unet(family: str, dtype: torch.dtype):
    """The family's real UNet from its shipped config, random weights, built directly in ``dtype`` (SDXL's
    2.6 G params would need 10 GB in fp32 first)."""
    from diffusers import UNet2DConditionModel

    config = UNet2DConditionModel.load_config(str(MODEL_CONFIG_DIR / family / "unet"))
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        torch.manual_seed(0)
        return UNet2DConditionModel.from_config(config)
    finally:
        torch.set_default_dtype(previous)


def attach(unet, family: str, rank: int = 16, targets: str = "attn"):
    from trainer.config.schema import LoraConfig
    from trainer.models.lora import attach_lora

    return attach_lora(types.SimpleNamespace(unet=unet), LoraConfig(rank=rank, alpha=rank, targets=targets), family,
                       seed=0)


def step_peak(unet, family: str, resolution: int, batch: int, precision: str, checkpointing: bool) -> dict[str, int]:
    """Transient peak bytes of one forward + backward, as the trainer's step runs it (autocast in the half
    precisions, frozen weights already in their dtype, the loss in fp32), gradients cleared first."""
    for p in unet.parameters():
        p.grad = None
    unet.train()
    unet.enable_gradient_checkpointing() if checkpointing else unet.disable_gradient_checkpointing()
    side = resolution // 8
    gen = torch.Generator().manual_seed(0)
    weight_dtype = next(p for p in unet.parameters() if not p.requires_grad).dtype
    latents = torch.randn(batch, 4, side, side, generator=gen).to(weight_dtype)
    hidden = torch.randn(batch, 77, unet.config.cross_attention_dim, generator=gen)
    timesteps = torch.randint(0, 1000, (batch,), generator=gen)
    added = None
    if family == "sdxl":
        added = {"text_embeds": torch.randn(batch, 1280, generator=gen),
                 "time_ids": torch.tensor([[resolution, resolution, 0, 0, resolution, resolution]] * batch).float()}
    target = torch.randn(batch, 4, side, side, generator=gen)
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext())

    def run():
        with autocast:
            pred = unet(latents, timesteps, hidden, added_cond_kwargs=added).sample
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
