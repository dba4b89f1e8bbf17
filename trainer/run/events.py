"""Typed events out of the training loop, and the sinks that receive them.

Each kind of event is a small dataclass (:class:`StepRow`, :class:`Alert`, :class:`Finding`, ...) with a
``type`` (started, step, checkpoint_saved, sample_ready, alert, finding, change_applied, rollback, progress,
resumed, paused, finished, stopped, failed), a ``time`` and the ``step`` it happened at. ``to_json`` gives the
dict written to ``events.jsonl`` (``step`` rows go to ``metrics.jsonl``), ``from_json`` reads one back,
from this version's files or an older one's. The loop knows nothing of who listens: the CLI prints, the run
folder keeps JSONL files, the UI reads a queue.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

from codes.message import Msg
from trainer.io import append_jsonl, json_tree_map
from trainer.run.worded import worded


class RunStatus(StrEnum):
    """Where a run stands: ``status.json``, the runner's snapshot and the API say these strings."""

    IDLE = "idle"
    STARTING = "starting"
    RUNNING = "running"
    FINISHED = "finished"
    STOPPED = "stopped"  # by the user
    PAUSED = "paused"  # a checkpoint to continue from
    GUARD_STOPPED = "guard_stopped"  # by the numerics guard
    FAILED = "failed"
    INTERRUPTED = "interrupted"  # said "running" but its process is gone (read back only: rundir.run_status)

    @property
    def is_ending(self) -> bool:
        """Whether a run ends with this status (finished, stopped, paused, guard_stopped, failed)."""
        return self in _EXIT_CODES

    @property
    def exit_code(self) -> int:
        """The CLI's exit code for a run that ended so: 0 finished, 130 stopped or paused (as Ctrl-C), 3 stopped by
        the guard, 1 failed. A status that is no ending has none (KeyError)."""
        return _EXIT_CODES[self]


_EXIT_CODES = {RunStatus.FINISHED: 0, RunStatus.STOPPED: 130, RunStatus.PAUSED: 130, RunStatus.GUARD_STOPPED: 3,
               RunStatus.FAILED: 1}
TERMINAL = frozenset(s for s in RunStatus if s.is_ending)

METRIC_FIELDS = (
    "step", "epoch", "loss", "grad_norm", "grad_norm_clipped", "lr", "loss_scale", "skipped", "nonfinite",
    "sec_per_step",
)


class _Absent:
    """A field this event does not carry: its key is left out of the JSON (older files lack newer keys, and
    some keys are written only sometimes, e.g. ``final`` on the last checkpoint)."""

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "ABSENT"  # a copy or a pickle is the one ABSENT


ABSENT: Any = _Absent()


@dataclass(kw_only=True)
class RunEvent:
    """What every event carries. ``extra`` keeps keys the kind does not name, so a file written by another
    version reads back and writes out unchanged."""

    type: ClassVar[str] = ""
    open: ClassVar[bool] = False  # whether the emitter may add keys of its own (they land in ``extra``)
    ends: ClassVar[RunStatus | None] = None  # the run's status after this event, on the events that end a run

    time: float = ABSENT
    step: int | None = ABSENT
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The dict this event is written as: ``type``, ``time``, ``step``, the kind's fields, then ``extra``."""
        out: dict[str, Any] = {"type": self.type}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "extra" and value is not ABSENT:
                out[f.name] = value
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunEvent:
        """An event read back from a file. On :class:`RunEvent` itself the ``type`` picks the class; a type
        this version does not know reads as :class:`OtherEvent`."""
        kind = cls
        if cls is RunEvent:
            kind = EVENT_TYPES.get(d.get("type", ""), OtherEvent)
        names = {f.name for f in fields(kind)} - {"extra"}
        known = {k: v for k, v in d.items() if k in names}
        extra = {k: v for k, v in d.items() if k not in names and k != "type"}
        ev = kind(**known, extra=extra)
        if kind is OtherEvent:
            ev.other_type = d.get("type", "")  # type: ignore[attr-defined]  # kind is OtherEvent here
        return ev

    # read like the dict it is written as: ``ev["kind"]``, ``ev.get("message")``
    def __getitem__(self, key: str) -> Any:
        return self.to_json()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.to_json().get(key, default)


