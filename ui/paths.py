"""The path policy: which folders and files a user may name, and how uploads land in the workspace.

On the user's own machine (listening on loopback, not shared) any local path is fine: it is their disk.
While shared, or listening on another interface, every typed path is resolved (symlinks and ``..`` included)
and must lie inside the workspace; anything else is refused with a message saying so. Uploads always land in
``<workspace>/datasets/<name>/``; zip members are checked one by one (no absolute paths, no ``..``, no
links, only pictures and captions, a size budget), so a crafted archive cannot write outside that folder.
"""

from __future__ import annotations

import ipaddress
import re
import shutil
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path

from trainer.dataset import IMAGE_SUFFIXES
from trainer.errors import UserError

from .i18n import t

MAX_UPLOAD = "1gb"  # gradio's max_file_size: one uploaded file
MAX_UNZIPPED_BYTES = 4 * 2**30  # all members of all uploaded zips together
MAX_ZIP_MEMBERS = 20_000
CAPTION_SUFFIXES = frozenset({".txt", ".caption"})
DATASET_SUFFIXES = IMAGE_SUFFIXES | CAPTION_SUFFIXES
_SAFE_NAME = re.compile(r"[^\w.\- ]+", re.UNICODE)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class PathPolicy:
    workspace: Path
    restricted: bool  # shared or listening beyond loopback: paths must stay inside the workspace

    @property
    def root(self) -> Path:
        return self.workspace.resolve()

    def resolve(self, raw: str, what: str, lang: str = "en") -> Path:
        """A typed path, made absolute (relative paths are relative to the workspace) and checked."""
        text = (raw or "").strip().strip('"')
        if not text:
            raise UserError(t("err_empty_path", lang, what=what))
        p = Path(text).expanduser()
        p = (p if p.is_absolute() else self.root / p).resolve()
        if self.restricted and not p.is_relative_to(self.root):
            raise UserError(t("err_outside_workspace", lang, what=what, path=text, workspace=self.root))
        return p

    def resolve_dataset(self, dataset, lang: str = "en") -> None:
        """``dataset.path`` and, when set, ``dataset.reg_path`` of a config section, resolved in place."""
        dataset.path = str(self.resolve(dataset.path, "dataset.path", lang))
        if (dataset.reg_path or "").strip():
            dataset.reg_path = str(self.resolve(dataset.reg_path, "dataset.reg_path", lang))

    def inside(self, base: Path, raw: str, what: str, lang: str = "en") -> Path:
        """A path that must lie inside ``base`` whatever the mode (run folders, files of a dataset)."""
        p = Path((raw or "").strip())
        p = (p if p.is_absolute() else base / p).resolve()
        if not p.is_relative_to(base.resolve()):
            raise UserError(t("err_outside_folder", lang, what=what, path=raw, folder=base))
        return p

    def check_base(self, base: str, lang: str = "en") -> str:
        """model.base: built-in names and hub ids pass; a local folder or file goes through :meth:`resolve`."""
        from trainer.models import BUILTIN_BASES, classify_base

        text = (base or "").strip()
        if text in BUILTIN_BASES:
            return text
        looks_local = text.startswith((".", "/", "~", "\\")) or ":" in text or Path(text).suffix.lower() in (
            ".safetensors", ".ckpt", ".pt", ".bin")
        if looks_local or Path(text).expanduser().exists():
            text = str(self.resolve(text, "model.base", lang))
        classify_base(text)  # a UserError naming what is wrong
        return text


def safe_name(name: str, fallback: str = "dataset") -> str:
    """A folder name from user text: letters, digits, ``_ - . space``; never empty, never hidden."""
    cleaned = _SAFE_NAME.sub("_", (name or "").strip()).strip(" .")
    return cleaned[:80] or fallback


def import_uploads(files: list[str | Path], dest: Path, lang: str = "en") -> dict[str, int]:
    """Copy uploaded pictures and captions into ``dest``, unpacking zips safely. Returns counts."""
    dest.mkdir(parents=True, exist_ok=True)
    counts = {"files": 0, "skipped": 0}
    budget = [MAX_UNZIPPED_BYTES]
    for f in files:
        src = Path(f)
        if src.suffix.lower() == ".zip":
            extract_zip(src, dest, counts, budget, lang)
        elif src.suffix.lower() in DATASET_SUFFIXES:
            shutil.copyfile(src, _unique(dest / safe_name(src.name, "file")))
            counts["files"] += 1
        else:
            counts["skipped"] += 1
    return counts


def extract_zip(src: Path, dest: Path, counts: dict[str, int], budget: list[int], lang: str = "en") -> None:
    root = dest.resolve()
    try:
        archive = zipfile.ZipFile(src)
    except zipfile.BadZipFile:
        raise UserError(t("err_bad_zip", lang, name=src.name)) from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_ZIP_MEMBERS:
            raise UserError(t("err_zip_too_many", lang, name=src.name, n=len(members), limit=MAX_ZIP_MEMBERS))
        for m in members:
            if m.is_dir():
                continue
            is_link = stat.S_ISLNK(m.external_attr >> 16)
            parts = Path(m.filename.replace("\\", "/")).parts
            if is_link or m.filename.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
                counts["skipped"] += 1
                continue
            if Path(m.filename).suffix.lower() not in DATASET_SUFFIXES or any(p.startswith(".") for p in parts):
                counts["skipped"] += 1  # __MACOSX/._x.png, thumbs, other files
                continue
            budget[0] -= m.file_size
            if budget[0] < 0:
                raise UserError(t("err_zip_too_big", lang, name=src.name, limit=MAX_UNZIPPED_BYTES // 2**30))
            target = (root / Path(*[safe_name(p, "x") for p in parts])).resolve()
            if not target.is_relative_to(root):
                counts["skipped"] += 1
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(m) as fin, open(target, "wb") as fout:
                written = _copy_limited(fin, fout, m.file_size)
            if written is None:  # the member is bigger than its header said: a crafted archive
                target.unlink(missing_ok=True)
                raise UserError(t("err_bad_zip", lang, name=src.name))
            counts["files"] += 1


def _copy_limited(fin, fout, limit: int) -> int | None:
    written = 0
    while chunk := fin.read(1 << 20):
        written += len(chunk)
        if written > limit:
            return None
        fout.write(chunk)
    return written


def _unique(path: Path) -> Path:
    if not path.exists():
        return path
    for i in range(1, 10_000):
        candidate = path.with_name(f"{path.stem}_{i}{path.suffix}")
        if not candidate.exists():
            return candidate
    raise UserError(f"too many files named like {path.name}")
