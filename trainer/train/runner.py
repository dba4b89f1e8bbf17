"""One process-wide runner that owns the training thread.

Every browser tab (and any API client) talks to the same :class:`Runner`: ``start`` refuses while a run is
active, and ``snapshot`` gives a versioned view of the run that pollers can compare cheaply. The runner holds
no widget; it is a library object the UI reads on its own schedule.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from codes import wording
from trainer.config.schema import Config
from trainer.doctor.held_out import best_so_far
from trainer.errors import UserError
from trainer.message import Msg, msg
from trainer.run.events import (
    FAILURE_SAID,
    TERMINAL,
    Alert,
    CheckpointSaved,
    Failed,
    FindingEvent,
    Progress,
    Resumed,
    RunEvent,
    RunStatus,
    SampleReady,
    Started,
    StepRow,
    Stopped,
    present,
)
from trainer.train.commands import Commands

__all__ = ["TERMINAL", "RunSnapshot", "RunState", "Runner", "get_runner", "memory_in_use", "run_dir_of"]


@dataclass
class RunState:
    status: RunStatus = RunStatus.IDLE
    run_dir: str | None = None
    total_steps: int = 0
    step: int = 0
    started_at: float = 0.0
    metrics: list[StepRow] = field(default_factory=list)  # the step rows
    alerts: list[Alert] = field(default_factory=list)
    samples: list[SampleReady] = field(default_factory=list)
    checkpoints: list[CheckpointSaved] = field(default_factory=list)
    findings: list[FindingEvent] = field(default_factory=list)  # the detectors' warnings, as they are raised
    events: list[RunEvent] = field(default_factory=list)  # everything but step rows
    progress: Progress | None = None
    message: str = ""
    refusal: Msg | None = None  # ``message`` as a message to word, when the run was refused (a UserError)
    config: Config | None = None
    best_val: dict[str, Any] | None = None  # the lowest validation loss so far and its step (best_so_far)


@dataclass
class RunSnapshot:
    """A consistent copy of the run's state for display (:meth:`Runner.snapshot`)."""

    version: int = 0
    active: bool = False
    status: RunStatus = RunStatus.IDLE
    run_dir: str | None = None
    step: int = 0
    total_steps: int = 0
    metrics: list[StepRow] = field(default_factory=list)  # rows from ``rows_from`` on
    rows: int = 0  # every row the run has
    alerts: list[Alert] = field(default_factory=list)
    samples: list[SampleReady] = field(default_factory=list)
    checkpoints: list[CheckpointSaved] = field(default_factory=list)
    events: list[RunEvent] = field(default_factory=list)  # the last 50 besides step rows
    progress: Progress | None = None
    message: str = ""
    it_per_sec: float | None = None
    eta_seconds: float | None = None
    memory: dict[str, float | None] = field(default_factory=dict)
    best_val: dict[str, Any] | None = None  # {"step", "val_loss"}: the lowest validation loss so far
    refusal: Msg | None = None  # ``message`` as a message to word in the reader's language, when there is one
    findings: list[FindingEvent] = field(default_factory=list)  # the detectors' findings, as raised

    def to_json(self) -> dict[str, Any]:
        """The snapshot as plain JSON types, the dict ``snapshot`` returned before it was typed."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("metrics", "alerts", "samples", "checkpoints", "findings", "events"):
            out[name] = [e.to_json() for e in out[name]]
        out["progress"] = self.progress.to_json() if self.progress is not None else None
        out["status"] = str(self.status)
        out["refusal"] = self.refusal.to_json() if self.refusal is not None else None
        return out


class Runner:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._commands: Commands | None = None
        self.state = RunState()
        self.version = 0  # bumped on every change; pollers skip work when it has not moved

    # ------------------------------------------------------------------------------------ control

    @property
    def active(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, config: Config, parent: str | None = None, resume: str | None = None) -> tuple[bool, Msg]:
        """Start training in a background thread. Returns (started, message); refuses while a run is active."""
        with self._lock:
            if self.active:
                return False, msg("run.already_active")
            self._commands = Commands()
            self.state = RunState(status=RunStatus.STARTING, started_at=time.time(), config=config,
                                  run_dir=str(resume) if resume else None)
            self.version += 1
            self._thread = threading.Thread(
                target=self._run, args=(config, parent, resume), name="lora-training", daemon=True
            )
            self._thread.start()
        return True, msg("run.started")

    def _run(self, config: Config, parent, resume) -> None:
        from trainer.train.loop import run_training

        try:
            result = run_training(config, self._on_event, self._commands, parent=parent, resume=resume)
            with self._lock:
                self.state.status = RunStatus(result.status)
                self.state.message = result.message or self.state.message
                if result.run_dir:
                    self.state.run_dir = str(result.run_dir)
                self.version += 1
        except UserError as e:
            with self._lock:
                self.state.status = RunStatus.FAILED
                self.state.message = str(e)
                self.state.refusal = e.msg.plain() if isinstance(e.msg, Msg) else None
                self.version += 1
        except BaseException as e:  # a bug (or SystemExit in the thread) must reach the screen, not vanish with it
            with self._lock:
                self.state.status = RunStatus.FAILED
                self.state.message = f"{type(e).__name__}: {e}"
                self.version += 1

    def _send(self, command: Callable[[Commands], None]) -> bool:
        """Pass one command to the active run; False when none is active."""
        if self.active and self._commands:
            command(self._commands)
            return True
        return False

    def stop(self) -> bool:
        return self._send(Commands.stop)

    def pause(self) -> bool:
        """Ask the run to pause after this step (see :meth:`Commands.pause`); False when none is active."""
        return self._send(Commands.pause)

    def continue_run(self, run_dir: str | Path) -> tuple[bool, Msg]:
        """Continue a paused, stopped, interrupted or failed run from its newest complete checkpoint, in its own
        folder with its own settings (``config.toml``): the same as :meth:`start` with ``resume``. Refuses any other
        run (:func:`trainer.run.rundir.continue_step`)."""
        from trainer.config.schema import load_config
        from trainer.run.rundir import CONTINUABLE, RunPaths, continue_step, run_status

        paths = RunPaths(Path(run_dir))
        status = run_status(paths.root)
        if status.get("status") not in CONTINUABLE:
            raise UserError(msg("error.run.not_continuable", root=paths.root, status=status.get("status") or "unknown"))
        if continue_step(paths.root, status) is None:
            raise UserError(msg("error.run.no_checkpoint", root=paths.root))
        return self.start(load_config(paths.config), resume=str(paths.root))

    def sample_now(self) -> bool:
        return self._send(Commands.sample_now)

    def save_now(self) -> bool:
        return self._send(Commands.save_now)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run's thread ends (tests, CLI). True when it ended."""
        t = self._thread
        if t is None:
            return True
        t.join(timeout)
        return not t.is_alive()

    # ------------------------------------------------------------------------------------ events

    def _on_event(self, ev: RunEvent) -> None:
        with self._lock:
            s = self.state
            if isinstance(ev, StepRow):
                s.metrics.append(ev)
                if not ev.skipped and ev.step is not None:
                    s.step = ev.step
                if isinstance(ev.val_loss, int | float):  # not ABSENT or None; best_so_far keeps the finite ones
                    here = {"step": ev.step, "val_loss": ev.val_loss}
                    s.best_val = best_so_far([r for r in (s.best_val, here) if r])
            else:
                s.events.append(ev)
            if isinstance(ev, Resumed):  # the rows, samples and checkpoints before the resume point, for the plots
                _load_earlier(s, ev.run_dir, ev.step or 0)
            elif isinstance(ev, Started):
                s.status = RunStatus.RUNNING
                s.run_dir = ev.run_dir or None
                s.total_steps = ev.plan["total_steps"]
            elif isinstance(ev, Progress):
                s.progress = ev
            elif isinstance(ev, Alert):
                s.alerts.append(ev)
            elif isinstance(ev, SampleReady):
                s.samples.append(ev)
            elif isinstance(ev, CheckpointSaved):
                s.checkpoints.append(ev)
            elif isinstance(ev, FindingEvent):
                s.findings.append(ev)
            elif isinstance(ev, Failed):  # a failure the run said itself (a full disk, the memory): those words
                said = s.alerts[-1].message if s.alerts and s.alerts[-1].kind in FAILURE_SAID else None
                s.message, s.refusal = ev.error or "", said.plain() if isinstance(said, Msg) else None
            elif isinstance(ev, Stopped) and ev.message:
                s.message = wording.say(ev.message)
                s.refusal = ev.message.plain() if isinstance(ev.message, Msg) else None
            self.version += 1

    # ---------------------------------------------------------------------------------- snapshot

    def snapshot(self, rows_from: int | None = 0) -> RunSnapshot:
        """A consistent copy of the run's state for display, with rates and an ETA computed here. ``metrics``
        holds the rows from index ``rows_from`` on (a poller that has the earlier ones copies only the new
        ones; None: no rows); ``rows`` counts them all."""
        with self._lock:
            s = self.state
            rows = s.metrics[rows_from:] if rows_from is not None else []
            recent = [r.sec_per_step for r in s.metrics[-20:] if not r.skipped]
            out = RunSnapshot(
                version=self.version, active=self.active, status=s.status, run_dir=s.run_dir, step=s.step,
                total_steps=s.total_steps, metrics=rows, rows=len(s.metrics), alerts=list(s.alerts),
                samples=list(s.samples), checkpoints=list(s.checkpoints), findings=list(s.findings),
                events=list(s.events[-50:]),
                progress=s.progress, message=s.message, best_val=s.best_val, refusal=s.refusal,
            )
        sec = sum(recent) / len(recent) if recent else None
        out.it_per_sec = (1.0 / sec) if sec else None
        out.eta_seconds = (sec * max(out.total_steps - out.step, 0)) if sec else None
        out.memory = memory_in_use()
        return out


