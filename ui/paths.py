"""The path policy: which folders and files a user may name, and how uploads land in the workspace.

On the user's own machine (listening on loopback, not shared) any local path is fine: it is their disk.
While shared, or listening on another interface, every typed path is resolved (symlinks and ``..`` included)
and must lie inside the workspace; anything else is refused with a message saying so. A dataset that holds a
link to anything outside the workspace is refused too (the scan would read it and send its thumbnail), and
base models are local folders or files only (no hub downloads on a visitor's word). Uploads always land in
``<workspace>/datasets/<name>/``; zip members are checked one by one (no absolute paths, no ``..``, no
links, only pictures and captions, a size budget), so a crafted archive cannot write outside that folder.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from trainer.data.folders import IMAGE_SUFFIXES
from trainer.errors import UserError
from trainer.message import msg

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
        try:
            p = Path(text).expanduser()
            p = (p if p.is_absolute() else self.root / p).resolve()
            p.exists()  # a name too long for the filesystem says so here, not deep inside a scan
        except (OSError, RuntimeError, ValueError) as e:  # RuntimeError: "~nobody"; ValueError: a NUL byte
            raise UserError(t("err_unusable_path", lang, what=what, path=_shown(text),
                              reason=getattr(e, "strerror", None) or e)) from None
        if self.restricted and not p.is_relative_to(self.root):
            raise UserError(t("err_outside_workspace", lang, what=what, path=text, workspace=self.root))
        return p

    def resolve_folders(self, cfg, lang: str = "en") -> None:
        """The picture folders a config reads, resolved in place against the workspace: ``dataset.path`` and,
        when set, ``dataset.reg_path`` and ``validation.path``. While shared, each must stay inside it."""
        folders = [(cfg.dataset, "path", "dataset.path"), (cfg.dataset, "reg_path", "dataset.reg_path"),
                   (cfg.validation, "path", "validation.path")]
        for section, attr, what in folders:
            text = (getattr(section, attr) or "").strip()
            if not text and what != "dataset.path":
                continue
            setattr(section, attr, str(self.resolve(text, what, lang)))
            if self.restricted:
                self.refuse_links_out(Path(getattr(section, attr)), what, lang)

    def refuse_links_out(self, folder: Path, what: str, lang: str = "en") -> None:
        """Refuse a folder in which a symlink (at any depth, through linked folders too) leads outside the
        workspace: the scan follows links, so it would read that file and send its thumbnail or caption."""
        pending, seen = [folder], set()
        while pending:
            here = pending.pop()
            try:
                real = here.resolve()
                entries = list(os.scandir(here)) if real not in seen else []
            except (OSError, RuntimeError):
                continue  # unreadable, or a link loop: the scan reads nothing there either
            seen.add(real)
            for entry in entries:
                path = Path(entry.path)
                try:
                    target = path.resolve() if entry.is_symlink() else None
                    is_dir = entry.is_dir()  # follows a link that stays inside: the scan walks into it too
                except (OSError, RuntimeError):
                    continue
                if target is not None and not target.is_relative_to(self.root):
                    raise UserError(t("err_link_outside", lang, what=what, link=path, target=target,
                                      workspace=self.root))
                if is_dir:
                    pending.append(path)

    def inside(self, base: Path, raw: str, what: str, lang: str = "en") -> Path:
        """A path that must lie inside ``base`` whatever the mode (run folders, files of a dataset)."""
        p = Path((raw or "").strip())
        p = (p if p.is_absolute() else base / p).resolve()
        if not p.is_relative_to(base.resolve()):
            raise UserError(t("err_outside_folder", lang, what=what, path=raw, folder=base))
        return p

    def check_base(self, base: str, lang: str = "en") -> str:
        """model.base: built-in names pass; a local folder or file (relative ones are relative to the
        workspace, like every typed path) goes through :meth:`resolve`; a hub id passes on the user's own
        machine only: while shared a visitor may not make it download models."""
        from trainer.models.base import BUILTIN_BASES, SINGLE_FILE_SUFFIXES, classify_base

        text = (base or "").strip()
        if text in BUILTIN_BASES:
            return text
        suffix = Path(text).suffix.lower()
        looks_local = text.startswith((".", "/", "~", "\\")) or ":" in text or suffix in SINGLE_FILE_SUFFIXES
        if looks_local or self._exists_in_workspace(text):
            text = str(self.resolve(text, "model.base", lang))
        if classify_base(text) == "hub" and self.restricted:  # classify_base: a UserError naming what is wrong
            raise UserError(t("err_hub_while_shared", lang, base=text, workspace=self.root))
        return text

    def check_judge(self, judge: str, lang: str = "en") -> str:
        """measure.judge: "" (none) passes; a folder (relative ones are relative to the workspace) goes through
        :meth:`resolve`; a hub id only on the user's own machine; then its files must make a picture judge."""
        from trainer.doctor.judge_files import check_judge, looks_local

        text = (judge or "").strip()
        if not text:
            return ""
        if looks_local(text) or self._exists_in_workspace(text):
            text = str(self.resolve(text, "measure.judge", lang))
        elif self.restricted:
            raise UserError(t("err_judge_hub_while_shared", lang, judge=text, workspace=self.root))
        check_judge(text)
        return text

    def _exists_in_workspace(self, text: str) -> bool:
        try:
            return (self.root / Path(text).expanduser()).exists()
        except (OSError, RuntimeError, ValueError):
            return True  # resolve() says what is wrong with it


def _shown(text: str, limit: int = 120) -> str:
    """A path short enough to read in a message."""
    return text if len(text) <= limit else f"{text[:limit // 2]}…{text[-limit // 3:]} ({len(text):,} characters)"


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
            try:
                with archive.open(m) as fin, open(target, "wb") as fout:
                    written = _copy_limited(fin, fout, m.file_size)
            except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError):
                written = None  # zipfile stops at the header's size and fails the CRC; encrypted; unknown method
            if written is None:  # the member is not what its header says: damaged or crafted
                target.unlink(missing_ok=True)
                raise UserError(t("err_zip_member", lang, name=src.name, member=m.filename))
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
    raise UserError(msg("ui.err_too_many_named", name=path.name))
