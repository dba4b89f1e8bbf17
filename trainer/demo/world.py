"""The demo world: simple captioned scenes, and the demo character "zxc" that the world never shows.

A tiny SD1.5-shaped model is trained from scratch on ``world_dataset`` scenes (one coloured shape on a plain
background); the character is then taught to it as a LoRA, so a newcomer sees underfit, fit and overfit in
pictures on a CPU. Everything is deterministic from a seed. Caption grammar:

- world scene:  ``"a red circle on grass, left, small"`` (article, colour, shape, ``on`` background, position, size)
- character:    ``"zxc, wearing a red hat, on grass, left, small"`` (trigger first, comma-separated tags)

The character's own features (magenta diamond body, yellow stripes, two eyes) are left out of its captions so
that the trigger absorbs them; the hat (outfit), background, position and size are written in so that prompts
can change them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

RGB = tuple[int, int, int]

SHAPES: tuple[str, ...] = ("circle", "square", "triangle", "star", "cross", "ring")
# Hues kept far apart (and far from the character's magenta) so a blurry 64 px sample still reads as one colour.
COLOURS: dict[str, RGB] = {
    "red": (215, 35, 35),
    "orange": (245, 135, 20),
    "yellow": (245, 215, 30),
    "green": (40, 170, 60),
    "blue": (35, 75, 215),
    "white": (248, 248, 248),
    "black": (22, 22, 22),
}
BACKGROUNDS: dict[str, RGB] = {
    "sky": (140, 195, 235),
    "grass": (95, 150, 65),
    "sand": (218, 202, 165),
    "night": (22, 28, 62),
    "snow": (232, 236, 242),
    "stone": (128, 128, 132),
}
# Shape colour and background too alike to see the shape: never sampled.
CLASHES: frozenset[tuple[str, str]] = frozenset({("green", "grass"), ("white", "snow"), ("black", "night")})
# Centre of the shape as (x, y) fractions of the image side.
POSITIONS: dict[str, tuple[float, float]] = {
    "left": (0.28, 0.5),
    "right": (0.72, 0.5),
    "center": (0.5, 0.5),
    "top": (0.5, 0.28),
    "bottom": (0.5, 0.72),
}
# Side of the shape's box as a fraction of the image side.
SIZES: dict[str, float] = {"small": 0.26, "large": 0.48}

TRIGGER = "zxc"
CHARACTER_COLOURS: dict[str, RGB] = {"body": (230, 40, 180), "stripes": (250, 220, 40)}
CHARACTER_SIZES: dict[str, float] = {"small": 0.32, "large": 0.52}  # the character is drawn a little bigger
OUTFITS: tuple[str, ...] = ("red", "green", "blue", "black")  # hat colours, named as in COLOURS
DEFAULT_OUTFIT = "red"
ABSORBED_WORDS: tuple[str, ...] = ("magenta", "pink", "purple", "yellow", "stripes", "striped", "diamond", "eyes")

# What the character dataset shows; the rest is held out so sample prompts test generalisation.
TRAIN_BACKGROUNDS: tuple[str, ...] = ("sky", "grass", "sand")
TRAIN_POSITIONS: tuple[str, ...] = ("left", "center", "bottom")
TRAIN_OUTFITS: tuple[str, ...] = ("red", "green")

SUPERSAMPLE = 4  # draw at 4x and box-downsample: cheap antialiasing
_JITTER_POS = 0.03  # fraction of the image side
_JITTER_SIZE = 0.08  # relative
_JITTER_RGB_SHAPE = 10
_JITTER_RGB_BACKGROUND = 6


@dataclass(frozen=True)
class Scene:
    """One picture of the demo world. ``shape == TRIGGER`` draws the character; ``outfit`` is its hat colour."""

    shape: str
    colour: str
    background: str
    position: str
    size: str
    outfit: str | None = None

    def __post_init__(self) -> None:
        if self.is_character:
            if self.outfit is not None and self.outfit not in OUTFITS:
                raise ValueError(f"outfit {self.outfit!r} is not one of {OUTFITS}")
        else:
            _check(self.shape, SHAPES, "shape")
            _check(self.colour, COLOURS, "colour")
            if self.outfit is not None:
                raise ValueError("only the character wears an outfit")
        _check(self.background, BACKGROUNDS, "background")
        _check(self.position, POSITIONS, "position")
        _check(self.size, SIZES, "size")

    @property
    def is_character(self) -> bool:
        return self.shape == TRIGGER


def _check(value: str, allowed: Any, what: str) -> None:
    if value not in allowed:
        raise ValueError(f"{what} {value!r} is not one of {tuple(allowed)}")


def character_scene(
    background: str = "grass", position: str = "center", size: str = "large", outfit: str | None = DEFAULT_OUTFIT
) -> Scene:
    """The demo character on a world background; ``outfit`` is a hat colour from ``OUTFITS`` or None (no hat)."""
    return Scene(TRIGGER, "magenta", background, position, size, outfit)


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def caption(scene: Scene, write_outfit: bool = True, write_features: bool = False) -> str:
    """The scene's caption in the demo grammar (see the module docstring).

    For the character, ``write_outfit`` writes its hat in ("wearing a red hat"); ``write_features`` writes the
    features the trigger should absorb (the captioning mistake the seed warns about, for teaching runs).
    """
    if not scene.is_character:
        thing, background, position, size = _world_tags(scene)
        return f"{thing} {background}, {position}, {size}"
    where = f"{scene.background}, {scene.position}, {scene.size}"
    tags = [TRIGGER]
    if write_features:
        tags.append("a magenta diamond with yellow stripes and two eyes")
    if write_outfit and scene.outfit is not None:
        tags.append(f"wearing {_article(scene.outfit)} {scene.outfit} hat")
    tags.append(f"on {where}")
    return ", ".join(tags)


def _world_tags(scene: Scene) -> tuple[str, str, str, str]:
    """A world scene's four tags: "a red circle", "on grass", position, size."""
    return f"{_article(scene.colour)} {scene.colour} {scene.shape}", f"on {scene.background}", scene.position, scene.size


