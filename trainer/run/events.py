"""Typed events out of the training loop, and the sinks that receive them.

Each kind of event is a small dataclass (:class:`StepRow`, :class:`Alert`, :class:`Finding`, ...) with a
``type`` (started, step, checkpoint_saved, sample_ready, alert, finding, change_applied, rollback, progress,
resumed, paused, finished, stopped, failed), a ``time`` and the ``step`` it happened at. ``to_json`` gives the
dict written to ``events.jsonl`` (``step`` rows go to ``metrics.jsonl``), ``from_json`` reads one back,
from this version's files or an older one's. Emitters construct the event objects themselves
(``emit(Stopped(reason="user", final=...))``), so the type check sees every field; the loop stamps ``time`` and
``step`` (:func:`stamp`). The loop knows nothing of who listens: the CLI prints, the run folder keeps JSONL files,
the UI reads a queue.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from codes.message import Msg, msg
from trainer.errors import error_reason
from trainer.io import append_jsonl, as_float, json_safe
from trainer.run.status import TERMINAL as TERMINAL  # the run's status lives there; kept importable from here
from trainer.run.status import RunStatus
from trainer.run.worded import worded

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
        """An event read back from a file. On :class:`RunEvent` itself the ``type`` picks the class (and an alert's
        ``kind`` its subclass: :func:`event_class`); a type this version does not know reads as
        :class:`OtherEvent`. A key the class does not name is kept in ``extra``, a field the line lacks stays
        ``ABSENT``: an older or a newer file reads back and writes out unchanged."""
        kind = event_class(d) if cls in (RunEvent, Alert) else cls
        names = {f.name for f in fields(kind)} - {"extra"}
        known = {k: v for k, v in d.items() if k in names}
        extra = {k: v for k, v in d.items() if k not in names and k != "type"}
        ev = kind(**known, extra=extra)
        if kind is OtherEvent:
            ev.other_type = d.get("type", "")  # type: ignore[attr-defined]  # kind is OtherEvent here
        return ev


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
        ev = cls.from_json({k: as_float(v) if k in _FLOAT_FIELDS and v in ("nan", "inf", "-inf") else v for k, v in row.items()})
        assert isinstance(ev, StepRow)
        return ev


def value(v: Any) -> float | None:
    """A row's number as a float, None when the row has none (ABSENT or None)."""
    return None if isinstance(v, _Absent) else as_float(v)


def given(v: Any, default: Any = None) -> Any:
    """A field's value, ``default`` when the event does not carry it (ABSENT): a line of an older file may lack
    a field this version writes."""
    return default if isinstance(v, _Absent) else v


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


# the kinds of alert a failing run says itself with, just before it fails (trainer.train.outputs.failure_said): what
# happened and what to do, in words; the app shows it in its reader's language in place of the error's English
FAILURE_SAID = ("disk_full", "run_out_of_memory")


@dataclass(kw_only=True)
class Alert(RunEvent):
    """Something the user must see: a precision fallback, a distilled base, an ignored setting; a non-finite value
    (:class:`NonFiniteAlert`) and a refused save (:class:`SaveRefused`) carry details of their own."""

    type: ClassVar[str] = "alert"
    level: str = ABSENT
    kind: str = ABSENT
    message: Msg | dict[str, str] | str = ABSENT  # a code, worded in both languages in the file (English alone before)

    @classmethod
    def failed(cls, kind: str, step: int, code: str, error: BaseException) -> Alert:
        """A warning that a part of the run failed without costing it what it trained: message ``code`` with the
        error as its ``reason``."""
        return cls(level="warning", kind=kind, step=step, message=msg(code, reason=error_reason(error)))


