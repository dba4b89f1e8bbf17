"""Caption a folder: every picture the scan would train on, in batches, through one captioner; the captions merged
by mode (fill, overwrite, append), the trigger first, then written in one journaled change set (Undo).

A picture that cannot be read is named and skipped; the others are still captioned. ``stop()`` is asked between
batches: what was captioned by then is written (each caption old or new), the rest stays as it was.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer.caption.compose import Mode, final_caption
from trainer.caption.journal import ChangeSet, apply_changes
from trainer.caption.models import Captioner
from trainer.config.schema import DatasetConfig
from trainer.data.folders import check_root, discover_folders
from trainer.data.images import load_image_rgb
from trainer.errors import UserError
from trainer.message import msg

Progress = Callable[[int, int, float | None], None]
"""``progress(done, total, seconds_left)``: seconds_left is None until the first batch has been timed."""


@dataclass(frozen=True)
class Picture:
    path: Path
    rel: str
    caption_path: Path
    old: str
    """The caption file's text ("" when there is none, it is empty or it is not UTF-8)."""


@dataclass
class FolderRun:
    """What a run over a dataset's pictures did (a captioner's or a mask maker's): a result per picture, the
    pictures it could not read, the change set Undo takes back."""

    root: str
    mode: str
    results: list[dict[str, Any]] = field(default_factory=list)
    """One per picture done (written or, in a preview, proposed): ``{"file", ...}``."""
    kept: int = 0
    """Pictures left as they were: fill mode and a caption (a mask) already there."""
    failed: list[dict[str, str]] = field(default_factory=list)
    """``{"file", "reason"}`` for each picture that could not be read."""
    change: ChangeSet | None = None
    stopped: bool = False
    seconds: float = 0.0

    @property
    def written(self) -> int:
        return len(self.change.files) if self.change else 0

    def to_json(self) -> dict[str, Any]:
        return {"root": self.root, "mode": self.mode, "written": self.written, "kept": self.kept,
                "failed": self.failed, "stopped": self.stopped, "seconds": round(self.seconds, 3),
                "journal": str(self.change.path) if self.change else None, "results": self.results}


@dataclass
class CaptionRun(FolderRun):
    """A caption run: its results are ``{"file", "old", "new"}``."""


def read_caption(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8-sig").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def pictures_of(root: str | Path, caption_ext: str = ".txt") -> tuple[Path, list[Picture]]:
    """The dataset folder (checked as the scan checks it) and its pictures, in the scan's order, with their
    captions. Folders of 0 repeats are left out, as training leaves them out."""
    folder = check_root(str(root))
    cfg = DatasetConfig(path=str(folder), caption_ext=caption_ext)
    folders, _ = discover_folders(folder, cfg)
    out = []
    for f in folders:
        for path in f.files:
            cap = path.with_suffix(caption_ext)
            out.append(Picture(path, path.relative_to(folder).as_posix(), cap, read_caption(cap)))
    return folder, out


def seconds_left(done: int, total: int, elapsed: float) -> float | None:
    """Time left at the pace so far; None before anything is done."""
    return None if done <= 0 else elapsed / done * (total - done)


def caption_folder(root: str | Path, captioner: Captioner, *, mode: Mode = "fill", trigger: str = "",
                   exclude: list[str] | None = None, caption_ext: str = ".txt", batch_size: int = 8,
                   limit: int | None = None, write: bool = True, progress: Progress | None = None,
                   stop: Callable[[], bool] | None = None) -> CaptionRun:
    """Caption the pictures of ``root`` that ``mode`` lets change; ``limit`` only the first so many (a preview),
    ``write=False`` proposes without touching a file."""
    start = time.monotonic()
    folder, pictures = pictures_of(root, caption_ext)
    if not pictures:
        raise UserError(msg("caption.error.no_pictures", root=folder))
    run = CaptionRun(str(folder), mode)
    todo = [p for p in pictures if not (mode == "fill" and p.old)]
    run.kept = len(pictures) - len(todo)
    if limit is not None:
        todo = todo[:limit]
    changes: dict[Path, str] = {}
    done = 0
    for i in range(0, len(todo), batch_size):
        if stop is not None and stop():
            run.stopped = True
            break
        batch, images = [], []
        for p in todo[i:i + batch_size]:
            try:
                images.append(load_image_rgb(p.path))
                batch.append(p)
            except Exception as e:  # any unreadable file is named and skipped; the rest is still captioned
                run.failed.append({"file": p.rel, "reason": (str(e).strip() or type(e).__name__)[:200]})
        for p, raw in zip(batch, captioner.caption(images) if images else []):
            new = final_caption(p.old, raw, mode, trigger, exclude)
            run.results.append({"file": p.rel, "old": p.old, "new": new})
            changes[p.caption_path] = new
        done += len(todo[i:i + batch_size])
        if progress is not None:
            progress(done, len(todo), seconds_left(done, len(todo), time.monotonic() - start))
    if write:
        what = msg("caption.change.run", kind=msg(f"caption.kind.{captioner.kind}"), model=captioner.model, mode=mode)
        run.change = apply_changes(folder, changes, what)
    run.seconds = time.monotonic() - start
    return run
