"""The run folder contract (docs/design.md, "The run folder"): ``<output_dir>/<name>/<run_id>/`` with config,
plan, metrics, events, checkpoints, samples, diagnosis and the final LoRA; plus the journal entry naming the
parent run."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from trainer.io import atomic_write_json, clean_leftovers, read_jsonl
from trainer.run.events import RunStatus

# Written last into a checkpoint's temp folder: which files it holds and their sizes. A step folder that has it
# (and files of those sizes) is complete; one without it is from before it existed and counts if it has state.pt.
CHECKPOINT_MARKER = "checkpoint.json"
_STEP_DIR = re.compile(r"step-(\d{6,})")
_STRANDED_STEP_DIR = re.compile(r"\.step-(\d{6,})\.old-.+")  # io.atomic_folder's name for the folder it replaces


@dataclass(frozen=True)
class RunPaths:
    root: Path

    @property
    def config(self) -> Path:
        return self.root / "config.toml"

    @property
    def plan(self) -> Path:
        return self.root / "plan.json"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.jsonl"

    @property
    def measures(self) -> Path:
        """The doctor's model measures, one row per measured step (trainer/train/probes.py)."""
        return self.root / "measures.jsonl"

    @property
    def events(self) -> Path:
        return self.root / "events.jsonl"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def samples(self) -> Path:
        return self.root / "samples"

    @property
    def final(self) -> Path:
        return self.root / "final"

    @property
    def diagnosis(self) -> Path:
        return self.root / "diagnosis.json"

    @property
    def journal(self) -> Path:
        return self.root / "journal.json"

    @property
    def status(self) -> Path:
        return self.root / "status.json"

    def step_dir(self, step: int) -> Path:
        return self.checkpoints / f"step-{step:06d}"

    def sample_dir(self, step: int) -> Path:
        return self.samples / f"step-{step:06d}"


def new_run_dir(output_dir: str | Path, name: str) -> RunPaths:
    base = Path(output_dir) / name
    base.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for i in range(1000):
        candidate = base / (stamp if i == 0 else f"{stamp}-{i}")
        try:
            candidate.mkdir()
            return RunPaths(candidate)
        except FileExistsError:
            continue
    raise RuntimeError(f"could not create a run folder under {base}")


def write_checkpoint_marker(folder: Path, step: int) -> None:
    """Mark ``folder`` complete: call it after every other file in it is written."""
    files = {p.name: p.stat().st_size for p in sorted(folder.iterdir()) if p.is_file() and not p.name.startswith(".")}
    atomic_write_json(folder / CHECKPOINT_MARKER, {"format": 1, "step": step, "files": files})


