"""Every change to a dataset's captions goes through here: a journal first, then each file written atomically, so
Undo restores exactly what was there (byte for byte, or no file at all) and a stop half-way leaves each caption
either old or new, never cut.

The journal is a hidden folder inside the dataset (``.lora-doctor/captions/``; the scan skips hidden names), one
JSON file per change set, newest last. Undo takes back the newest change set and removes its file. The mask maker
keeps its own journal the same way (``.lora-doctor/masks/``, whole files as they are): each has its own Undo.
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.errors import UserError
from trainer.io import atomic_write_bytes, atomic_write_json, fsync_dir
from trainer.message import Msg, msg

JOURNAL_DIR = Path(".lora-doctor") / "captions"
JOURNALS = ("captions", "masks")
VERSION = 1


@dataclass(frozen=True)
class ChangeSet:
    """One run of the captioner or of a caption tool: which files it changed and how they were before."""

    path: Path
    what: Msg
    files: list[str]


def journal_dir(root: Path, journal: str = "captions") -> Path:
    assert journal in JOURNALS, journal
    return Path(root) / JOURNAL_DIR.parent / journal


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def caption_bytes(text: str) -> bytes:
    """A caption as it is written: UTF-8, one line, a newline at the end (what the editor writes too)."""
    return (text.strip() + "\n").encode("utf-8")


def apply_changes(root: Path, changes: dict[Path, str] | dict[Path, bytes], what: Msg,
                  journal: str = "captions") -> ChangeSet | None:
    """Write each file of ``changes`` (path → a caption's new text, or a file's new bytes as they are) that differs
    from the file, after journaling what every one of them held. None when nothing changes (no journal entry,
    nothing to undo)."""
    root = Path(root)
    entries = []
    for path, text in changes.items():
        before, after = _read(path), text if isinstance(text, bytes) else caption_bytes(text)
        if before != after:
            entries.append((path, before, after))
    if not entries:
        return None
    folder = journal_dir(root, journal)
    folder.mkdir(parents=True, exist_ok=True)
    n = 1 + max((int(p.stem.split("-")[0]) for p in _entries(folder)), default=0)
    record = {"version": VERSION, "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "what": what.to_json(),
              "files": [{"path": p.relative_to(root).as_posix(), "before": _b64(b), "after": _b64(a)}
                        for p, b, a in entries]}
    written = folder / f"{n:05d}-changes.json"
    atomic_write_json(written, record)  # first: a stop after this leaves files old or new, all undoable
    for path, _, after in entries:
        atomic_write_bytes(path, after)
    return ChangeSet(written, what, [p.relative_to(root).as_posix() for p, _, _ in entries])


def _entries(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("[0-9]*-changes.json") if p.is_file()) if folder.is_dir() else []


def last_change(root: Path, journal: str = "captions") -> ChangeSet | None:
    """The newest change set Undo would take back, or None."""
    entries = _entries(journal_dir(root, journal))
    if not entries:
        return None
    record = _load(entries[-1])
    return ChangeSet(entries[-1], Msg.from_json(record["what"]), [f["path"] for f in record["files"]])


def _load(path: Path) -> dict[str, Any]:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("version") != VERSION or not isinstance(record.get("files"), list):
            raise ValueError("not a caption journal of this version")
        return record
    except (OSError, ValueError) as e:
        raise UserError(msg("caption.error.journal", path=path, reason=str(e).splitlines()[0][:200])) from None


def undo_last(root: Path, journal: str = "captions") -> ChangeSet:
    """Put back every file the newest change set wrote, exactly as it was (a file that did not exist is
    removed), then drop that change set. Refused with a :class:`UserError` when there is nothing to undo."""
    root = Path(root)
    entries = _entries(journal_dir(root, journal))
    if not entries:
        raise UserError(msg("caption.error.nothing_to_undo" if journal == "captions" else "mask.error.nothing_to_undo",
                            root=root))
    record = _load(entries[-1])
    for f in record["files"]:
        path = (root / f["path"]).resolve()
        if root.resolve() not in path.parents:  # a hand-edited journal may not reach out of the dataset
            raise UserError(msg("caption.error.journal", path=entries[-1], reason=f["path"]))
        if f["before"] is None:
            path.unlink(missing_ok=True)
        else:
            atomic_write_bytes(path, base64.b64decode(f["before"]))
    entries[-1].unlink()
    fsync_dir(entries[-1].parent)
    return ChangeSet(entries[-1], Msg.from_json(record["what"]), [f["path"] for f in record["files"]])
