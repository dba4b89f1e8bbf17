"""Atomic file writes: a temp file in the same folder, fsync, then rename, then fsync the folder. A crash never
leaves half a file, and a power cut after the rename keeps the new name.

Folders too (:func:`atomic_folder`): a checkpoint is written into a temp folder and renamed into place whole.
Every temp name starts with a dot and carries ``.tmp``/``.old``, so listings of ``step-*`` never see them and
:func:`clean_leftovers` can sweep what a killed process left behind.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# Filesystems that cannot fsync a folder say so with these; the rename itself has still happened.
_NO_DIR_FSYNC = {errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF, errno.EISDIR}


def fsync_dir(path: str | Path) -> None:
    """Make a rename inside ``path`` durable. Windows cannot open a folder for fsync (NTFS journals renames), and
    some filesystems refuse it: both are skipped."""
    if os.name == "nt":
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        if e.errno in _NO_DIR_FSYNC:
            return
        raise
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in _NO_DIR_FSYNC:
            raise
    finally:
        os.close(fd)


def fsync_file(path: str | Path) -> None:
    with open(path, "rb+") as f:
        os.fsync(f.fileno())


@contextmanager
def atomic_target(path: str | Path) -> Iterator[Path]:
    """A temp path beside ``path`` for a writer that wants a file name (``torch.save``, ``save_file``); on a clean
    exit it is fsynced and renamed onto ``path``, on an error removed. One write, no copy."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_target(path) as tmp, open(tmp, "wb") as f:
        f.write(data)


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def json_tree_map(fn: Callable[[Any], Any], value: Any) -> Any:
    """``fn`` on every leaf of nested dicts, lists and tuples (a tuple comes back as a list, as JSON writes it)."""
    if isinstance(value, dict):
        return {k: json_tree_map(fn, v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_tree_map(fn, v) for v in value]
    return fn(value)


def json_safe(value: Any) -> Any:
    """NaN/Inf are not JSON: write them as the strings "nan", "inf", "-inf" so a row is never lost."""
    return json_tree_map(_finite_or_string, value)


def _finite_or_string(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def as_float(value: Any) -> float | None:
    """Read back a value written by :func:`json_safe`."""
    return None if value is None else float(value)


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n")


@contextmanager
def atomic_folder(path: str | Path) -> Iterator[Path]:
    """Build a folder whole or not at all: write into the yielded temp folder; on a clean exit its files and it are
    fsynced and it takes ``path``'s place. An existing ``path`` is first renamed to a ``.old`` name and deleted
    after the swap, so at every instant one complete folder exists under one of the two names
    (:func:`clean_leftovers` puts a stranded ``.old`` back)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    token = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp = path.parent / f".{path.name}.tmp-{token}"
    tmp.mkdir()
    try:
        yield tmp
        for f in tmp.iterdir():
            if f.is_file():
                fsync_file(f)
        fsync_dir(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = path.parent / f".{path.name}.old-{token}"
    if path.exists():
        os.replace(path, old)
    os.replace(tmp, path)
    fsync_dir(path.parent)
    shutil.rmtree(old, ignore_errors=True)


# safetensors >= 0.8 writes its file through a ".tmpXXXXXX" beside it (Rust's tempfile crate)
_FOREIGN_TEMP = re.compile(r"\.tmp[A-Za-z0-9]{6}")


def clean_leftovers(folder: str | Path) -> list[Path]:
    """Undo what a killed writer left in ``folder``: temp files and temp folders go; a ``.old`` folder whose
    replacement never arrived is renamed back. Call it only while no other process writes there (a run's start
    or resume). Returns what it removed or restored."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    touched = []
    for p in sorted(folder.iterdir()):
        if not p.name.startswith("."):
            continue
        if p.is_file() and (p.name.endswith(".tmp") or _FOREIGN_TEMP.fullmatch(p.name)):
            p.unlink(missing_ok=True)
            touched.append(p)
        elif p.is_dir() and ".tmp-" in p.name:
            shutil.rmtree(p, ignore_errors=True)
            touched.append(p)
        elif p.is_dir() and ".old-" in p.name:
            target = folder / p.name[1:].rsplit(".old-", 1)[0]
            if target.exists():
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.replace(p, target)
            touched.append(p)
    if touched:
        fsync_dir(folder)
    return touched


def append_jsonl(path: str | Path, row: dict[str, Any]) -> None:
    """Append one JSON line, written whole with one write call, so readers never see half a row. A torn last line
    from a killed writer is first closed with a newline, so it costs only itself, not the row after it."""
    line = json.dumps(row, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"
    with open(path, "ab+") as f:
        if f.tell() > 0:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                line = "\n" + line
        f.write(line.encode("utf-8"))


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path)
    if not p.exists():
        return []
    rows = []
    for line in p.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a torn last line from a killed process
    return rows