def checkpoint_matches_marker(folder: Path) -> bool | None:
    """Whether ``folder``'s files are all there at the sizes its marker lists (``state.pt`` among them); None when
    it has no marker (written before markers existed)."""
    marker = folder / CHECKPOINT_MARKER
    if not marker.is_file():
        return None
    try:
        files = json.loads(marker.read_text(encoding="utf-8"))["files"]
        return "state.pt" in files and all((folder / n).is_file() and (folder / n).stat().st_size == size
                                           for n, size in files.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def checkpoint_complete(folder: Path) -> bool:
    """Whether ``folder`` holds a whole checkpoint: its marker matches; a folder from before markers counts when it
    has ``state.pt``, all resume needs."""
    matches = checkpoint_matches_marker(folder)
    return (folder / "state.pt").is_file() if matches is None else matches


def complete_checkpoints(paths: RunPaths) -> list[tuple[int, Path]]:
    """Every complete checkpoint folder as (step, folder), oldest step first. Temp folders are never among them;
    a ``.step-N.old-*`` folder counts only while ``step-N`` is missing (a kill between the two renames of a
    replacement: :func:`trainer.io.atomic_folder`)."""
    if not paths.checkpoints.is_dir():
        return []
    found: dict[int, Path] = {}
    stranded: dict[int, Path] = {}
    for p in paths.checkpoints.iterdir():
        m = _STEP_DIR.fullmatch(p.name) or _STRANDED_STEP_DIR.fullmatch(p.name)
        if m is None or not p.is_dir() or not checkpoint_complete(p):
            continue
        (found if p.name.startswith("step-") else stranded)[int(m[1])] = p
    return sorted({**stranded, **found}.items())


def latest_checkpoint(paths: RunPaths) -> Path | None:
    """The newest complete checkpoint folder: what resume continues from."""
    done = complete_checkpoints(paths)
    return done[-1][1] if done else None


def rotate_checkpoints(paths: RunPaths, keep_last: int, keep: Path | None = None) -> list[Path]:
    """Delete all but the newest ``keep_last`` complete checkpoints; ``keep`` (the one just written) and the
    newest complete one always stay. Incomplete folders are left for a person to look at."""
    if keep_last <= 0:
        return []
    done = [p for _, p in complete_checkpoints(paths) if p.name.startswith("step-")]
    removed = [p for p in done[:-keep_last] if p != keep]
    for p in removed:
        shutil.rmtree(p, ignore_errors=True)
    return removed


def clean_interrupted_saves(paths: RunPaths) -> list[Path]:
    """Remove the temp files and folders a killed save left (checkpoints, final, the run folder's own files) and
    put back a checkpoint stranded mid-replacement. Only for the process that owns the run (start, resume)."""
    folders = [paths.root, paths.checkpoints, paths.final]
    folders += [p for p in paths.checkpoints.iterdir() if p.is_dir()] if paths.checkpoints.is_dir() else []
    folders += [p for p in paths.samples.iterdir() if p.is_dir()] if paths.samples.is_dir() else []
    return [p for folder in folders for p in clean_leftovers(folder)]


def write_status(paths: RunPaths, status: RunStatus, **fields) -> None:
    """``status.json``. It names the process (pid, host) so a reader can tell a live run from one that was killed:
    :func:`run_status`. Writing "running" claims the folder, so what a killed save left there is swept first."""
    status = RunStatus(status)
    if status is RunStatus.RUNNING:
        clean_interrupted_saves(paths)
    atomic_write_json(paths.status, {"status": status, "time": time.time(), "pid": os.getpid(),
                                     "host": socket.gethostname(), **fields})


def read_status(run_dir: str | Path) -> dict:
    p = RunPaths(Path(run_dir)).status
    try:
        return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else {}
    except (OSError, ValueError):
        return {}


def run_status(run_dir: str | Path) -> dict:
    """``status.json`` as a reader should take it: a run that says "running" while its process is gone (killed,
    power cut, the app closed) is ``"interrupted"``. An interrupted or failed run has ``resume_step`` (its newest
    complete checkpoint, or None when it has none). A run on another host, or one whose status names no process
    (written by an older version), cannot be checked and keeps what it says."""
    status = read_status(run_dir)
    if status.get("status") == RunStatus.FAILED:
        return {**status, "resume_step": newest_checkpoint_step(run_dir)}
    if status.get("status") != RunStatus.RUNNING or status.get("host") != socket.gethostname():
        return status
    if _process_alive(status.get("pid"), status.get("pid_started")):
        return status
    return {**status, "status": RunStatus.INTERRUPTED, "resume_step": newest_checkpoint_step(run_dir)}


def newest_checkpoint_step(run_dir: str | Path) -> int | None:
    """The step of the run's newest complete checkpoint (what a resume starts from), or None when it has none."""
    done = complete_checkpoints(RunPaths(Path(run_dir)))
    return done[-1][0] if done else None


CONTINUABLE = (RunStatus.PAUSED, RunStatus.STOPPED, RunStatus.INTERRUPTED, RunStatus.FAILED)


def continue_step(run_dir: str | Path, status: dict | None = None) -> int | None:
    """The step a run carries on from when it is continued: its newest complete checkpoint, when it is paused,
    stopped by the user (Stop saves its step's checkpoint), interrupted (its process gone: the app, the computer or
    the terminal closed) or failed (a full disk, the card's memory, a file that went away: once that is mended,
    nothing is lost but the steps since that checkpoint). None for a finished run, one stopped at its last step,
    one the numerics guard stopped (its settings need a change first: a new run) and one without a complete
    checkpoint. ``status``: :func:`run_status` when the caller has read it already."""
    status = run_status(run_dir) if status is None else status
    paths = RunPaths(Path(run_dir))
    if status.get("status") not in CONTINUABLE or not paths.config.is_file():
        return None
    step = newest_checkpoint_step(run_dir)
    if step is not None and status.get("status") == RunStatus.STOPPED and step >= planned_steps(paths):
        return None  # stopped at its end: nothing is left to train
    return step


def planned_steps(paths: RunPaths) -> float:
    """The run's total steps by its ``plan.json`` (infinite when it cannot be read: nothing is refused for it)."""
    try:
        total = json.loads(paths.plan.read_text(encoding="utf-8")).get("total_steps")
    except (OSError, ValueError, AttributeError):
        return math.inf
    return total if isinstance(total, int) else math.inf


def _process_alive(pid, started: float | None) -> bool:
    """Whether ``pid`` still is the process that wrote the status: alive, not a zombie, and not a newer process
    that was given the same number (it would have started after ``started``)."""
    import psutil  # accelerate's dependency; it checks processes the same way on Windows

    if not isinstance(pid, int):
        return True  # a status from before pids were written: nothing to judge by
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return not (isinstance(started, int | float) and proc.create_time() > started + 1.0)
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True  # it exists but we may not look at it


def workspace_presets(run_dir: str | Path) -> list[Path]:
    """Where the app keeps the presets of the user's own beside a run of its workspace (``<workspace>/presets``,
    the run in ``<workspace>/runs/<name>/<id>``); [] for a run folder with no such place above it."""
    above = Path(run_dir).resolve().parents
    return [above[2] / "presets"] if len(above) > 2 else []


def list_runs(output_dir: str | Path) -> list[Path]:
    """Every run folder under ``output_dir`` (any name), oldest first."""
    root = Path(output_dir)
    if not root.is_dir():
        return []
    runs = [p.parent for p in root.glob("*/*/config.toml")]
    return sorted(runs, key=lambda p: p.stat().st_mtime)


def metrics(run_dir: str | Path) -> list[dict]:
    return read_jsonl(RunPaths(Path(run_dir)).metrics)


def events(run_dir: str | Path) -> list[dict]:
    return read_jsonl(RunPaths(Path(run_dir)).events)
