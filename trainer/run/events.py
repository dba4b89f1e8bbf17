"""Typed events out of the training loop, and the sinks that receive them.

An event is a plain dict with a ``type`` (started, step, checkpoint_saved, sample_ready, alert, finding,
change_applied, finished, stopped, failed) and a ``time``. ``step`` events are the metrics rows. The loop
knows nothing of who listens: the CLI prints, the run folder keeps JSONL files, the UI reads a queue.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from trainer.io import append_jsonl
from trainer.run.worded import worded

Event = dict[str, Any]
Sink = Callable[[Event], None]

METRIC_FIELDS = (
    "step", "epoch", "loss", "grad_norm", "grad_norm_clipped", "lr", "loss_scale", "skipped", "nonfinite",
    "sec_per_step",
)
TERMINAL = {"finished", "stopped", "failed"}


def event(event_type: str, /, **fields: Any) -> Event:
    return {"type": event_type, "time": time.time(), **fields}


def json_safe(value: Any) -> Any:
    """NaN/Inf are not JSON: write them as the strings "nan", "inf", "-inf" so a row is never lost."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def as_float(value: Any) -> float | None:
    """Read back a value written by :func:`json_safe`."""
    if value is None:
        return None
    if isinstance(value, str):
        return float(value)
    return float(value)


class RunFolderSink:
    """``metrics.jsonl`` gets one row per optimizer step; every other event goes to ``events.jsonl``."""

    def __init__(self, run_dir: str | Path):
        self.run_dir = Path(run_dir)
        self.metrics_path = self.run_dir / "metrics.jsonl"
        self.events_path = self.run_dir / "events.jsonl"

    def __call__(self, ev: Event) -> None:
        row = json_safe(worded(ev))
        if ev["type"] == "step":
            append_jsonl(self.metrics_path, {k: v for k, v in row.items() if k not in ("type", "time")})
        else:
            append_jsonl(self.events_path, row)


class MultiSink:
    def __init__(self, sinks: Iterable[Sink]):
        self.sinks = list(sinks)

    def __call__(self, ev: Event) -> None:
        for s in self.sinks:
            s(ev)


class MemorySink:
    """Keeps every event; thread-safe. The UI's runner and the tests read from it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[Event] = []

    def __call__(self, ev: Event) -> None:
        with self._lock:
            self.events.append(ev)

    def snapshot(self, start: int = 0) -> list[Event]:
        with self._lock:
            return list(self.events[start:])

    def of_type(self, kind: str) -> list[Event]:
        return [e for e in self.snapshot() if e["type"] == kind]
