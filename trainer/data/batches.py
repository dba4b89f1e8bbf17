"""Training data: bucketed batches, caption handling, and the latent / text-embedding caches.

Every random choice (batch order, tag shuffles, caption dropout) is derived from (seed, epoch) so a resumed
run sees exactly the batches an uninterrupted one would have seen, without restoring any RNG state.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from trainer.data.images import load_image_rgb


@dataclass(frozen=True)
class Sample:
    """One image in training: where it is, its bucket and its caption as written."""

    index: int
    path: str
    rel: str
    bucket: tuple[int, int]  # (width, height)
    caption: str
    repeats: int
    prior: bool = False  # a prior (regularisation) image: loss weighted by dataset.prior_loss_weight


def samples_from_report(report, trigger: str = "") -> list[Sample]:
    out = []
    for i, item in enumerate(report.items):
        caption = (item.caption or "").strip()
        if not caption:
            # sd-scripts' convention: a kohya folder "N_trigger class" names the caption of uncaptioned images.
            folder = Path(item.folder).name if item.folder else ""
            head, _, rest = folder.partition("_")
            caption = rest.strip() if head.isdigit() and rest.strip() else ("" if item.prior else trigger)
        out.append(Sample(i, item.path, item.rel, tuple(item.bucket), caption, int(item.repeats), item.prior))
    return out


def epoch_batches(samples: list[Sample], batch_size: int, seed: int, epoch: int) -> list[list[Sample]]:
    """The epoch's batches: repeats expanded, shuffled within each bucket, never mixing buckets.

    The count is Σ_bucket ceil(n_bucket / batch_size), the same formula the plan uses.
    """
    rng = random.Random(f"{seed}:{epoch}:batches")
    by_bucket: dict[tuple[int, int], list[Sample]] = {}
    for s in samples:
        by_bucket.setdefault(s.bucket, []).extend([s] * s.repeats)
    batches: list[list[Sample]] = []
    for bucket in sorted(by_bucket):
        pool = by_bucket[bucket]
        rng.shuffle(pool)
        batches.extend(pool[i : i + batch_size] for i in range(0, len(pool), batch_size))
    rng.shuffle(batches)
    return batches


def without_trigger(caption: str, trigger: str) -> str:
    """``caption`` with every whole-word ``trigger`` taken out, and the commas it leaves tidied."""
    if not trigger.strip():
        return caption
    bare = re.sub(rf"(?<!\w){re.escape(trigger.strip())}(?!\w)", "", caption)
    parts = [" ".join(p.split()) for p in bare.split(",")]
    return ", ".join(p for p in parts if p)


def process_caption(caption: str, cfg, rng: random.Random) -> str:
    """Caption dropout, then tag dropout and shuffling of the tags after the first ``keep_tokens`` (the trigger
    stays first and always there)."""
    if cfg.caption_dropout > 0 and rng.random() < cfg.caption_dropout:
        return ""
    if cfg.shuffle_tags or cfg.tag_dropout > 0:
        tags = [t.strip() for t in caption.split(",") if t.strip()]
        fixed, rest = tags[: cfg.keep_tokens], tags[cfg.keep_tokens :]
        if cfg.tag_dropout > 0:
            rest = [t for t in rest if rng.random() >= cfg.tag_dropout]
        if cfg.shuffle_tags:
            rng.shuffle(rest)
        caption = ", ".join(fixed + rest)
    return caption


def training_captions(samples: list[Sample], cfg) -> list[str]:
    """Every caption a step can be given (the dataset config ``cfg`` neither shuffles nor drops tags): each
    picture's own, and the empty caption when captions are dropped."""
    return [s.caption for s in samples] + ([""] if cfg.caption_dropout > 0 else [])


def captions_are_augmented(cfg) -> bool:
    # caption dropout maps to the cached empty caption, so it does not stop caching
    return bool(cfg.shuffle_tags or cfg.tag_dropout > 0)


