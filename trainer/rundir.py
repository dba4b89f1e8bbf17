"""The run folder contract (DESIGN.md): ``<output_dir>/<name>/<run_id>/`` with config, plan, metrics, events,
checkpoints, samples, diagnosis and the final LoRA; plus the journal entry naming the parent run."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from .io import atomic_write_json, read_jsonl


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


def latest_checkpoint(paths: RunPaths) -> Path | None:
    if not paths.checkpoints.is_dir():
        return None
    steps = sorted(p for p in paths.checkpoints.iterdir() if (p / "state.pt").is_file())
    return steps[-1] if steps else None


def write_status(paths: RunPaths, status: str, **fields) -> None:
    atomic_write_json(paths.status, {"status": status, "time": time.time(), **fields})


def read_status(run_dir: str | Path) -> dict:
    p = RunPaths(Path(run_dir)).status
    return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else {}


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
