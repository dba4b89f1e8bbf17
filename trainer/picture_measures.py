"""Measures of any run's sample pictures against its step-0 pictures (same prompt, same seed): colour burn and
leakage as pixel drift. They read colours and edges only, never what a picture shows; the demo world's measures
(:mod:`trainer.demo.measures`) add what its pictures show, on the demo only.

At the top level, below both :mod:`trainer.doctor` (which reads every run's pictures with it) and
:mod:`trainer.demo` (whose measures build on it). Pure numpy; every function takes a PIL image or an HxWx3 uint8 array. Scores are in [0, 1] unless a docstring
says otherwise.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

ImageLike = Image.Image | np.ndarray

DRIFT_FULL = 40.0  # mean Lab distance that counts as "totally different"
CHROMA_FULL = 0.15  # chroma this far past the reference: fully burnt (for pictures of other content)


def as_rgb(img: ImageLike) -> np.ndarray:
    """The picture as an HxWx3 float32 array of 0..255 values."""
    if isinstance(img, Image.Image):
        img = np.asarray(img.convert("RGB"))
    a = np.asarray(img)
    if a.ndim != 3 or a.shape[2] < 3:
        raise ValueError(f"expected an HxWx3 image, got shape {a.shape}")
    return a[..., :3].astype(np.float32)


def to_lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB (0..255) to CIE Lab (D65)."""
    c = np.asarray(rgb, dtype=np.float32) / 255.0
    c = np.where(c > 0.04045, ((c + 0.055) / 1.055) ** 2.4, c / 12.92)
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]], np.float32)
    xyz = c @ m.T / np.array([0.95047, 1.0, 1.08883], np.float32)
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], -1)


def to_hsv(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hue in degrees, saturation and value in 0..1."""
    c = rgb / 255.0
    mx, mn = c.max(-1), c.min(-1)
    d = mx - mn
    safe = np.where(d > 0, d, 1.0)
    r, g, b = c[..., 0], c[..., 1], c[..., 2]
    h = np.where(mx == r, (g - b) / safe % 6, np.where(mx == g, (b - r) / safe + 2, (r - g) / safe + 4))
    h = np.where(d > 0, h * 60.0, 0.0)
    s = np.where(mx > 0, d / np.where(mx > 0, mx, 1.0), 0.0)
    return h, s, mx


def sized_like(img: ImageLike, like: ImageLike) -> np.ndarray:
    """``img`` as an RGB array of ``like``'s height and width (resized only when they differ)."""
    a, b = as_rgb(like), as_rgb(img)
    if a.shape == b.shape:
        return b
    return as_rgb(Image.fromarray(b.astype(np.uint8)).resize((a.shape[1], a.shape[0]), Image.Resampling.BICUBIC))


def leakage_scores(img: ImageLike, base_img: ImageLike) -> dict[str, float]:
    """How far a no-trigger sample moved away from the base model's sample (same prompt, same seed).

    ``drift``: mean Lab distance at half resolution, 1 at ``DRIFT_FULL`` (0 = same picture); ``leakage``: the
    same number, all a picture of any run can tell.
    """
    a, b = as_rgb(img), sized_like(base_img, img)
    a2, b2 = (to_lab(as_rgb(Image.fromarray(x.astype(np.uint8)).reduce(2))) for x in (a, b))  # halve: damp noise
    drift = min(1.0, float(np.linalg.norm(a2 - b2, axis=-1).mean()) / DRIFT_FULL)
    return {"drift": drift, "leakage": drift}


def colour_stats(img: ImageLike) -> dict[str, float]:
    """mean_saturation (HSV, 0..1), mean_chroma ((max - min channel) / 255: how colourful a pixel looks, which a
    dark pixel is not however large its HSV saturation), contrast (luma std, 0..0.5), clipped (share of channels
    at 0-1 or 254-255), roughness (mean absolute Laplacian of luma, 0 for flat colour, about 0.2 for noise of
    std 15)."""
    rgb = as_rgb(img)
    _, s, _ = to_hsv(rgb)
    luma = (rgb @ np.array([0.299, 0.587, 0.114], np.float32)) / 255.0
    lap = 4 * luma[1:-1, 1:-1] - luma[:-2, 1:-1] - luma[2:, 1:-1] - luma[1:-1, :-2] - luma[1:-1, 2:]
    return {
        "mean_saturation": float(s.mean()),
        "mean_chroma": float((rgb.max(axis=-1) - rgb.min(axis=-1)).mean() / 255.0),
        "contrast": float(luma.std()),
        "clipped": float(((rgb <= 1) | (rgb >= 254)).mean()),
        "roughness": float(np.abs(lap).mean()) if lap.size else 0.0,
    }


def burn(img: ImageLike, ref_img: ImageLike) -> dict[str, float]:
    """Colour burn of a sample against a reference (its step-0 sample, same prompt and seed).

    Returns the drifts (saturation_drift: mean saturation difference; contrast_ratio: (luma std + 0.05) ratio;
    clipped_drift: clipped-share difference; roughness_drift: mean |Laplacian| difference) and ``burn_score``
    in [0, 1]: a noisy-or of more saturation (+0.25 = full), more contrast (ratio 2 = full), more clipping
    (+0.15 = full) and harsher edges (+0.25 = full). Identical pictures score 0; less of anything scores 0.
    Pictures of different content also differ in these numbers: compare samples of the same prompt and seed.
    """
    return burn_from_stats(colour_stats(img), colour_stats(ref_img))


def burn_from_stats(now: dict[str, float], ref: dict[str, float], same_content: bool = True) -> dict[str, float]:
    """:func:`burn` from two :func:`colour_stats`. ``same_content=False`` when the reference is other pictures
    (the training pictures' highest): contrast and clipping then depend on what is drawn (a prompt's snow is white
    and bright), so only deeper colours and rougher edges count, and colour as chroma, not HSV saturation (a dark
    night sky is deeply "saturated" in HSV and barely colourful: a subject drawn on one is not burnt)."""
    sat = now["mean_saturation"] - ref["mean_saturation"]
    # +0.05 on both sides: a near-flat reference would turn a little noise into a large ratio
    contrast = (now["contrast"] + 0.05) / (ref["contrast"] + 0.05)
    clipped = now["clipped"] - ref["clipped"]
    rough = now["roughness"] - ref["roughness"]
    if same_content:
        parts = np.clip([sat / 0.25, np.log2(max(contrast, 1e-6)), clipped / 0.15, rough / 0.25], 0, 1)
    else:
        chroma = now["mean_chroma"] - ref["mean_chroma"]
        parts = np.clip([chroma / CHROMA_FULL, rough / 0.25], 0, 1)
    score = 1.0 - float(np.prod(1.0 - parts))
    return {"saturation_drift": sat, "contrast_ratio": contrast, "clipped_drift": clipped,
            "roughness_drift": rough, "burn_score": score}
