"""Pretraining the demo base model from scratch on the demo world, on a CPU.

The demo base is Stable Diffusion 1.5 at toy scale; its parts are :mod:`trainer.demo.base_model`.

Three stages, each a function here; ``scripts/train_demo_base.py`` runs them with fixed settings:

1. :func:`train_vae`: the VAE learns to be a codec for flat-colour pictures. It sees world scenes and random
   "clutter" pictures of any colour, so that it can also encode colours and details the world never shows
   (the character's magenta and stripes): a LoRA can only teach what the VAE can draw.
2. :func:`encode_world`: world scenes are encoded once, as their latent distribution's mean (what the LoRA
   trainer's latent cache uses), and ``scaling_factor`` is set so that latents have unit variance.
3. :func:`train_diffusion`: the UNet and the text encoder learn together from nothing (epsilon prediction,
   min-SNR weighting, 10% empty captions for classifier-free guidance, constant lr); the EMA of the weights
   is kept. With a constant lr a run stopped at step N equals a run of N steps, so the step count can be
   chosen by measuring checkpoints.

The character never appears in stages 2-3, so the base model cannot draw it: that is what the LoRA teaches.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image, ImageDraw

from trainer.demo.base_model import IMAGE_SIZE, LATENT_CHANNELS, VAE_FACTOR, scheduler_config
from trainer.demo.world import SUPERSAMPLE, render_scene, sample_scene, varied_caption
from trainer.io import atomic_write_json

Log = Callable[[str], None]


@dataclass
class BaseSettings:
    """Every knob of the base-model training; the script's defaults are these."""

    seed: int = 0
    threads: int = 1
    # stage 1: the VAE
    vae_world_images: int = 3000
    vae_clutter_images: int = 1500
    vae_steps: int = 5000
    vae_batch: int = 8
    vae_crop: int = 32  # train on 32x32 crops (4x cheaper; the codec is local) ...
    vae_full_steps: int = 1000  # ... except the last steps, on whole pictures (norm statistics as in use)
    vae_lr: float = 1e-3
    vae_kl_weight: float = 1e-6  # just enough to keep latents bounded; the codec must stay sharp
    vae_anchor_weight: float = 1.0  # latent channels 0-2 ≈ the 2x2-pooled picture (see train_vae)
    # stage 2-3: the world and the diffusion model
    world_images: int = 20000
    steps: int = 4250
    batch: int = 32
    lr: float = 1e-3
    warmup_steps: int = 200
    weight_decay: float = 0.0  # nothing to regularise: unused token rows should stay as initialised
    caption_dropout: float = 0.1
    # Share of world captions in the canonical order; the rest have their tags in a random order, position and
    # size each left out with probability caption_tag_drop (world.varied_caption). The committed base: 1.0.
    caption_canonical_share: float = 1.0
    caption_tag_drop: float = 0.15
    min_snr_gamma: float = 5.0
    noise_offset: float = 0.1  # see train_diffusion
    ema_decay: float = 0.999
    checkpoint_every: int = 250

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


SETTINGS_STAMP = "settings.json"
# Settings a resumed run may change: the stop step, the CPU threads and how often it checkpoints. Any other
# change would mix two recipes in one model (the cached VAE, captions and latents follow the seed and caption
# settings; the checkpoint follows batch and lr), so a resume that asks for one is refused.
RESUMABLE_CHANGES = frozenset({"steps", "threads", "checkpoint_every"})


def stamp_settings(work: str | Path, s: BaseSettings, resume: bool) -> str | None:
    """Record ``s`` in ``work`` for a later ``--resume`` to compare; on a resume, compare first.

    Returns None when the run may go on, else a message naming each setting that differs from the one the
    work folder was made with (nothing is written then). A work folder from before the stamp existed is
    stamped with the current settings."""
    path = Path(work) / SETTINGS_STAMP
    now = s.to_json()
    if resume and path.is_file():
        before = json.loads(path.read_text())
        changed = sorted(k for k in now if k not in RESUMABLE_CHANGES and k in before and before[k] != now[k])
        if changed:
            diffs = ", ".join(f"{k} {before[k]!r} -> {now[k]!r}" for k in changed)
            return (f"--resume: {path.parent} was made with other settings ({diffs}); resume with the same ones, "
                    "or give a new --work to start afresh")
    atomic_write_json(path, now)
    return None


