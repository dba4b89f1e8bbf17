"""Reading a picture file for training: the first frame, EXIF-upright, 8-bit RGB, transparency on white; and the
facts about a file the dataset scan reports (orientation, bit depth, transparency); and a sample enlarged for
showing (``for_display``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageFile, ImageOps


def load_image_rgb(path: str | Path, min_size: tuple[int, int] | None = None) -> Image.Image:
    """Open an image for training: first frame, EXIF-upright, 8-bit RGB, transparency composited on white.

    ``min_size`` (upright width, height) lets a JPEG decode at a reduced scale that still covers it, which
    is several times faster for photos much larger than their bucket.
    """
    with Image.open(path) as im:
        im.seek(0)
        if min_size and im.format == "JPEG":
            upright_swapped = exif_orientation(im) in (5, 6, 7, 8)
            im.draft(im.mode, (min_size[1], min_size[0]) if upright_swapped else min_size)
        im.load()
        return to_rgb(upright(im))


def exif_orientation(im: Image.Image) -> int:
    try:
        value = int(im.getexif().get(0x0112, 1))
    except Exception:
        return 1  # unreadable EXIF is not worth refusing the picture over
    return value if 1 <= value <= 8 else 1


def upright(im: Image.Image) -> Image.Image:
    """An upright copy (always a copy: the caller closes the file)."""
    try:
        return ImageOps.exif_transpose(im)
    except Exception:
        return im.copy()  # broken EXIF: train on the pixels as stored rather than lose the picture


def bit_depth(im: ImageFile.ImageFile) -> int:
    if im.mode == "F":
        return 32
    if im.mode.startswith("I"):
        return 16
    # Pillow reads a 48/64-bit PNG straight into 8-bit RGB(A); only the tile's raw mode tells.
    if any(";16" in str(t.args) for t in (im.tile or [])):
        return 16
    return 8


def has_transparency(im: Image.Image) -> bool:
    if "transparency" in im.info:
        return True
    if "A" in im.getbands():
        return im.getchannel("A").getextrema()[0] < 255  # type: ignore[operator]  # one band: (low, high) numbers; an all-opaque alpha is dropped silently
    return False


def to_rgb(im: Image.Image) -> Image.Image:
    if im.mode == "RGB":
        return im
    if im.mode.startswith("I") or im.mode == "F":
        a = np.asarray(im, dtype=np.float64)
        # 16-bit data spans 0..65535; Pillow's own I→L conversion clips instead of scaling.
        if im.mode.startswith("I;16") or a.max(initial=0) > 255:
            a = a / 257.0
        return Image.fromarray(np.clip(a + 0.5, 0, 255).astype(np.uint8), "L").convert("RGB")
    if im.mode in ("RGBA", "LA", "PA", "La", "RGBa") or "transparency" in im.info:
        rgba = im.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return im.convert("RGB")


# ------------------------------------------------------------------------------------------- showing

DISPLAY_SIDE = 256  # a sample smaller than this is enlarged for showing: the demo's 64 px pictures become 256 px


def display_scale(size: tuple[int, int], side: int = DISPLAY_SIDE) -> int:
    """The whole factor a picture of ``size`` (width, height) is enlarged by for showing: the largest that keeps it
    within ``side`` × ``side``, at least 1 (a picture already that big is shown as it is)."""
    return max(1, side // max(1, max(size)))


def for_display(im: Image.Image, side: int = DISPLAY_SIDE) -> Image.Image:
    """An RGB copy of a sample a person can judge on a screen: a small picture (the demo's 64 px) enlarged by a
    whole factor, nearest neighbour, so each pixel becomes a block of its own colour and nothing is invented or
    blurred; a picture already ``side`` px or more is only converted."""
    rgb = to_rgb(im)
    k = display_scale(rgb.size, side)
    if k == 1:
        return rgb.copy() if rgb is im else rgb  # a copy: the caller may close the file it came from
    return rgb.resize((rgb.width * k, rgb.height * k), Image.Resampling.NEAREST)
