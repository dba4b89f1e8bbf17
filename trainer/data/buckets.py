"""Aspect-ratio buckets, the way kohya's sd-scripts makes them.

A bucket is a (width, height) that every image in one batch is resized and centre-cropped to. Sides are
multiples of ``step`` (the VAE needs multiples of 8; 64 keeps the UNet's feature maps even), the area never
exceeds ``resolution²`` (so memory per image stays what the user chose), and the square is always there.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from PIL import Image

from trainer.config.schema import DatasetConfig

Bucket = tuple[int, int]


class CropBox(NamedTuple):
    """Resize the image to ``resize_w × resize_h``, then crop ``bucket`` from ``(left, top)``."""

    resize_w: int
    resize_h: int
    left: int
    top: int


def make_buckets(resolution: int, step: int = 64, lo: int = 256, hi: int = 1024) -> list[Bucket]:
    """All buckets with sides in ``[lo, hi]`` that are multiples of ``step`` and area ≤ ``resolution²``.

    For each width the tallest height that fits the area is taken, plus its transpose (kohya's rule). The ``resolution × resolution`` square is always included, even when ``resolution`` is not a
    multiple of ``step``. Sorted from tallest to widest.
    """
    if resolution <= 0 or step <= 0:
        raise ValueError(f"resolution and step must be positive, got {resolution} and {step}")
    area = resolution * resolution
    lo_s = -(-lo // step) * step  # round lo up and hi down so every side stays inside [lo, hi]
    hi_s = hi // step * step
    found: set[Bucket] = {(resolution, resolution)}
    for w in range(max(lo_s, step), hi_s + 1, step):
        h = min(hi_s, area // w // step * step)
        if h >= lo_s and h > 0:
            found.add((w, h))
            found.add((h, w))  # as kohya does: portrait and landscape get the same choices
    return sorted(found, key=lambda b: (b[0] / b[1], b[0]))


def buckets_for(cfg: DatasetConfig) -> list[Bucket]:
    """The bucket list a dataset config implies; just the square when ``cfg.buckets`` is off."""
    res = cfg.resolution
    if not cfg.buckets:
        return [(res, res)]
    lo = min(cfg.min_bucket_side, res)
    hi = max(cfg.max_bucket_side, res)
    return make_buckets(res, cfg.bucket_step, lo, hi)


def assign_bucket(width: int, height: int, buckets: list[Bucket]) -> Bucket:
    """The bucket whose aspect ratio is closest to the image's (log-ratio distance; ties go to the larger area).

    Log ratios make 2:1 and 1:2 equally far from square, which plain ratios do not.
    """
    if not buckets:
        raise ValueError("no buckets to choose from")
    if width <= 0 or height <= 0:
        raise ValueError(f"image size must be positive, got {width}×{height}")
    target = math.log(width / height)

    def key(b: Bucket) -> tuple[float, int]:
        return (round(abs(target - math.log(b[0] / b[1])), 9), -b[0] * b[1])

    return min(buckets, key=key)


def crop_box(width: int, height: int, bucket: Bucket) -> CropBox:
    """Scale so the image covers the bucket (no borders), then centre-crop the overflow."""
    bw, bh = bucket
    scale = max(bw / width, bh / height)
    # max() guards against rounding leaving the resized side one pixel short of the bucket.
    rw = max(bw, round(width * scale))
    rh = max(bh, round(height * scale))
    return CropBox(rw, rh, (rw - bw) // 2, (rh - bh) // 2)


def upscale_factor(width: int, height: int, bucket: Bucket) -> float:
    """How much the image is enlarged to cover its bucket (1.0 or less means it is only shrunk)."""
    return max(bucket[0] / width, bucket[1] / height)


def fit_to_bucket(img: Image.Image, bucket: Bucket) -> Image.Image:
    """Resize (Lanczos) and centre-crop an RGB image to exactly ``bucket``."""
    box = crop_box(img.width, img.height, bucket)
    if (img.width, img.height) != (box.resize_w, box.resize_h):
        # reducing_gap first shrinks by an integer factor with a cheap filter: much faster on big photos,
        # indistinguishable at training resolution.
        img = img.resize((box.resize_w, box.resize_h), Image.Resampling.LANCZOS, reducing_gap=3.0)
    return img.crop((box.left, box.top, box.left + bucket[0], box.top + bucket[1]))


UPSCALE_WARN = 1.5
"""A preset whose resolution enlarges a picture more than this (a 64 px picture at 512 px: ×8) says so."""


def upscaling(sizes: list[tuple[int, int]], cfg: DatasetConfig) -> dict[str, int | float] | None:
    """What ``cfg``'s resolution does to pictures of these (width, height) sizes when some are enlarged more than
    :data:`UPSCALE_WARN`: ``n`` enlarged at all, ``scale`` the most, ``side`` the smallest short side, ``suggest``
    the resolution (a multiple of 8, at least 64) that trains most of them at their own size. None when none is."""
    if not sizes:
        return None
    buckets = buckets_for(cfg)
    factors = [upscale_factor(w, h, assign_bucket(w, h, buckets)) for w, h in sizes]
    if max(factors) <= UPSCALE_WARN:
        return None
    short = sorted(min(w, h) for w, h in sizes)
    typical = short[len(short) // 2]
    return {"n": sum(f > 1.0 for f in factors), "scale": max(factors), "side": short[0],
            "suggest": max(64, min(cfg.resolution, typical // 8 * 8))}