def image_tensor(path: str, bucket: tuple[int, int], flip: bool = False) -> torch.Tensor:
    """Load, scale to cover the bucket, centre-crop, and map to [-1, 1] as (3, H, W) float32."""
    from PIL import Image

    img = load_image_rgb(path)
    bw, bh = bucket
    scale = max(bw / img.width, bh / img.height)
    w, h = max(bw, round(img.width * scale)), max(bh, round(img.height * scale))
    img = img.resize((w, h), Image.Resampling.LANCZOS)
    left, top = (w - bw) // 2, (h - bh) // 2
    img = img.crop((left, top, left + bw, top + bh))
    if flip:
        img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    arr = np.asarray(img, dtype=np.float32) / 127.5 - 1.0
    return torch.from_numpy(arr).permute(2, 0, 1).contiguous()


def vae_fingerprint(vae) -> str:
    """Identifies the VAE for the disk cache: its config plus a checksum of its first and last weights."""
    params = list(vae.parameters())
    h = hashlib.sha1(json.dumps(dict(vae.config), sort_keys=True, default=str).encode())
    for p in (params[0], params[-1]):
        h.update(p.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


class LatentCache:
    """Latents keyed by (file content, bucket, VAE): in memory, and on disk when asked."""

    def __init__(self, vae, device, vae_dtype, disk_dir: Path | None = None):
        self.vae, self.device, self.vae_dtype = vae, device, vae_dtype
        self.disk_dir = disk_dir
        self.fingerprint = vae_fingerprint(vae)
        self.memory: dict[tuple[int, bool], torch.Tensor] = {}

    def _key(self, s: Sample, flip: bool) -> str:
        h = hashlib.sha1(Path(s.path).read_bytes())
        h.update(f"{s.bucket}:{flip}:{self.fingerprint}".encode())
        return h.hexdigest()

    @torch.no_grad()
    def encode(self, pixels: torch.Tensor) -> torch.Tensor:
        """VAE-encode a (B, 3, H, W) batch to scaled latents. The distribution's mean: deterministic."""
        pixels = pixels.to(self.device, dtype=self.vae_dtype)
        latents = self.vae.encode(pixels).latent_dist.mean
        shift = getattr(self.vae.config, "shift_factor", None) or 0.0
        return ((latents - shift) * self.vae.config.scaling_factor).float()

    def fill(self, samples: list[Sample], flips: tuple[bool, ...], progress: Callable[[int, int], None]) -> None:
        todo = [(s, f) for s in samples for f in flips]
        for done, (s, flip) in enumerate(todo, 1):
            self.memory[(s.index, flip)] = self._load_or_encode(s, flip)
            progress(done, len(todo))

    def _load_or_encode(self, s: Sample, flip: bool) -> torch.Tensor:
        path = None
        if self.disk_dir is not None:
            path = self.disk_dir / f"{self._key(s, flip)}.safetensors"
            if path.is_file():
                from safetensors.torch import load_file

                latents = load_file(str(path))["latents"]
                if bool(torch.isfinite(latents).all()):
                    return latents
                path.unlink(missing_ok=True)  # written by an older run or another tool: encode it again
        latents = self._encode_finite(s, flip)
        if path is not None:
            from trainer.tensor_files import save_safetensors

            # a unique temp name per writer: several ranks fill the same cache at once
            save_safetensors({"latents": latents}, path)
        return latents

    def _encode_finite(self, s: Sample, flip: bool) -> torch.Tensor:
        """Encode one picture; a half-precision VAE that overflows (NaN latents, a known fp16 failure) is
        retried in fp32, and a picture that still gives non-finite latents is refused by name."""
        pixels = image_tensor(s.path, s.bucket, flip)[None]
        latents = self.encode(pixels)[0].cpu()
        if bool(torch.isfinite(latents).all()):
            return latents
        if self.vae_dtype != torch.float32:
            dtype = self.vae_dtype
            self.vae.to(dtype=torch.float32)
            self.vae_dtype = torch.float32
            try:
                latents = self.encode(pixels)[0].cpu()
            finally:
                self.vae.to(dtype=dtype)
                self.vae_dtype = dtype
            if bool(torch.isfinite(latents).all()):
                return latents
        from trainer.errors import UserError
        from trainer.message import msg

        raise UserError(msg("error.latents.not_finite", rel=s.rel))

    def batch(self, batch: list[Sample], flips: list[bool]) -> torch.Tensor:
        return torch.stack([self.memory[(s.index, f)] for s, f in zip(batch, flips)]).to(self.device)


def steps_per_epoch(n_batches: int, grad_accum: int) -> int:
    return math.ceil(n_batches / grad_accum)