def varied_caption(scene: Scene, rng: np.random.Generator, canonical_share: float = 1 / 3,
                   tag_drop: float = 0.15) -> str:
    """A world scene's caption for base training with varied word order: the canonical caption for
    ``canonical_share`` of scenes, otherwise its tags ("a red circle", "on grass", position, size) in a random
    order, with position and size each left out with probability ``tag_drop``.

    Real captions come in any order; a text encoder that only ever saw one order reads words by their slot.
    On the committed base (canonical captions only) a character LoRA draws "zxc, right, on snow" more often
    than "zxc, on snow, right", where "on snow" sits in the world captions' background slot (0.79 vs 0.01 and
    0.67 vs 0.48 likeness on two training seeds; docs/demo.md, Demo status)."""
    if scene.is_character:
        raise ValueError("varied_caption is for world scenes; the character's captions come from caption()")
    if rng.random() < canonical_share:
        return caption(scene)
    thing, background, position, size = _world_tags(scene)
    tags = [thing, background] + [t for t in (position, size) if rng.random() >= tag_drop]
    return ", ".join(tags[i] for i in rng.permutation(len(tags)))


def sample_scene(rng: np.random.Generator) -> Scene:
    """A uniformly random world scene (never the character, never a shape the background would hide)."""
    while True:
        colour = str(rng.choice(list(COLOURS)))
        background = str(rng.choice(list(BACKGROUNDS)))
        if (colour, background) not in CLASHES:
            break
    return Scene(
        shape=str(rng.choice(SHAPES)),
        colour=colour,
        background=background,
        position=str(rng.choice(list(POSITIONS))),
        size=str(rng.choice(list(SIZES))),
    )


def _jitter_rgb(rgb: RGB, rng: np.random.Generator | None, amount: int) -> RGB:
    if rng is None:
        return rgb
    d = rng.integers(-amount, amount + 1, size=3)
    return tuple(int(np.clip(c + x, 0, 255)) for c, x in zip(rgb, d))  # type: ignore[return-value]


def _star(cx: float, cy: float, r: float) -> list[tuple[float, float]]:
    pts = []
    for i in range(10):
        rad = r if i % 2 == 0 else 0.45 * r
        a = -np.pi / 2 + i * np.pi / 5
        pts.append((cx + rad * np.cos(a), cy + 0.05 * r + rad * np.sin(a)))
    return pts


def _draw_shape(draw: ImageDraw.ImageDraw, shape: str, cx: float, cy: float, side: float, rgb: RGB) -> None:
    h = side / 2
    if shape == "circle":
        draw.ellipse([cx - h, cy - h, cx + h, cy + h], fill=rgb)
    elif shape == "square":
        q = 0.85 * h  # a square looks bigger than a circle of the same box
        draw.rectangle([cx - q, cy - q, cx + q, cy + q], fill=rgb)
    elif shape == "triangle":
        # centroid on (cx, cy): apex 1.1h above, base 0.55h below
        draw.polygon([(cx, cy - 1.1 * h), (cx + h, cy + 0.55 * h), (cx - h, cy + 0.55 * h)], fill=rgb)
    elif shape == "star":
        draw.polygon(_star(cx, cy, h), fill=rgb)
    elif shape == "cross":
        t = 0.19 * side
        q = 0.95 * h
        draw.rectangle([cx - t, cy - q, cx + t, cy + q], fill=rgb)
        draw.rectangle([cx - q, cy - t, cx + q, cy + t], fill=rgb)
    elif shape == "ring":
        draw.ellipse([cx - h, cy - h, cx + h, cy + h], outline=rgb, width=max(1, round(0.42 * h)))
    else:
        raise ValueError(f"unknown shape {shape!r}")