@dataclass(kw_only=True)
class StepRow(RunEvent):
    """One optimizer step (or one skipped step): a row of ``metrics.jsonl``."""

    type: ClassVar[str] = "step"
    step: int = ABSENT  # every row has one
    epoch: int = ABSENT
    loss: float = ABSENT
    grad_norm: float = ABSENT
    grad_norm_clipped: float = ABSENT
    lr: float = ABSENT
    loss_scale: float | None = ABSENT
    skipped: bool = ABSENT
    nonfinite: str | None = ABSENT
    sec_per_step: float = ABSENT
    weight_norm: float | None = ABSENT
    update_ratio: float | None = ABSENT
    ema_drift: float | None = ABSENT
    rollbacks: int = ABSENT
    device_mem_reserved: int | None = ABSENT
    device_mem_free: int | None = ABSENT
    cpu_self: float | None = ABSENT  # this run's share of the machine's CPU time during the step (all cores)
    cpu_others: float | None = ABSENT  # every other process's share
    val_loss: float | None = ABSENT  # only on the steps the validation loss was measured

    def metrics_row(self) -> dict[str, Any]:
        """The row as ``metrics.jsonl`` holds it: no ``type`` and no ``time``."""
        return {k: v for k, v in self.to_json().items() if k not in ("type", "time")}

    @classmethod
    def parse(cls, row: dict[str, Any]) -> StepRow:
        """A row of ``metrics.jsonl`` (or a step event's JSON) as a typed row: the non-finite numbers the file
        writes as strings ("nan", "inf", "-inf": :func:`json_safe`) read back as floats."""
        floats = {f.name for f in fields(cls) if "float" in str(f.type)}
        ev = cls.from_json({k: as_float(v) if k in floats and v in ("nan", "inf", "-inf") else v for k, v in row.items()})
        assert isinstance(ev, StepRow)
        return ev


def value(v: Any) -> float | None:
    """A row's number as a float, None when the row has none (ABSENT or None)."""
    return None if isinstance(v, _Absent) else as_float(v)


def present(v: Any) -> bool:
    """Whether a row carries the field: neither ABSENT nor None."""
    return not isinstance(v, _Absent) and v is not None


@dataclass(kw_only=True)
class Progress(RunEvent):
    type: ClassVar[str] = "progress"
    task: str = ABSENT
    done: int = ABSENT
    total: int = ABSENT
    seconds: float = ABSENT


@dataclass(kw_only=True)
class Started(RunEvent):
    type: ClassVar[str] = "started"
    run_dir: str | None = ABSENT
    plan: dict[str, Any] = ABSENT
    device: str = ABSENT
    precision: dict[str, Any] = ABSENT
    trainable_params: int = ABSENT
    base: dict[str, Any] = ABSENT
    world_size: int = ABSENT


@dataclass(kw_only=True)
class Resumed(RunEvent):
    type: ClassVar[str] = "resumed"
    checkpoint: str = ABSENT
    run_dir: str = ABSENT


@dataclass(kw_only=True)
class CheckpointSaved(RunEvent):
    type: ClassVar[str] = "checkpoint_saved"
    path: str = ABSENT
    files: list[str] = ABSENT
    final: bool = ABSENT  # only on the run's last checkpoint
    removed: list[str] = ABSENT


@dataclass(kw_only=True)
class SampleReady(RunEvent):
    type: ClassVar[str] = "sample_ready"
    path: str = ABSENT
    samples: list[dict[str, Any]] = ABSENT
    seconds: float = ABSENT


@dataclass(kw_only=True)
class Alert(RunEvent):
    """Something the user must see: a non-finite value (``kind`` ``nonfinite_loss`` ..., its details in
    ``extra``), a refused save, a precision fallback, a distilled base."""

    type: ClassVar[str] = "alert"
    open: ClassVar[bool] = True
    level: str = ABSENT
    kind: str = ABSENT
    message: str = ABSENT


@dataclass(kw_only=True)
class FindingEvent(RunEvent):
    """A detector's finding (``trainer.doctor.detectors.Finding.to_json``)."""

    type: ClassVar[str] = "finding"
    open: ClassVar[bool] = True
    signal: str = ABSENT
    level: str = ABSENT
    message: dict[str, str] = ABSENT
    steps: list[int] = ABSENT
    values: dict[str, Any] = ABSENT
    id: str = ABSENT


