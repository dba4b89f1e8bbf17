"""The demo's datasets on disk: world scenes, the prior images beside the character, and the character's LoRA
dataset, each a kohya folder of ``.png`` pictures with ``.txt`` captions. What they show is :mod:`trainer.demo.world`.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from trainer.demo.world import (
    BACKGROUNDS,
    CLASHES,
    DEFAULT_OUTFIT,
    OUTFITS,
    POSITIONS,
    SHAPES,
    SIZES,
    TRAIN_BACKGROUNDS,
    TRAIN_OUTFITS,
    TRAIN_POSITIONS,
    TRIGGER,
    Scene,
    caption,
    character_scene,
    demo_prompt_specs,
    render_scene,
    sample_scene,
)
from trainer.io import atomic_write_bytes, atomic_write_json, atomic_write_text

# Share of the prior images drawn in the words the character's captions use ("red" of "wearing a red hat", "on grass",
# "left"...). Uniform world scenes hold those words too rarely (2 red shapes and 3 grass scenes in 30): the LoRA then
# drew "a red circle on grass" with the character's hat on it.
PRIOR_CAPTION_WORDS_SHARE = 0.5


def _png_bytes(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def write_world_dataset(out_dir: str | Path, n: int, seed: int, size: int = 64,
                        draw: Callable[[np.random.Generator], Scene] = sample_scene) -> dict[str, Any]:
    """Write ``n`` world scenes (``draw``: uniformly random by default) as ``world_NNNNN.png`` + ``.txt`` into
    ``out_dir``; return counts per attribute."""
    out = Path(out_dir)
    rng = np.random.default_rng(seed)
    counts: dict[str, Counter[str]] = {k: Counter() for k in ("shape", "colour", "background", "position", "size")}
    for i in range(n):
        scene = draw(rng)
        atomic_write_bytes(out / f"world_{i:05d}.png", _png_bytes(render_scene(scene, size, rng)))
        atomic_write_text(out / f"world_{i:05d}.txt", caption(scene) + "\n")
        for k, c in counts.items():
            c[getattr(scene, k)] += 1
    return {"folder": str(out), "n": n, "seed": seed, "size": size, "counts": {k: dict(c) for k, c in counts.items()}}


def caption_word_scene(rng: np.random.Generator) -> Scene:
    """A world scene in the words the character's captions use: a shape in a hat colour of its dataset
    (``TRAIN_OUTFITS``) on one of its backgrounds, at one of its positions."""
    while True:
        colour, background = str(rng.choice(TRAIN_OUTFITS)), str(rng.choice(TRAIN_BACKGROUNDS))
        if (colour, background) not in CLASHES:
            break
    return Scene(str(rng.choice(SHAPES)), colour, background, str(rng.choice(TRAIN_POSITIONS)),
                 str(rng.choice(list(SIZES))))


def write_prior_dataset(out_dir: str | Path, n: int = 30, seed: int = 1, repeats: int = 1, size: int = 64,
                        caption_words_share: float = PRIOR_CAPTION_WORDS_SHARE) -> Path:
    """Prior images for the character's LoRA (``dataset.reg_path``): world scenes with their own captions, in a
    kohya ``<repeats>_world`` folder. Trained beside the character, they hold the world's prompts where the
    base model drew them, so the character stays behind its trigger. ``caption_words_share`` of them are drawn
    in the words the character's captions use (:func:`caption_word_scene`), the rest uniformly; none shows the
    review's no-trigger scene (its shape and colour on its background). Returns ``out_dir``."""

    review = next(p.expected for p in demo_prompt_specs() if not p.expected.get("character"))

    def draw(rng: np.random.Generator) -> Scene:
        while True:  # the review's no-trigger scene itself stays out: that check asks about unseen pictures
            scene = caption_word_scene(rng) if rng.random() < caption_words_share else sample_scene(rng)
            if (scene.shape, scene.colour, scene.background) != (review["shape"], review["colour"], review["background"]):
                return scene

    write_world_dataset(Path(out_dir) / f"{repeats}_world", n, seed, size, draw)
    return Path(out_dir)


def write_character_dataset(
    out_dir: str | Path,
    n_images: int = 20,
    seed: int = 0,
    repeats_folder: str = "10_zxc",
    size: int = 64,
    write_outfit: bool = True,
    write_features: bool = False,
) -> dict[str, Any]:
    """Write the character's LoRA dataset as kohya ``out_dir/<repeats_folder>/zxc_NNN.png`` + ``.txt``.

    Captions follow the seed's advice: trigger first, background/position/size and the hat written in, the
    features to be absorbed left out. Only ``TRAIN_BACKGROUNDS``, ``TRAIN_POSITIONS`` and ``TRAIN_OUTFITS``
    appear (mostly the default red hat), so sample prompts can ask for what the data never showed. Returns
    the manifest (also written to ``out_dir/demo_manifest.json``).
    """
    match = re.fullmatch(r"(\d+)_(.+)", repeats_folder)
    if match is None:
        raise ValueError(f"repeats_folder {repeats_folder!r} must look like '10_zxc' (repeats, underscore, name)")
    if n_images < 4:
        raise ValueError("n_images must be at least 4 (the default outfit and another one, twice each)")
    rng = np.random.default_rng(seed)
    combos = [(b, p, s) for b in TRAIN_BACKGROUNDS for p in TRAIN_POSITIONS for s in SIZES]
    order: list[tuple[str, str, str]] = []
    while len(order) < n_images:  # every combination once before any repeats
        order += [combos[i] for i in rng.permutation(len(combos))]
    n_other = max(2, round(0.2 * n_images))
    other_idx = set(rng.choice(n_images, size=n_other, replace=False).tolist())
    folder = Path(out_dir) / repeats_folder
    files = []
    for i, (background, position, size_name) in enumerate(order[:n_images]):
        outfit = TRAIN_OUTFITS[1] if i in other_idx else DEFAULT_OUTFIT
        scene = character_scene(background, position, size_name, outfit)
        text = caption(scene, write_outfit=write_outfit, write_features=write_features)
        atomic_write_bytes(folder / f"zxc_{i:03d}.png", _png_bytes(render_scene(scene, size, rng)))
        atomic_write_text(folder / f"zxc_{i:03d}.txt", text + "\n")
        files.append({"image": f"zxc_{i:03d}.png", "caption": text, "background": background,
                      "position": position, "size": size_name, "outfit": outfit})
    manifest = {
        "trigger": TRIGGER,
        "folder": repeats_folder,
        "repeats": int(match.group(1)),
        "n_images": n_images,
        "seed": seed,
        "size": size,
        "captions": {"outfit_written": write_outfit, "features_written": write_features},
        "absorbed_features": ["magenta diamond body", "two yellow stripes", "two eyes"],
        "train": {
            "backgrounds": list(TRAIN_BACKGROUNDS),
            "positions": list(TRAIN_POSITIONS),
            "sizes": list(SIZES),
            "outfits": dict(Counter(f["outfit"] for f in files)),
        },
        "held_out": {
            "backgrounds": [b for b in BACKGROUNDS if b not in TRAIN_BACKGROUNDS],
            "positions": [p for p in POSITIONS if p not in TRAIN_POSITIONS],
            "outfits": [o for o in OUTFITS if o not in TRAIN_OUTFITS],
        },
        "review_prompts": [{"kind": p.kind, "prompt": p.prompt, "expected": p.expected} for p in demo_prompt_specs()],
        "files": files,
    }
    atomic_write_json(Path(out_dir) / "demo_manifest.json", manifest)
    return manifest
