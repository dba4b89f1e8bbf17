"""Measures computed from pictures of the demo world: how much a picture shows the demo character, how well it
follows a demo prompt, and leakage judged by what a picture shows. Review, the verdict and the live detectors use
them on the demo run only; burn and pixel drift, which hold for any run, are :mod:`trainer.picture_measures`.

Pure numpy; every function takes a PIL image or an HxWx3 uint8 array. They are built to survive blurry,
noisy 64 px samples from a tiny model: colours are judged in CIE Lab against the world's named palette,
the object is the largest connected region that differs from the border colour, and shapes are matched
against templates drawn by the world's own renderer. Scores are in [0, 1] unless a docstring says otherwise.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
from PIL import Image

from trainer.demo.world import (
    BACKGROUNDS,
    CHARACTER_SIZES,
    COLOURS,
    OUTFITS,
    POSITIONS,
    SHAPES,
    SIZES,
    Scene,
    character_scene,
    render_scene,
)
from trainer.picture_measures import ImageLike, as_rgb, sized_like, to_hsv, to_lab
from trainer.picture_measures import leakage_scores as pixel_leakage_scores

_COLOUR_SIGMA = 25.0  # Lab distance at which a colour stops reading as the asked one
_POSITION_SIGMA = 0.09  # fraction of the image side; positions sit 0.22 apart
_SIZE_SLOPE = 0.08  # log-ratio scale of the small/large decision
_TEMPLATE_SIDE = 24
_ASPECT_CHANGE = 1.35  # an object's box this much taller (or wider) than the base picture's shows another silhouette


def _box_blur(a: np.ndarray) -> np.ndarray:
    p = np.pad(a, ((1, 1), (1, 1), (0, 0)), mode="edge")
    h, w = a.shape[:2]
    return sum(p[i : i + h, j : j + w] for i in range(3) for j in range(3)) / 9.0  # type: ignore[return-value]  # a sum of arrays


def _dilate(mask: np.ndarray) -> np.ndarray:
    """3x3 dilation; ``~_dilate(~mask)`` is the 3x3 erosion."""
    p, (h, w) = np.pad(mask, 1), mask.shape
    return np.any([p[i : i + h, j : j + w] for i in range(3) for j in range(3)], axis=0)


def _largest_component(mask: np.ndarray) -> np.ndarray:
    """The largest 4-connected region of ``mask`` (min-label propagation with pointer jumping)."""
    if not mask.any():
        return mask
    h, w = mask.shape
    big = h * w
    lab = np.where(mask, np.arange(big).reshape(h, w), big)
    while True:
        m = lab.copy()
        m[1:] = np.minimum(m[1:], lab[:-1])
        m[:-1] = np.minimum(m[:-1], lab[1:])
        m[:, 1:] = np.minimum(m[:, 1:], lab[:, :-1])
        m[:, :-1] = np.minimum(m[:, :-1], lab[:, 1:])
        m = np.where(mask, m, big)
        flat = m.ravel()
        inside = flat < big
        flat[inside] = flat[flat[inside]]  # a label is a pixel of the same region: jump to its label
        if np.array_equal(m, lab):
            break
        lab = m
    counts = np.bincount(lab[mask])
    return lab == int(np.argmax(counts))


def _border(a: np.ndarray) -> np.ndarray:
    k = max(1, min(a.shape[:2]) // 32)
    return np.concatenate([a[:k].reshape(-1, a.shape[2]), a[-k:].reshape(-1, a.shape[2]),
                           a[:, :k].reshape(-1, a.shape[2]), a[:, -k:].reshape(-1, a.shape[2])])


def _segment(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(object mask, background Lab, smoothed image Lab). The background is the median border colour."""
    lab = to_lab(_box_blur(rgb))
    bg = np.median(_border(lab), axis=0)
    dist = np.linalg.norm(lab - bg, axis=-1)
    threshold = max(12.0, 0.45 * float(np.percentile(dist, 99.5)))
    return _largest_component(dist > threshold), bg, lab


def _name_score(value_lab: np.ndarray, asked: str, palette: dict[str, np.ndarray]) -> float:
    """How well a Lab colour reads as ``asked`` among the palette: near it, and nearer it than any other."""
    dist = {name: float(np.linalg.norm(value_lab - ref)) for name, ref in palette.items()}
    d_asked = dist[asked]
    d_other = min(d for name, d in dist.items() if name != asked)
    relative = d_other**2 / (d_asked**2 + d_other**2 + 1e-6)
    absolute = float(np.exp(-0.5 * (d_asked / _COLOUR_SIGMA) ** 2))
    return float(np.sqrt(relative * absolute))


