"""Which folders and files a scan reads: the dataset folder (and the prior-image folder), kohya's ``N_name``
folders with their repeats, and the picture files in them; formats it cannot read are named, hidden files skipped.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.config.schema import DatasetConfig
from trainer.data.problems import problem
from trainer.errors import UserError
from trainer.message import msg

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif"})
# Formats people drop in by mistake (phone photos, layered files): named, so they are not silently ignored.
UNSUPPORTED_SUFFIXES = frozenset({".tif", ".tiff", ".heic", ".heif", ".avif", ".jxl", ".psd", ".svg", ".dng"})
KOHYA_FOLDER = re.compile(r"^(\d+)_(.*)$")
MASK_SUFFIX = "-masklabel"  # OneTrainer's mask of ``x.png``, beside it: ``x-masklabel.png``; a mask, not a picture
PRIOR_PREFIX = "reg/"  # prior images' folders and files are named reg/<folder>/... in a report


def check_root(path: str, key: str = "dataset.path") -> Path:
    """The folder ``path`` (of config key ``key``) resolved, or a :class:`UserError` saying what is wrong with it."""
    what = msg({"dataset.reg_path": "error.folder.prior", "validation.path": "error.folder.validation"}.get(
        key, "error.folder.dataset"))
    if not path:
        raise UserError(msg("error.folder.unset", what=what, key=key))
    root = Path(path).expanduser()
    if not root.exists():
        raise UserError(msg("error.folder.not_found", what=what, root=root, key=key))
    if not root.is_dir():
        raise UserError(msg("error.folder.is_file", key=key, root=root))
    try:
        next(root.iterdir(), None)
    except OSError as e:
        raise UserError(msg("error.folder.unreadable", what=what, root=root, reason=e.strerror or e)) from None
    return root.resolve()


def is_mask(path: Path) -> bool:
    """A mask beside its picture (:data:`MASK_SUFFIX`), not a picture to train on or to read colours from."""
    return path.suffix.lower() in IMAGE_SUFFIXES and path.stem.lower().endswith(MASK_SUFFIX)


def mask_file(picture: str | Path) -> Path | None:
    """The mask beside ``picture`` (``x-masklabel.png`` as OneTrainer writes it, in any case and picture format), or
    None."""
    picture = Path(picture)
    try:
        listed = picture.parent.stat().st_mtime_ns
    except OSError:
        return None
    found = _masks_in(picture.parent, listed).get((picture.stem + MASK_SUFFIX).lower())
    return found if found is not None and found.is_file() else None  # (a folder time coarser than its changes)


@functools.lru_cache(maxsize=64)
def _masks_in(folder: Path, mtime_ns: int) -> dict[str, Path]:
    """The masks in ``folder`` by their lower-case stem: read once per state of the folder, not once per picture."""
    try:
        return {p.stem.lower(): p for p in folder.iterdir() if is_mask(p) and p.is_file()}
    except OSError:
        return {}


def _hidden(name: str) -> bool:
    # macOS litters copies with "._x.png" resource forks and __MACOSX; they are not pictures.
    return name.startswith(".") or name == "__MACOSX"


@dataclass
class Folder:
    """One folder a scan reads: its pictures and what kohya's ``N_name`` says about them."""

    name: str
    repeats: int
    class_words: str
    """kohya's words after ``N_`` ("zxc girl"): the caption of a picture that has none."""
    files: list[Path]
    problems: list[dict[str, Any]]
    root: Path
    """Where ``files`` are relative to: ``dataset.path``, or ``dataset.reg_path`` for prior folders."""
    prefix: str = ""
    """Put before names and relative paths: ``reg/`` for prior folders, empty for the dataset's."""

    @property
    def prior(self) -> bool:
        return bool(self.prefix)


def discover_folders(root: Path, cfg: DatasetConfig, prefix: str = "") -> tuple[list[Folder], list[str]]:
    """Folders to read (root first), each with repeats, image files and folder-level problems; names and paths
    carry ``prefix`` (prior folders)."""
    folders: list[Folder] = []
    unsupported: list[str] = []

    def pick(paths: list[Path], where: str, probs: list[dict[str, Any]]) -> list[Path]:
        out, masks = [], 0
        for p in sorted(paths):
            s = p.suffix.lower()
            if is_mask(p):
                masks += 1  # trained as a picture it would teach the trigger a white shape on black
            elif s in IMAGE_SUFFIXES:
                out.append(p)
            elif s in UNSUPPORTED_SUFFIXES:
                unsupported.append(prefix + p.relative_to(root).as_posix())
        if masks:
            probs.append(problem("mask_files", where, n=masks))
        return out

    entries = sorted(e for e in root.iterdir() if not _hidden(e.name))
    root_probs: list[dict[str, Any]] = []
    root_files = pick([e for e in entries if e.is_file()], prefix.rstrip("/") or ".", root_probs)
    if root_files or root_probs:
        folders.append(Folder(prefix.rstrip("/") or ".", cfg.repeats, "", root_files, root_probs, root, prefix))
    for d in (e for e in entries if e.is_dir()):
        m = KOHYA_FOLDER.match(d.name)
        repeats, words, probs = cfg.repeats, "", []
        if m:
            repeats, words = int(m.group(1)), m.group(2).strip()
            if repeats == 0:
                probs.append(problem("zero_repeats", prefix + d.name))
            elif repeats > 100:
                probs.append(problem("high_repeats", prefix + d.name, repeats=repeats))
        files: list[Path] = []
        # Sub-subfolders count towards their top folder (kohya reads one level; people nest anyway).
        for dirpath, dirnames, filenames in os.walk(d):
            dirnames[:] = sorted(n for n in dirnames if not _hidden(n))
            files.extend(Path(dirpath) / n for n in filenames if not _hidden(n))
        files = pick(files, prefix + d.name, probs) if repeats > 0 else []
        folders.append(Folder(prefix + d.name, repeats, words, files, probs, root, prefix))
    return folders, unsupported