def _load_earlier(s: RunState, run_dir: str, step: int) -> None:
    """What a resumed run's folder already holds up to ``step`` (its metrics rows, the samples and checkpoints
    of its events), put in front of the new rows as if the run had never stopped."""
    from trainer.run.rundir import events, metrics

    rows = [StepRow.parse(r) for r in metrics(run_dir) if r.get("step", 0) <= step]
    earlier = [RunEvent.from_json(e) for e in events(run_dir) if e.get("step", 0) <= step]
    s.metrics[:0] = rows
    s.best_val = best_so_far([{"step": r.step, "val_loss": r.val_loss} for r in s.metrics if present(r.val_loss)])
    s.samples[:0] = [e for e in earlier if isinstance(e, SampleReady)]
    s.checkpoints[:0] = [e for e in earlier if isinstance(e, CheckpointSaved)]
    s.findings[:0] = [e for e in earlier if isinstance(e, FindingEvent)]
    applied = [r.step for r in rows if not r.skipped]
    s.step = max(applied, default=s.step)


def memory_in_use() -> dict[str, float | None]:
    """Process RSS and, on a GPU, allocated / peak VRAM, in MiB."""
    import psutil
    import torch

    rss = psutil.Process().memory_info().rss / 2**20  # resident set size; on Windows, the working set
    vram = peak = None
    if torch.cuda.is_available():
        vram = torch.cuda.memory_allocated() / 2**20
        peak = torch.cuda.max_memory_allocated() / 2**20
    return {"rss_mib": rss, "vram_mib": vram, "vram_peak_mib": peak}


_RUNNER: Runner | None = None
_RUNNER_LOCK = threading.Lock()


def get_runner() -> Runner:
    """The process-wide runner (created on first use)."""
    global _RUNNER
    with _RUNNER_LOCK:
        if _RUNNER is None:
            _RUNNER = Runner()
        return _RUNNER


def run_dir_of(snapshot: RunSnapshot) -> Path | None:
    return Path(snapshot.run_dir) if snapshot.run_dir else None