def _nearest(value_lab: np.ndarray, palette: dict[str, np.ndarray]) -> str:
    return min(palette, key=lambda name: float(np.linalg.norm(value_lab - palette[name])))


_COLOUR_LAB = {k: to_lab(np.array(v, np.float32)) for k, v in COLOURS.items()}
_BACKGROUND_LAB = {k: to_lab(np.array(v, np.float32)) for k, v in BACKGROUNDS.items()}
_OUTFIT_LAB = {k: _COLOUR_LAB[k] for k in OUTFITS}


# ---- the character -------------------------------------------------------------------------------------------

def _character_masks(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Magenta body pixels and yellow stripe pixels, within the largest magenta-or-yellow region."""
    h, s, v = to_hsv(rgb)
    magenta = (h >= 285) & (h <= 340) & (s > 0.45) & (v > 0.35)
    # down to 20 degrees: a blurred stripe turns orange where it meets the body
    yellow = (h >= 20) & (h <= 70) & (s > 0.45) & (v > 0.5)
    # dilate first: pixels where the stripes blend into the body are neither colour and would cut the body up
    blob = _largest_component(_dilate(magenta | yellow))
    return magenta & blob, yellow & blob


@lru_cache(maxsize=8)
def _character_reference(size: int) -> dict[str, float]:
    """Clean canonical renders at this image size: small body pixels, stripe/body ratio, body widths (px),
    and how far the body's centroid sits below the character's box centre (in box heights)."""
    ref: dict[str, float] = {}
    for size_name, scale in CHARACTER_SIZES.items():
        magenta, yellow = _character_masks(as_rgb(render_scene(character_scene("stone", size=size_name), size)))
        ys, xs = np.nonzero(magenta | yellow)
        ref[f"width_{size_name}"] = float(xs.max() - xs.min() + 1)
        if size_name == "small":
            ref["magenta"] = float(magenta.sum())
            ref["ratio"] = float(yellow.sum() / max(1, magenta.sum()))
        else:
            ref["drop"] = float(((ys.mean() + 0.5) / size - 0.5) / scale)
    return ref


def likeness(img: ImageLike) -> float:
    """How much the picture shows the character: its magenta body, scaled by the yellow stripes on it.

    1.0 for a clean render at any size, 0 for world scenes. Magenta without the stripes scores at most 0.5
    (the "starting to look like it" stage: the colour is there, the details are not). A few magenta pixels
    (under 15% of the small character's body: noise, blended edges) count as none; a yellow object with a
    little magenta is not striped magenta, so the stripe share must stay under 3x the character's.
    """
    rgb = as_rgb(img)
    magenta, yellow = _character_masks(rgb)
    ref = _character_reference(min(rgb.shape[:2]))
    colour = float(np.clip((magenta.sum() - 0.15 * ref["magenta"]) / (0.4 * ref["magenta"]), 0, 1))
    ratio = yellow.sum() / max(1, magenta.sum())
    pattern = min(1.0, ratio / (0.5 * ref["ratio"]), 3 * ref["ratio"] / max(ratio, 1e-6))
    return float(colour * (0.5 + 0.5 * pattern))


def _outfit_score(rgb: np.ndarray, asked: str) -> float:
    """The hat's colour: what sits on top of the magenta body, compared with the asked hat colour."""
    magenta, _ = _character_masks(rgb)
    if magenta.sum() < 4:
        return 0.0
    ys, xs = np.nonzero(magenta)
    top, height, cx = ys.min(), ys.max() - ys.min() + 1, xs.mean()
    y0, x0 = max(0, int(top - 0.45 * height)), max(0, int(cx - 0.35 * height))
    region = rgb[y0:top, x0 : int(cx + 0.35 * height) + 1]
    if region.size == 0:
        return 0.0
    lab = to_lab(region)
    dist = np.linalg.norm(lab - np.median(_border(to_lab(rgb)), axis=0), axis=-1)
    h, s, _ = to_hsv(region)
    hat = (dist > max(15.0, 0.6 * float(np.percentile(dist, 90)))) & ~((h >= 285) & (h <= 340) & (s > 0.45))
    if hat.sum() < max(2, 0.03 * hat.size):
        return 0.0
    return _name_score(np.median(lab[hat], axis=0), asked, _OUTFIT_LAB)


# ---- adherence -----------------------------------------------------------------------------------------------

_VOCAB: dict[str, Any] = {"shape": SHAPES, "colour": COLOURS, "background": BACKGROUNDS, "position": POSITIONS,
                          "size": SIZES, "outfit": OUTFITS, "character": (True, False)}


def adherence_scores(img: ImageLike, expected: dict[str, Any]) -> dict[str, float]:
    """Per-attribute scores for what a prompt asked, plus their mean as ``overall``.

    ``expected`` keys: character (bool), shape, colour, background, position, size, outfit (hat colour);
    values are the world's names (``demo_prompt_specs`` gives them for the review prompts). With
    ``character: True`` position and size are read from the character's body, otherwise from the object
    that stands out from the background.
    """
    for key, value in expected.items():
        if key not in _VOCAB:
            raise ValueError(f"unknown adherence key {key!r}; known: {tuple(_VOCAB)}")
        if value not in _VOCAB[key]:
            raise ValueError(f"{key} {value!r} is not one of {tuple(_VOCAB[key])}")
    rgb = as_rgb(img)
    side = float(min(rgb.shape[:2]))
    mask, bg_lab, lab = _segment(rgb)
    is_character = bool(expected.get("character"))
    if is_character:
        magenta, yellow = _character_masks(rgb)
        obj, ref = magenta | yellow, _character_reference(int(side))
    else:
        obj, ref = mask, {}
    scores: dict[str, float] = {}
    if "character" in expected:
        like = likeness(rgb)
        scores["character"] = like if is_character else 1.0 - like
    if "background" in expected:
        scores["background"] = _name_score(bg_lab, expected["background"], _BACKGROUND_LAB)
    if "colour" in expected:
        scores["colour"] = _name_score(_object_lab(mask, lab), expected["colour"], _COLOUR_LAB) if mask.any() else 0.0
    if "shape" in expected:
        scores["shape"] = _shape_score(mask, expected["shape"])
    if "outfit" in expected:
        scores["outfit"] = _outfit_score(rgb, expected["outfit"])
    ys, xs = np.nonzero(obj)
    if "position" in expected:
        scores["position"] = 0.0
        if len(xs) >= 4:
            fx, fy = POSITIONS[expected["position"]]
            if is_character:  # the body sits below the centre of the character's box (the hat is above)
                fy += ref["drop"] * (xs.max() - xs.min() + 1) / ref["width_large"] * CHARACTER_SIZES["large"]
            d = np.hypot((xs.mean() + 0.5) / side - fx, (ys.mean() + 0.5) / side - fy)
            scores["position"] = float(np.exp(-0.5 * (d / _POSITION_SIGMA) ** 2))
    if "size" in expected:
        scores["size"] = 0.0
        if len(xs) >= 4:
            if is_character:
                extent, small, large = xs.max() - xs.min() + 1, ref["width_small"], ref["width_large"]
            else:
                ious = _shape_ious(mask)
                shape = expected.get("shape") or max(ious, key=lambda k: ious[k])
                extent = max(ys.max() - ys.min() + 1, xs.max() - xs.min() + 1)
                small, large = (_templates(int(side))[(shape, s)][1] for s in ("small", "large"))
            p_large = float(1 / (1 + np.exp(-np.log(extent / np.sqrt(small * large)) / _SIZE_SLOPE)))
            scores["size"] = p_large if expected["size"] == "large" else 1.0 - p_large
    scores["overall"] = float(np.mean(list(scores.values()))) if scores else 1.0
    return scores


def adherence(img: ImageLike, expected: dict[str, Any]) -> float:
    """The mean of ``adherence_scores``: 1 when everything the prompt asked is in the picture."""
    return adherence_scores(img, expected)["overall"]


# ---- world classifiers ---------------------------------------------------------------------------------------

def _object_lab(mask: np.ndarray, lab: np.ndarray) -> np.ndarray:
    """The object's colour: median over its interior (edges blend with the background)."""
    inner = mask & ~_dilate(~mask)
    return np.median(lab[inner if inner.sum() >= 3 else mask], axis=0)


def _normalised(mask: np.ndarray) -> np.ndarray:
    ys, xs = np.nonzero(mask)
    crop = Image.fromarray(mask[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1].astype(np.float32))
    return np.asarray(crop.resize((_TEMPLATE_SIDE, _TEMPLATE_SIDE), Image.Resampling.BILINEAR))


@lru_cache(maxsize=8)
def _templates(size: int) -> dict[tuple[str, str], tuple[np.ndarray, float]]:
    """(normalised mask, extent in px) of each shape at each size, drawn by the world's renderer and
    segmented like a sample."""
    out = {}
    for shape in SHAPES:
        for size_name in SIZES:
            mask = _segment(as_rgb(render_scene(Scene(shape, "black", "snow", "center", size_name), size)))[0]
            ys, xs = np.nonzero(mask)
            out[(shape, size_name)] = _normalised(mask), float(max(np.ptp(ys), np.ptp(xs)) + 1)
    return out


def _shape_ious(mask: np.ndarray) -> dict[str, float]:
    if mask.sum() < 4:
        return {shape: 0.0 for shape in SHAPES}
    m = _normalised(mask)
    ious: dict[str, float] = {}
    for (shape, _), (t, _) in _templates(min(mask.shape)).items():
        iou = float(np.minimum(m, t).sum() / max(1e-6, np.maximum(m, t).sum()))
        ious[shape] = max(ious.get(shape, 0.0), iou)
    return ious


def _shape_score(mask: np.ndarray, asked: str) -> float:
    ious = _shape_ious(mask)
    d_asked = (1 - ious[asked]) ** 2
    d_other = min((1 - v) ** 2 for k, v in ious.items() if k != asked)
    return float(d_other / (d_asked + d_other + 1e-6))


def detect_shape(img: ImageLike) -> str:
    """The world shape the picture shows (one of ``SHAPES``), or ``"none"`` when no object stands out."""
    mask, _, _ = _segment(as_rgb(img))
    if mask.sum() < 4:
        return "none"
    ious = _shape_ious(mask)
    return max(ious, key=lambda k: ious[k])


def detect_colour(img: ImageLike) -> str:
    """The named world colour (one of ``COLOURS``) of the picture's object, or ``"none"`` without one."""
    mask, _, lab = _segment(as_rgb(img))
    if mask.sum() < 4:
        return "none"
    return _nearest(_object_lab(mask, lab), _COLOUR_LAB)


def detect_background(img: ImageLike) -> str:
    """The named world background (one of ``BACKGROUNDS``) nearest to the picture's border colour."""
    _, bg, _ = _segment(as_rgb(img))
    return _nearest(bg, _BACKGROUND_LAB)


# ---- drift: leakage and burn ---------------------------------------------------------------------------------

def leakage_scores(img: ImageLike, base_img: ImageLike) -> dict[str, float]:
    """How a no-trigger sample moved away from the base model's sample (same prompt, same seed).

    ``drift``: the pixel drift of :func:`trainer.picture_measures.leakage_scores`; ``character``: how much
    more the character shows than in the base sample; ``leakage``: the larger.
    """
    a, b = as_rgb(img), sized_like(base_img, img)
    drift = pixel_leakage_scores(a, b)["drift"]
    character = max(0.0, likeness(a) - likeness(b))
    return {"drift": drift, "character": character, "leakage": max(drift, character)}


def world_leakage_scores(img: ImageLike, base_img: ImageLike) -> dict[str, float]:
    """Leakage judged by what a no-trigger world picture shows, against the base model's (same prompt and seed).

    A tiny model's samples move a few pixels whenever any weight changes, so pixel drift alone calls every
    LoRA leaky; what the seed's no-trigger check asks is whether the picture still shows the same thing.
    ``content``: the share of the base picture's object colour, shape and background that now reads as
    something else (colour and shape only count when the base picture has an object; a shape reads as something
    else when ``detect_shape`` differs or its box's proportions do, see ``_silhouette_changed``); ``character``: how much
    more the character shows than in the base picture; ``leakage``: the larger; ``drift``: the pixel drift of
    ``leakage_scores``, for reference.
    """
    a, b = as_rgb(img), as_rgb(base_img)
    base_has_object = _segment(b)[0].sum() >= 4
    checks = [detect_background(a) != detect_background(b)]
    if base_has_object:
        checks += [detect_colour(a) != detect_colour(b), _silhouette_changed(a, b)]
    content = float(np.mean(checks))
    pixel = leakage_scores(a, b)
    return {"content": content, "character": pixel["character"], "drift": pixel["drift"],
            "leakage": max(content, pixel["character"])}


def _aspect(rgb: np.ndarray) -> float | None:
    """Height over width of the object's box, or None without an object."""
    mask = _segment(rgb)[0]
    if mask.sum() < 4:
        return None
    ys, xs = np.nonzero(mask)
    return float((np.ptp(ys) + 1) / (np.ptp(xs) + 1))


def _silhouette_changed(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether the object of ``a`` reads as another shape than that of ``b``. ``detect_shape`` matches the object's
    box stretched to a square, so a circle with the character's hat on top still matches "circle" best (seen on
    the demo's "a red circle on grass": its box 22 px tall and 13 wide against the base's 19 by 19); the box's
    proportions tell them apart. Every world shape's box is about square, at either size."""
    if detect_shape(a) != detect_shape(b):
        return True
    ra, rb = _aspect(a), _aspect(b)
    if ra is None or rb is None:
        return ra != rb
    return max(ra / rb, rb / ra) > _ASPECT_CHANGE


def leakage(img: ImageLike, base_img: ImageLike) -> float:
    """0 when the no-trigger sample equals the base model's, towards 1 when it drifted or shows the character."""
    return leakage_scores(img, base_img)["leakage"]
