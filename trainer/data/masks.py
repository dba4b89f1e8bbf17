"""Masked training (``dataset.masked_loss``): which part of a picture its loss counts.

A picture's mask is the file beside it in OneTrainer's naming (``x-masklabel.png`` for ``x.png``: white learns,
black is left), else its own transparency (opaque learns, the transparent part, filled with white for training, is
left); a picture with neither trains whole. The mask is fitted to the bucket as the picture is (scaled to cover it,
centre-cropped, flipped with it) and then averaged down to the latents' size, where the loss is. Outside the mask
the loss still counts ``dataset.unmasked_weight`` (0: not at all), and each picture's loss is the mean over what it
weighs, so a small mask does not make a small step.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image

from trainer.data.buckets import crop_box
from trainer.data.folders import mask_file
from trainer.data.images import has_transparency, upright


def mask_image(picture: str | Path) -> Image.Image | None:
    """The picture's mask as an upright 8-bit grey image (its mask file, else its transparency), or None."""
    found = mask_file(picture)
    with Image.open(found or picture) as im:
        im.seek(0)
        im.load()
        if found is not None:
            return upright(im).convert("L")
        if has_transparency(im):
            return upright(im).convert("RGBA").getchannel("A")
    return None


def mask_tensor(picture: str | Path, bucket: tuple[int, int], flip: bool, size: tuple[int, int]) -> torch.Tensor | None:
    """The mask of ``picture`` in [0, 1] as (1, height, width) at the latents' ``size`` (height, width), fitted to
    ``bucket`` (width, height) as :func:`trainer.data.batches.image_tensor` fits the picture; None without one."""
    m = mask_image(picture)
    if m is None:
        return None
    box = crop_box(m.width, m.height, bucket)
    m = m.resize((box.resize_w, box.resize_h), Image.Resampling.BILINEAR)
    m = m.crop((box.left, box.top, box.left + bucket[0], box.top + bucket[1]))
    if flip:
        m = m.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    m = m.resize((size[1], size[0]), Image.Resampling.BOX)  # each latent cell: the share of its pixels masked in
    return torch.from_numpy(np.asarray(m, dtype=np.float32) / 255.0)[None]


def mask_weights(picture: str | Path, bucket: tuple[int, int], flip: bool, size: tuple[int, int],
                 floor: float) -> torch.Tensor | None:
    """The loss weights of ``picture`` as (1, height, width): 1 inside its mask, ``floor`` outside (the training
    loss and the doctor's measures weigh alike); None without a mask."""
    m = mask_tensor(picture, bucket, flip, size)
    return None if m is None else floor + (1.0 - floor) * m


def masked_mean(err: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Each picture's loss as the mean of ``err`` (B, C, H, W) weighted by ``weights`` (B, 1, H, W)."""
    return (err * weights).mean(dim=(1, 2, 3)) / weights.mean(dim=(1, 2, 3)).clamp_min(1e-6)