def _draw_character(draw: ImageDraw.ImageDraw, cx: float, cy: float, side: float, outfit: str | None) -> None:
    """A magenta diamond with two yellow stripes and two eyes, in a hat; ``side`` is the height of the whole."""
    L = side
    y0 = cy - L / 2
    yc, a, b = y0 + 0.55 * L, 0.37 * L, 0.45 * L  # body centre, half-width, half-height
    draw.polygon([(cx, yc - b), (cx + a, yc), (cx, yc + b), (cx - a, yc)], fill=CHARACTER_COLOURS["body"])

    def half_width(y: float) -> float:
        return a * (1 - abs(y - yc) / b)

    for top, bottom in ((0.04, 0.15), (0.24, 0.34)):
        y1, y2 = yc + top * L, yc + bottom * L
        w1, w2 = half_width(y1), half_width(y2)
        draw.polygon([(cx - w1, y1), (cx + w1, y1), (cx + w2, y2), (cx - w2, y2)], fill=CHARACTER_COLOURS["stripes"])
    for sx in (-1, 1):
        ex, ey = cx + sx * 0.13 * L, yc - 0.1 * L
        r, p = 0.075 * L, 0.04 * L
        draw.ellipse([ex - r, ey - r, ex + r, ey + r], fill=COLOURS["white"])
        draw.ellipse([ex - p, ey - p + 0.01 * L, ex + p, ey + p + 0.01 * L], fill=COLOURS["black"])
    if outfit is not None:
        hat = COLOURS[outfit]
        draw.rectangle([cx - 0.16 * L, y0, cx + 0.16 * L, y0 + 0.2 * L], fill=hat)
        draw.rectangle([cx - 0.26 * L, y0 + 0.18 * L, cx + 0.26 * L, y0 + 0.25 * L], fill=hat)


def render_scene(scene: Scene, size: int = 64, rng: np.random.Generator | None = None) -> Image.Image:
    """Draw ``scene`` as a ``size``x``size`` RGB image (drawn at 4x, box-downsampled).

    With ``rng`` the colours, position and size are jittered a little (training variety); without it the
    render is the canonical one.
    """
    big = size * SUPERSAMPLE
    img = Image.new("RGB", (big, big), _jitter_rgb(BACKGROUNDS[scene.background], rng, _JITTER_RGB_BACKGROUND))
    draw = ImageDraw.Draw(img)
    fx, fy = POSITIONS[scene.position]
    scale = (CHARACTER_SIZES if scene.is_character else SIZES)[scene.size]
    if rng is not None:
        fx += rng.uniform(-_JITTER_POS, _JITTER_POS)
        fy += rng.uniform(-_JITTER_POS, _JITTER_POS)
        scale *= 1 + rng.uniform(-_JITTER_SIZE, _JITTER_SIZE)
    half = scale / 2 + 0.02  # keep the whole shape inside the frame
    fx, fy = float(np.clip(fx, half, 1 - half)), float(np.clip(fy, half, 1 - half))
    if scene.is_character:
        _draw_character(draw, fx * big, fy * big, scale * big, scene.outfit)
    else:
        rgb = _jitter_rgb(COLOURS[scene.colour], rng, _JITTER_RGB_SHAPE)
        _draw_shape(draw, scene.shape, fx * big, fy * big, scale * big, rgb)
    return img.resize((size, size), Image.Resampling.BOX)


def world_dataset(n: int, seed: int, size: int = 64) -> list[tuple[Image.Image, str]]:
    """``n`` random world scenes with their captions, the same for the same seed."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        scene = sample_scene(rng)
        out.append((render_scene(scene, size, rng), caption(scene)))
    return out


@dataclass(frozen=True)
class DemoPrompt:
    """A review prompt of one of the seed's four kinds, with what a good sample shows (keys as in ``adherence``)."""

    kind: str  # trigger_only | unseen_pose_background | other_outfit | no_trigger
    prompt: str
    expected: dict[str, Any] = field(default_factory=dict)


def demo_prompt_specs() -> list[DemoPrompt]:
    """The four review prompts: trigger only; unseen background and position; another hat; no trigger."""
    return [
        DemoPrompt("trigger_only", TRIGGER, {"character": True}),
        DemoPrompt("unseen_pose_background", f"{TRIGGER}, on snow, right",
                   {"character": True, "background": "snow", "position": "right"}),
        DemoPrompt("other_outfit", f"{TRIGGER}, wearing a blue hat", {"character": True, "outfit": "blue"}),
        DemoPrompt("no_trigger", "a red circle on grass, left, small",
                   {"character": False, "shape": "circle", "colour": "red", "background": "grass",
                    "position": "left", "size": "small"}),
    ]


def demo_sample_prompts() -> list[str]:
    """The review prompts' text, in the order of ``demo_prompt_specs``."""
    return [p.prompt for p in demo_prompt_specs()]
