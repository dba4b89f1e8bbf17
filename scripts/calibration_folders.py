"""The demo character's pictures and the prior scenes as a user would have them, in plain folders (no demo
manifest), and the same pictures with one thing wrong: the folders ``doctor_calibration.py`` and the other doctor
scripts train on."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

WRONG_PICTURE = "zxc_007.png"
RECAPTIONED: dict[str, Callable[[str], str]] = {  # folder my-character-NAME: each caption as the user wrote it
    "star": lambda text: text.replace("zxc", "star", 1),  # the trigger an everyday word the base model draws
    "trigger-last": lambda text: text.strip().removeprefix("zxc, ") + ", zxc\n",  # after the tags kept in place
    "trigger-only": lambda text: "zxc\n",  # every caption the trigger alone
}
MIXED_SIZES = ((96, 64), (64, 96), (256, 256))  # in turn: wide, tall, upscaled; every fourth picture a JPEG


def _mix_sizes(folder: Path) -> None:
    """The pictures as a folder gathered from a phone and the web has them: each in turn wide, tall or upscaled
    (stretched: the subject drawn smaller or larger than in the others), every fourth saved as a JPEG."""
    from PIL import Image

    for i, png in enumerate(sorted(folder.rglob("*.png"))):
        picture = Image.open(png).convert("RGB").resize(MIXED_SIZES[i % 3], Image.Resampling.LANCZOS)
        if i % 4 == 0:
            picture.save(png.with_suffix(".jpg"), quality=90)
            png.unlink()
        else:
            picture.save(png)


def write_plain_folders(root: Path) -> tuple[Path, Path]:
    """The character's folder and the prior scenes' (and the demo's own folder, with its manifest, for
    ``--judged``; the look-captioned folder; one picture that is not the character, its caption unchanged; the
    ``RECAPTIONED`` ones; the pictures in mixed sizes and formats). Returns the character's folder and the prior's."""
    from trainer.demo.datasets import write_character_dataset, write_prior_dataset
    from trainer.demo.world import Scene, render_scene

    data, prior = root / "my-character", root / "my-prior"
    for folder, features in ((data, False), (root / "my-character-features", True)):
        if not folder.is_dir():
            write_character_dataset(folder, write_features=features)
            (folder / "demo_manifest.json").unlink()
    if not prior.is_dir():
        write_prior_dataset(prior)
        for extra in prior.glob("*.json"):
            extra.unlink()
    if not (root / "demo-character").is_dir():
        write_character_dataset(root / "demo-character")
    for name in ("one-wrong", "mixed", *RECAPTIONED):
        if not (copy := root / f"my-character-{name}").is_dir():
            shutil.copytree(data, copy)
            if name == "one-wrong":
                render_scene(Scene("square", "blue", "sky", "center", "large"), 64).save(copy / "10_zxc" / WRONG_PICTURE)
            if name == "mixed":
                _mix_sizes(copy)
            for caption in copy.rglob("*.txt") if name in RECAPTIONED else ():
                caption.write_text(RECAPTIONED[name](caption.read_text(encoding="utf-8")), encoding="utf-8")
    return data, prior