# ------------------------------------------------------------------------------------------- pictures


def clutter_image(rng: np.random.Generator, size: int = IMAGE_SIZE) -> Image.Image:
    """A random flat-colour picture: 1-4 ellipses, polygons, boxes or thin bands, any colours, any places."""
    big = size * SUPERSAMPLE
    img = Image.new("RGB", (big, big), tuple(int(c) for c in rng.integers(0, 256, 3)))
    draw = ImageDraw.Draw(img)
    for _ in range(int(rng.integers(1, 5))):
        rgb = tuple(int(c) for c in rng.integers(0, 256, 3))
        cx, cy = rng.uniform(0.1, 0.9, 2) * big
        w, h = rng.uniform(0.04, 0.5, 2) * big
        kind = int(rng.integers(4))
        if kind == 0:
            draw.ellipse([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], fill=rgb)
        elif kind == 1:
            angles = np.sort(rng.uniform(0, 2 * np.pi, int(rng.integers(3, 7))))
            draw.polygon([(cx + w / 2 * np.cos(a), cy + h / 2 * np.sin(a)) for a in angles], fill=rgb)
        elif kind == 2:
            draw.rectangle([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], fill=rgb)
        else:  # thin stripes, eyes and hat brims are a few pixels tall: the codec must keep such details
            t = rng.uniform(0.02, 0.07) * big
            draw.rectangle([cx - w / 2, cy - t / 2, cx + w / 2, cy + t / 2], fill=rgb)
    return img.resize((size, size), Image.Resampling.BOX)


def to_tensor(images: list[Image.Image] | np.ndarray) -> torch.Tensor:
    """PIL pictures or an NxHxWx3 uint8 array to a float (N, 3, H, W) tensor in [-1, 1]."""
    a = np.stack([np.asarray(i) for i in images]) if isinstance(images, list) else images
    return torch.from_numpy(a).permute(0, 3, 1, 2).float() / 127.5 - 1.0


def to_images(x: torch.Tensor) -> list[Image.Image]:
    a = ((x.clamp(-1, 1) + 1) * 127.5).round().byte().permute(0, 2, 3, 1).cpu().numpy()
    return [Image.fromarray(i) for i in a]


def world_scenes(n: int, seed: int, s: BaseSettings | None = None) -> tuple[np.ndarray, list[str], list[Any]]:
    """``n`` jittered world scenes: (NxHxWx3 uint8 pictures, captions, scenes). The captions vary in tag order
    as settings ``s`` say (``world.varied_caption``); the defaults keep them all canonical."""
    s = s or BaseSettings()
    rng = np.random.default_rng(seed)
    scenes = [sample_scene(rng) for _ in range(n)]
    pixels = np.stack([np.asarray(render_scene(sc, IMAGE_SIZE, rng)) for sc in scenes])
    crng = np.random.default_rng([seed, 1])  # its own stream: the pictures stay those of the seed
    caps = [varied_caption(sc, crng, s.caption_canonical_share, s.caption_tag_drop) for sc in scenes]
    return pixels, caps, scenes


def _lr_at(step: int, total: int, peak: float, warmup: int) -> float:
    """Linear warm-up, then cosine decay to 1% of the peak; ``total=0``: constant after the warm-up."""
    if step < warmup:
        return peak * (step + 1) / warmup
    if total <= 0:
        return peak
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (0.01 + 0.99 * 0.5 * (1 + math.cos(math.pi * progress)))


# ------------------------------------------------------------------------------------------- stage 1


