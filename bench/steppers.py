"""The two training steps the benchmarks compare, each a zero-argument callable doing one optimizer step.

- :func:`ours`: our :class:`trainer.train.loop.Trainer` as a run builds it (its config decides caching, the guard,
  precision, device), stepping with ``Trainer.optimizer_step`` over the epoch's batches.
- :func:`reference`: the training step of diffusers' ``train_text_to_image_lora.py`` re-implemented from its
  documented behaviour: images loaded and transformed every step (its ``dataloader_num_workers`` defaults
  to 0), frozen weights in the mixed-precision dtype, VAE encode (a latent sample) and text encode every step,
  the UNet under autocast with fp32 LoRA params, AdamW, clipping that works (a list of params is passed), and
  the loss read back for logging.
"""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F


def config(data, out, base: str, resolution: int, overrides: dict | None = None):
    """The benchmarks' run config: the tests' fast config on ``base`` at ``resolution`` (square buckets from half
    to twice it), a run too long to end, and caption tags in order, so a frozen text encoder's embeddings can
    be cached as in a usual run; ``overrides`` (dotted keys) on top."""
    from tests.helpers import tiny_config

    return tiny_config(data, out, {
        "train.max_steps": 100000, "optim.lr": 1e-4, "dataset.shuffle_tags": False,
        "dataset.resolution": resolution, "dataset.max_bucket_side": 2 * resolution,
        "dataset.min_bucket_side": resolution // 2, **(overrides or {}),
    }, base=base)


def ours(cfg):
    """``(step, unet)``: ``step(size=None)`` is one optimizer step of our trainer on the next batch of ``size``
    (default ``train.batch_size``); ``unet`` is the trainer's, for switching gradient checkpointing."""
    from trainer.data.batches import epoch_batches
    from trainer.train.commands import Commands
    from trainer.train.distributed import Dist
    from trainer.train.loop import Hooks, Trainer

    trainer = Trainer(cfg, None, Commands(), Dist(), Hooks())
    trainer.prepare_run_folder(None, None)
    trainer.setup()
    state = {"epoch": 0, "batches": [], "i": 0, "size": cfg.train.batch_size}

    def step(size: int | None = None):
        size = size or cfg.train.batch_size
        if state["i"] >= len(state["batches"]) or size != state["size"]:
            state["batches"] = epoch_batches(trainer.feeder.samples, size, 0, state["epoch"])
            state["size"] = size
            state["epoch"] += 1
            state["i"] = 0
        group = [state["batches"][state["i"]]]
        state["i"] += 1
        trainer.optimizer_step(group, state["epoch"])

    return step, trainer.models.denoiser


def reference(cfg, device: torch.device | None = None, dtype: torch.dtype = torch.float32):
    """``(step, unet)``: the reference recipe's step on ``cfg``'s model and data, in ``dtype`` on ``device``;
    ``step(size=None)`` takes a batch of ``size`` (default ``train.batch_size``)."""
    from diffusers import DDPMScheduler
    from peft import LoraConfig, inject_adapter_in_model

    from trainer.config.schema import ModelConfig
    from trainer.data.batches import image_tensor
    from trainer.data.scan import scan_dataset
    from trainer.models.base import load_pipeline

    device = device or torch.device("cpu")
    report = scan_dataset(cfg.dataset)
    items = [(it.path, it.caption, tuple(it.bucket)) for it in report.items for _ in range(it.repeats)]
    pipe, _ = load_pipeline(ModelConfig(base=cfg.model.base), dtype)
    unet, vae, te, tok = pipe.unet, pipe.vae, pipe.text_encoder, pipe.tokenizer
    for m in (unet, vae, te):
        m.requires_grad_(False)
        m.to(device, dtype=dtype)
    torch.manual_seed(cfg.train.seed)
    inject_adapter_in_model(LoraConfig(r=cfg.lora.rank, lora_alpha=cfg.lora.alpha, init_lora_weights="gaussian",
                                       target_modules=["to_q", "to_k", "to_v", "to_out.0"]), unet)
    params = [p for p in unet.parameters() if p.requires_grad]
    for p in params:  # the script's cast_training_params: trainable LoRA weights in fp32
        p.data = p.data.float()
    optimizer = torch.optim.AdamW(params, lr=cfg.optim.lr, betas=(0.9, 0.999), weight_decay=1e-2, eps=1e-8)
    noise_scheduler = DDPMScheduler.from_config(pipe.scheduler.config)
    # accelerate wraps the prepared UNet's forward in autocast for bf16/fp16; the VAE and text encoder run plain
    autocast = torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32)
    rng = random.Random(0)
    unet.train()

    def step(size: int | None = None):
        batch = rng.sample(items, size or cfg.train.batch_size)
        pixels = torch.stack([image_tensor(p, b) for p, _, b in batch])  # the script's per-step transforms
        ids = tok([c for _, c, _ in batch], padding="max_length", max_length=tok.model_max_length,
                  truncation=True, return_tensors="pt").input_ids
        pixels, ids = pixels.to(device, dtype=dtype), ids.to(device)
        latents = vae.encode(pixels).latent_dist.sample() * vae.config.scaling_factor
        noise = torch.randn_like(latents)
        timesteps = torch.randint(0, noise_scheduler.config.num_train_timesteps, (latents.shape[0],),
                                  device=device).long()
        noisy = noise_scheduler.add_noise(latents, noise, timesteps)
        hidden = te(ids, return_dict=False)[0]
        with autocast:
            pred = unet(noisy, timesteps, hidden, return_dict=False)[0]
        loss = F.mse_loss(pred.float(), noise.float(), reduction="mean")
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.optim.max_grad_norm)
        optimizer.step()
        optimizer.zero_grad()
        loss.detach().item()  # the script logs the loss every step

    return step, unet