@dataclass(kw_only=True)
class ChangeApplied(RunEvent):
    """One setting changed mid-run (``trainer.doctor.remedies``); its keys vary with the remedy."""

    type: ClassVar[str] = "change_applied"
    open: ClassVar[bool] = True
    key: str = ABSENT
    old: Any = ABSENT
    new: Any = ABSENT


@dataclass(kw_only=True)
class Rollback(RunEvent):
    type: ClassVar[str] = "rollback"
    to_step: int = ABSENT
    change: dict[str, Any] = ABSENT
    rollbacks: int = ABSENT


@dataclass(kw_only=True)
class Paused(RunEvent):
    type: ClassVar[str] = "paused"
    ends: ClassVar[RunStatus | None] = RunStatus.PAUSED
    checkpoint: str | None = ABSENT


@dataclass(kw_only=True)
class Finished(RunEvent):
    type: ClassVar[str] = "finished"
    ends: ClassVar[RunStatus | None] = RunStatus.FINISHED
    final: str | None = ABSENT
    steps: int = ABSENT


@dataclass(kw_only=True)
class Stopped(RunEvent):
    """By the user (``reason`` "user", with ``final``) or by the guard ("guard", with ``failure``, ``message``)."""

    type: ClassVar[str] = "stopped"
    ends: ClassVar[RunStatus | None] = RunStatus.STOPPED  # guard_stopped when ``reason`` is "guard"
    reason: str = ABSENT
    final: str | None = ABSENT
    failure: dict[str, Any] | None = ABSENT
    message: Msg | dict[str, str] | str = ABSENT  # a code, worded in both languages in the file (English alone before)


@dataclass(kw_only=True)
class Failed(RunEvent):
    type: ClassVar[str] = "failed"
    ends: ClassVar[RunStatus | None] = RunStatus.FAILED
    error: str = ABSENT
    traceback: str = ABSENT


@dataclass(kw_only=True)
class OtherEvent(RunEvent):
    """An event of a type this version does not know (a newer file): kept whole so it writes back unchanged."""

    open: ClassVar[bool] = True
    other_type: str = ""

    def to_json(self) -> dict[str, Any]:
        d = super().to_json()
        del d["other_type"]
        d["type"] = self.other_type
        return d


EVENT_TYPES: dict[str, type[RunEvent]] = {c.type: c for c in (
    StepRow, Progress, Started, Resumed, CheckpointSaved, SampleReady, Alert, FindingEvent, ChangeApplied,
    Rollback, Paused, Finished, Stopped, Failed)}

Event = RunEvent
Sink = Callable[[RunEvent], None]


def event(event_type: str, /, **fields: Any) -> RunEvent:
    """A new event of ``event_type`` stamped now. A field the kind does not name is an error, except on the
    kinds whose emitters add details of their own (alert, finding, change_applied)."""
    kind = EVENT_TYPES[event_type]
    names = {f.name for f in _fields_of(kind)}
    extra = {k: v for k, v in fields.items() if k not in names}
    if extra and not kind.open:
        raise TypeError(f"{event_type} event has no field {', '.join(sorted(extra))}")
    return kind(time=time.time(), **{k: v for k, v in fields.items() if k in names}, extra=extra)


def _fields_of(kind: type[RunEvent]):
    return [f for f in fields(kind) if f.name not in ("extra", "time")]


def json_safe(value: Any) -> Any:
    """NaN/Inf are not JSON: write them as the strings "nan", "inf", "-inf" so a row is never lost."""
    return json_tree_map(_finite_or_string, value)


def _finite_or_string(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
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

    def __call__(self, ev: RunEvent) -> None:
        if isinstance(ev, StepRow):
            append_jsonl(self.metrics_path, json_safe(ev.metrics_row()))
        else:
            append_jsonl(self.events_path, json_safe(worded(ev.to_json())))


class MultiSink:
    def __init__(self, sinks: Iterable[Sink]):
        self.sinks = list(sinks)

    def __call__(self, ev: RunEvent) -> None:
        for s in self.sinks:
            s(ev)


class MemorySink:
    """Keeps every event; thread-safe. The UI's runner and the tests read from it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[RunEvent] = []

    def __call__(self, ev: RunEvent) -> None:
        with self._lock:
            self.events.append(ev)

    def snapshot(self, start: int = 0) -> list[RunEvent]:
        with self._lock:
            return list(self.events[start:])

    def of_type(self, kind: str) -> list[RunEvent]:
        return [e for e in self.snapshot() if e.type == kind]
