"""Mask a folder: every picture the scan would train on (``fill``: those without a mask yet), through one mask
maker; each probability map cut at ``threshold`` (0 keeps it soft), grown by ``expand`` pixels so the subject's
edge stays inside, and written beside its picture as ``name-masklabel.png`` (white learns) in one journaled change
set (Undo). A picture that cannot be read is named and skipped; ``stop()`` is asked between pictures.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from PIL import Image

from trainer.caption.journal import apply_changes
from trainer.caption.run import FolderRun, Picture, Progress, pictures_of, seconds_left
from trainer.data.folders import MASK_SUFFIX, mask_file
from trainer.data.images import has_transparency, load_image_rgb
from trainer.errors import UserError
from trainer.masking.makers import Masker
from trainer.message import msg

Mode = Literal["fill", "overwrite"]
MODES: tuple[Mode, ...] = ("fill", "overwrite")
MAX_EXPAND = 256
THIN, WIDE = 0.02, 0.98
"""A mask covering less (more) of its picture than this is named: the words found nothing (took everything)."""


@dataclass
class MaskRun(FolderRun):
    """A mask run: its results are ``{"file", "mask", "coverage"}`` (the share of the picture the mask keeps)."""

    masks: dict[str, np.ndarray] = field(default_factory=dict)
    """A preview's masks by picture (``keep=True``), to be shown over their pictures."""

    @property
    def odd(self) -> list[dict[str, Any]]:
        """The masks that cover almost none or almost all of their picture."""
        return [r for r in self.results if not THIN <= r["coverage"] <= WIDE]


def has_mask(picture: Path) -> bool:
    """A mask file beside it, or transparency of its own (masked training reads either)."""
    if mask_file(picture) is not None:
        return True
    try:
        with Image.open(picture) as im:
            return has_transparency(im)
    except Exception:  # unreadable: the masking names it
        return False


def mask_path(picture: Path) -> Path:
    """Where a picture's mask goes: over the one it has (any case), else ``name-masklabel.png``."""
    return mask_file(picture) or picture.with_name(picture.stem + MASK_SUFFIX + ".png")


def dilate(mask: np.ndarray, pixels: int) -> np.ndarray:
    """The largest value within ``pixels`` of each pixel (a square), rows then columns."""
    def rows(a: np.ndarray) -> np.ndarray:
        out = a.copy()
        for s in range(1, min(pixels, a.shape[0] - 1) + 1):
            np.maximum(out[s:], a[:-s], out=out[s:])
            np.maximum(out[:-s], a[s:], out=out[:-s])
        return out

    return rows(rows(mask).T).T if pixels > 0 else mask


def finish(prob: np.ndarray, threshold: float, expand: int) -> np.ndarray:
    """A maker's probabilities as the mask written: 8-bit grey, white the subject."""
    m = (prob >= threshold).astype(np.float32) if threshold > 0 else prob
    return np.round(dilate(m, min(expand, MAX_EXPAND)) * 255).astype(np.uint8)


def png_bytes(mask: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(mask, mode="L").save(buf, format="PNG")
    return buf.getvalue()


def overlay(picture: Image.Image, mask: np.ndarray) -> Image.Image:
    """The picture with what the mask leaves out dimmed and tinted: what the preview shows."""
    rgb = np.asarray(picture.convert("RGB"), np.float32)
    m = mask.astype(np.float32)[..., None] / 255.0
    left = rgb * 0.3 + np.asarray([40, 40, 90], np.float32) * 0.7
    return Image.fromarray(np.round(rgb * m + left * (1 - m)).astype(np.uint8), mode="RGB")


def check(threshold: float, expand: int) -> None:
    if not 0 <= threshold < 1:
        raise UserError(msg("mask.error.threshold", value=threshold))
    if not 0 <= expand <= MAX_EXPAND:
        raise UserError(msg("mask.error.expand", value=expand, most=MAX_EXPAND))


def mask_folder(root: str | Path, masker: Masker, *, prompt: str = "", mode: Mode = "fill", threshold: float = 0.4,
                expand: int = 8, caption_ext: str = ".txt", limit: int | None = None, write: bool = True,
                keep: bool = False, progress: Progress | None = None,
                stop: Callable[[], bool] | None = None) -> MaskRun:
    """Mask the pictures of ``root`` that ``mode`` lets change; ``limit`` only the first so many, ``write=False``
    proposes without touching a file (``keep`` holds the masks for showing)."""
    check(threshold, expand)
    start = time.monotonic()
    folder, pictures = pictures_of(root, caption_ext)
    if not pictures:
        raise UserError(msg("mask.error.no_pictures", root=folder))
    run = MaskRun(str(folder), mode)
    todo: list[Picture] = [p for p in pictures if mode == "overwrite" or not has_mask(p.path)]
    run.kept = len(pictures) - len(todo)
    if limit is not None:
        todo = todo[:limit]
    changes: dict[Path, bytes] = {}
    what = msg("mask.change.run", kind=msg(f"mask.kind.{masker.kind}"), model=masker.model, mode=mode)
    for i, p in enumerate(todo):
        if stop is not None and stop():
            run.stopped = True
            break
        try:
            image = load_image_rgb(p.path)
        except Exception as e:  # named and skipped; the rest is still masked
            run.failed.append({"file": p.rel, "reason": (str(e).strip() or type(e).__name__)[:200]})
            continue
        try:
            prob = masker.probabilities([image], prompt)[0]
        except UserError:
            raise
        except Exception as e:  # the maker itself failed (out of memory, a broken graph): keep what it made
            if not write or not changes:
                raise
            apply_changes(folder, changes, what, journal="masks")
            raise UserError(msg("mask.error.failed", file=p.rel, n=len(changes),
                                reason=(str(e).strip().splitlines() or [type(e).__name__])[0][:200])) from e
        mask = finish(prob, threshold, expand)
        target = mask_path(p.path)
        run.results.append({"file": p.rel, "mask": target.relative_to(folder).as_posix(),
                            "coverage": round(float(mask.mean()) / 255.0, 4)})
        changes[target] = png_bytes(mask)
        if keep:
            run.masks[p.rel] = mask
        if progress is not None:
            progress(i + 1, len(todo), seconds_left(i + 1, len(todo), time.monotonic() - start))
    if write:
        run.change = apply_changes(folder, changes, what, journal="masks")
    run.seconds = time.monotonic() - start
    return run