@dataclass(kw_only=True)
class NonFiniteAlert(Alert):
    """The guard's alert (``kind`` ``nonfinite_loss``, ``_grad``, ``_param`` or ``_ema``): what broke first, where
    and when, and what the guard did. The fields in the order the file has always had them."""

    first: str | None = ABSENT  # loss | grad | param | ema
    broke_at_step: int = ABSENT  # a weight or EMA is checked after the step that broke it: the step before
    module: str | None = ABSENT  # the first module whose gradient, weight or EMA shadow is non-finite
    files: list[str] = ABSENT  # the step's pictures
    lr: float = ABSENT
    loss_scale: float | None = ABSENT
    precision: str = ABSENT
    loss: float | str | None = ABSENT  # a non-finite number is the string "nan", "inf" or "-inf" in the file
    grad_norm: float | str | None = ABSENT
    action: str = ABSENT  # continue | stop | rollback
    policy: str = ABSENT  # stop | skip | rollback
    reason: dict[str, Any] | str = ABSENT  # why (the guard's message), worded in both languages in the file

    def details(self) -> dict[str, Any]:
        """The guard's own fields (``first`` .. ``reason``), as the ``failure`` of a guard's stop holds them."""
        own = [f.name for f in fields(self) if f.name not in _ALERT_FIELDS]
        return {k: getattr(self, k) for k in own if getattr(self, k) is not ABSENT}


@dataclass(kw_only=True)
class SaveRefused(Alert):
    """A checkpoint not written because a tensor in it is not finite (``kind`` ``save_refused``)."""

    file: str = ABSENT
    tensor: str = ABSENT


@dataclass(kw_only=True)
class FindingEvent(RunEvent):
    """A detector's finding (``trainer.doctor.registry.Finding.to_event``)."""

    type: ClassVar[str] = "finding"
    signal: str = ABSENT
    level: str = ABSENT
    message: dict[str, Any] = ABSENT  # the message as ``Finding.to_json`` gives it, worded in the file
    steps: list[int] = ABSENT
    values: dict[str, Any] = ABSENT
    id: str = ABSENT


@dataclass(kw_only=True)
class ChangeApplied(RunEvent):
    """One setting changed mid-run (``trainer.doctor.remedies.rollback_change``): the key, its old and new value,
    the prescription that changed it with its title, a ``note`` when no change that fits the failure could be made
    mid-run, the cause it was ranked for and the evidence."""

    type: ClassVar[str] = "change_applied"
    key: str = ABSENT
    old: Any = ABSENT
    new: Any = ABSENT
    prescription: str = ABSENT
    reason: dict[str, str] | str = ABSENT  # the prescription's title, in both languages (English alone before)
    note: Msg | dict[str, str] = ABSENT
    cause: str | None = ABSENT
    signals: dict[str, float] = ABSENT


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

    other_type: str = ""

    def to_json(self) -> dict[str, Any]:
        d = super().to_json()
        del d["other_type"]
        d["type"] = self.other_type
        return d


EVENT_TYPES: dict[str, type[RunEvent]] = {c.type: c for c in (
    StepRow, Progress, Started, Resumed, CheckpointSaved, SampleReady, Alert, FindingEvent, ChangeApplied,
    Rollback, Paused, Finished, Stopped, Failed)}

_ALERT_FIELDS = frozenset(f.name for f in fields(Alert))
_FLOAT_FIELDS = frozenset(f.name for f in fields(StepRow) if "float" in str(f.type))  # StepRow.parse's numbers

Event = RunEvent
Sink = Callable[[RunEvent], None]
E = TypeVar("E", bound=RunEvent)


def event_class(d: dict[str, Any]) -> type[RunEvent]:
    """The class a line of ``events.jsonl`` reads as: its ``type``'s, and for an alert its ``kind``'s
    (:class:`NonFiniteAlert`, :class:`SaveRefused`); :class:`OtherEvent` for a type this version does not know."""
    kind = EVENT_TYPES.get(d.get("type", ""), OtherEvent)
    if kind is Alert:
        alert = str(d.get("kind", ""))
        return NonFiniteAlert if alert.startswith("nonfinite_") else SaveRefused if alert == "save_refused" else Alert
    return kind


def stamp(ev: E, step: int) -> E:
    """``ev`` with the ``time`` (now) and the ``step`` its emitter left out filled in."""
    if ev.time is ABSENT:
        ev.time = time.time()
    if ev.step is ABSENT:
        ev.step = step
    return ev


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