def train_vae(vae, s: BaseSettings, log: Log = print) -> dict[str, Any]:
    """Train ``vae`` as an autoencoder (L1 + a tiny KL) on world and clutter pictures; returns figures.

    Three things make it learn in minutes rather than hours. Most steps see 32 px crops: the codec is local,
    and more, cheaper steps beat fewer whole pictures (the last ``vae_full_steps`` see whole pictures so the
    group norms' statistics match use). The posterior starts narrow (log-variance -12): otherwise unit
    noise swamps the young latents and the decoder learns nothing for hundreds of steps. And latent channels
    0-2 are anchored to the 2x2 average-pooled picture: the encoder starts from an easy target, and the
    latents are a colour thumbnail, as SD's are, so any colour, seen by the world or not, has an obvious
    place in latent space.
    """
    rng = np.random.default_rng(s.seed + 1)
    world, _, _ = world_scenes(s.vae_world_images, s.seed + 2)
    clutter = np.stack([np.asarray(clutter_image(rng)) for _ in range(s.vae_clutter_images)])
    pixels = np.concatenate([world, clutter])
    opt = torch.optim.AdamW(vae.parameters(), lr=s.vae_lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(s.seed + 3)
    with torch.no_grad():
        vae.quant_conv.weight[LATENT_CHANNELS:] = 0.0
        vae.quant_conv.bias[LATENT_CHANNELS:] = -12.0
    vae.train()
    t0, recent = time.perf_counter(), []
    for step in range(s.vae_steps):
        for g in opt.param_groups:
            g["lr"] = _lr_at(step, s.vae_steps, s.vae_lr, 50)
        idx = torch.randint(0, len(pixels), (s.vae_batch,), generator=gen).numpy()
        crop = IMAGE_SIZE if step >= s.vae_steps - s.vae_full_steps else s.vae_crop
        corners = torch.randint(0, (IMAGE_SIZE - crop) // VAE_FACTOR + 1, (s.vae_batch, 2), generator=gen) * VAE_FACTOR
        x = to_tensor(np.stack([pixels[i, top : top + crop, left : left + crop]
                               for i, (top, left) in zip(idx, corners.tolist())]))
        posterior = vae.encode(x).latent_dist
        recon = vae.decode(posterior.sample(generator=gen)).sample
        rec = (recon - x).abs().mean()
        anchor = (posterior.mean[:, :3] - F.avg_pool2d(x, VAE_FACTOR)).abs().mean()
        loss = rec + s.vae_anchor_weight * anchor + s.vae_kl_weight * posterior.kl().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(vae.parameters(), 1.0)
        opt.step()
        recent.append(rec.item())
        if (step + 1) % 250 == 0 or step + 1 == s.vae_steps:
            log(f"vae step {step + 1}/{s.vae_steps} ({crop} px): L1 {np.mean(recent):.4f} "
                f"({time.perf_counter() - t0:.0f} s)")
            recent = []
    vae.eval()
    return {"seconds": round(time.perf_counter() - t0, 1), "final_l1": rec.item()}


# ------------------------------------------------------------------------------------------- stage 2


@torch.no_grad()
def encode_world(vae, n: int, seed: int, chunk: int = 256,
                 s: BaseSettings | None = None) -> tuple[torch.Tensor, list[str]]:
    """``n`` world scenes encoded to unscaled latent means (N, 4, 32, 32), with their captions (tag order
    varied as settings ``s`` say, see ``world_scenes``)."""
    latents, captions = [], []
    for start in range(0, n, chunk):
        pixels, caps, _ = world_scenes(min(chunk, n - start), seed + start, s)
        latents.append(vae.encode(to_tensor(pixels)).latent_dist.mean)
        captions += caps
    return torch.cat(latents), captions


def set_scaling_factor(vae, latents: torch.Tensor) -> float:
    """SD's convention: ``scaling_factor`` makes the latents the UNet sees have unit standard deviation."""
    factor = float(1.0 / latents.std())
    vae.register_to_config(scaling_factor=factor)
    return factor


# ------------------------------------------------------------------------------------------- stage 3


def tokenize(tokenizer, captions: list[str]) -> torch.Tensor:
    """Token ids padded to 77, exactly as the pipeline and the LoRA trainer tokenize."""
    return tokenizer(captions, padding="max_length", max_length=tokenizer.model_max_length, truncation=True,
                     return_tensors="pt").input_ids


def train_diffusion(unet, text_encoder, tokenizer, latents: torch.Tensor, captions: list[str], s: BaseSettings,
                    log: Log = print, checkpoint: Callable[[int, dict[str, Any]], None] | None = None,
                    state: dict[str, Any] | None = None) -> dict[str, Any]:
    """Train UNet and text encoder on scaled ``latents`` and ``captions``; the EMA weights end up in the models.

    ``checkpoint(step, state)`` is called every ``s.checkpoint_every`` steps with everything needed to resume
    (pass it back as ``state``). Each step's batch and noise come from (seed, step), so a resumed run draws
    the same batches as an uninterrupted one.
    """
    from diffusers.training_utils import compute_snr

    from trainer.models.family import family

    sd15 = family("sd15")  # the demo base is SD1.5-shaped: its adapter noises, calls the UNet and gives the target
    schedule = sd15.noise_schedule(scheduler_config(), "epsilon")  # ignores the DDIM-only keys
    ids = tokenize(tokenizer, captions)
    empty = tokenize(tokenizer, [""])[0]
    params = [*unet.parameters(), *text_encoder.parameters()]
    opt = torch.optim.AdamW(params, lr=s.lr, weight_decay=s.weight_decay)
    ema = [p.detach().clone() for p in params]
    start = 0
    if state is not None:
        unet.load_state_dict(state["unet"])
        text_encoder.load_state_dict(state["text_encoder"])
        opt.load_state_dict(state["optimizer"])
        ema, start = state["ema"], state["step"]
    unet.train()
    text_encoder.train()
    t0, recent = time.perf_counter(), []
    for step in range(start, s.steps):
        gen = torch.Generator().manual_seed(s.seed * 1_000_003 + step)
        for g in opt.param_groups:
            g["lr"] = _lr_at(step, 0, s.lr, s.warmup_steps)  # constant: any checkpoint is a finished model
        idx = torch.randint(0, len(latents), (s.batch,), generator=gen)
        x0 = latents[idx]
        batch_ids = ids[idx].clone()
        batch_ids[torch.rand(s.batch, generator=gen) < s.caption_dropout] = empty  # learn the unconditional
        # Offset noise: the mean of 32x32 pixels of noise is itself noise (std 1/32), yet the flat backgrounds
        # make the latent's mean almost the whole picture; a model that reads the background out of the
        # starting noise's mean ignores "on sky". Per-channel offsets teach it that the mean is noise too.
        noise = torch.randn(x0.shape, generator=gen)
        noise = noise + s.noise_offset * torch.randn((s.batch, x0.shape[1], 1, 1), generator=gen)
        t = schedule.draw(s.batch, gen)
        hidden = text_encoder(batch_ids)[0]
        noisy, target = schedule.noised(x0, noise, t)
        pred = sd15.predict(unet, noisy, schedule.model_timesteps(t), hidden, None, [])
        loss = F.mse_loss(pred, target, reduction="none").mean(dim=(1, 2, 3))
        snr = compute_snr(schedule.scheduler, t)
        loss = (loss * torch.clamp(snr, max=s.min_snr_gamma) / snr).mean()  # min-SNR-γ: composition first
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        decay = min(s.ema_decay, (1 + step) / (10 + step))
        with torch.no_grad():
            torch._foreach_lerp_(ema, [p.detach() for p in params], 1 - decay)
        recent.append(loss.item())
        if (step + 1) % 50 == 0 or step + 1 == s.steps:
            done = step + 1 - start
            log(f"step {step + 1}/{s.steps}: loss {np.mean(recent):.4f}, lr {opt.param_groups[0]['lr']:.2e}, "
                f"{time.perf_counter() - t0:.0f} s, {done * s.batch / (time.perf_counter() - t0):.0f} pictures/s")
            recent = []
        if checkpoint is not None and ((step + 1) % s.checkpoint_every == 0 or step + 1 == s.steps):
            checkpoint(step + 1, {"step": step + 1, "unet": unet.state_dict(), "optimizer": opt.state_dict(),
                                  "text_encoder": text_encoder.state_dict(), "ema": ema})
    with torch.no_grad():
        torch._foreach_copy_(params, ema)
    unet.eval()
    text_encoder.eval()
    return {"seconds": round(time.perf_counter() - t0, 1), "steps_run": s.steps - start}
