"""Every detector, registered where it is written: ``@detector(signal, points_to, strength)``.

A detector is a function that reads part of a run (its metric rows, events, plan, config, sample pictures or model
measures) and gives the :class:`Finding` it makes of it, several, or None. The registry says, for each one, which
signals it raises, which way its findings point for the run's verdict (``points_to``: under, over, broken; None when
the verdict does not weigh them) and how far to trust them (``strength``), and how much the diagnosis weighs them
when not by their level (``weight``). The three readers read it instead of keeping lists of their own:

- the live run (:class:`trainer.train.recovery.Recovery`) collects the groups "numbers", "model" and "pictures";
- the verdict (:mod:`trainer.doctor.verdict`) collects "guard" and "numbers" and asks :func:`detector_for` which way
  each finding points;
- the diagnosis (:mod:`trainer.doctor.diagnose`) collects every group and weighs each finding by its detector.

A group's detectors run in the order they are written; a collector gives the order of the groups.
"""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer.io import read_jsonl
from trainer.message import Msg
from trainer.run.events import FindingEvent, RunEvent, StepRow
from trainer.run.rundir import RunPaths, RunStatus, run_status, workspace_presets

if TYPE_CHECKING:
    from trainer.config.schema import Config

# a group of detectors: what they read, and the modules they are written in (imported when the group is collected)
GROUPS: dict[str, tuple[str, ...]] = {
    "guard": ("trainer.doctor.detectors",),  # the guard's non-finite alerts (events)
    "numbers": ("trainer.doctor.detectors", "trainer.doctor.plan_findings"),  # the metric rows and the plan
    "pictures": ("trainer.doctor.pictures",),  # the sample pictures
    "model": ("trainer.doctor.model_measures",),  # the model measures at each save
    "settings": ("trainer.doctor.risks",),  # the config against its preset
    "base": ("trainer.doctor.detectors",),  # what the base model was found to be (alerts)
    "progress": ("trainer.doctor.progress",),  # how far the run got of its plan (its status, its checkpoints)
}


@dataclass
class Finding:
    signal: str
    level: str  # info | warning | error
    message: Msg | dict[str, str]  # a dict: worded before codes (a run folder's events.jsonl)
    steps: list[int] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["id"] = self.signal
        return d

    def to_event(self) -> FindingEvent:
        """The ``finding`` event the trainer emits: the fields as :meth:`to_json` writes them."""
        d = self.to_json()
        return FindingEvent(signal=self.signal, level=self.level, message=d["message"], steps=d["steps"],
                            values=d["values"], id=d["id"])


@dataclass
class RunInputs:
    """What the detectors read of one run. ``run_dir`` is None for a run that has no folder to read."""

    config: Config
    plan: dict[str, Any] = field(default_factory=dict)
    rows: list[StepRow] = field(default_factory=list)
    events: list[RunEvent] = field(default_factory=list)  # typed as they are read (RunEvent.from_json)
    run_dir: Path | None = None
    stopped: bool = False  # the loop's reading at the run's end, before its status file says so

    @classmethod
    def read(cls, run_dir: Path, config: Config) -> RunInputs:
        """A run folder's plan, metric rows and events (typed here, where they enter)."""
        paths = RunPaths(run_dir)
        plan = json.loads(paths.plan.read_text(encoding="utf-8")) if paths.plan.is_file() else {}
        return cls(config, plan, [StepRow.parse(r) for r in read_jsonl(paths.metrics)],
                   [RunEvent.from_json(e) for e in read_jsonl(paths.events) if isinstance(e, dict)], paths.root)

    @property
    def max_grad_norm(self) -> float:
        return self.config.optim.max_grad_norm

    @property
    def warmup_steps(self) -> int:
        return self.plan.get("warmup_steps", 0)

    @functools.cached_property
    def status(self) -> dict[str, Any]:
        """The run's status as a reader takes it (:func:`trainer.run.rundir.run_status`), read once; {} without a
        folder."""
        return run_status(self.run_dir) if self.run_dir is not None else {}

    @property
    def ended(self) -> bool:
        """Whether the run has stopped: the loop says so at its end, a reader from the run's status."""
        return self.stopped or (self.run_dir is not None and self.status.get("status") != RunStatus.RUNNING)

    @property
    def preset_dirs(self) -> list[Path] | None:
        """Where presets of the user's own may be, beside the shipped ones (the run's workspace)."""
        return workspace_presets(self.run_dir) if self.run_dir is not None else None

    @property
    def samples(self) -> Path | None:
        return RunPaths(self.run_dir).samples if self.run_dir is not None else None


@dataclass(frozen=True)
class Detector:
    signals: tuple[str, ...]  # the signals its findings name; "nonfinite_*": any signal with that beginning
    group: str
    points_to: str | None  # the verdict its findings argue for; None: the verdict does not weigh them
    strength: str | None  # how far the verdict trusts them (trainer.doctor.evidence.STRENGTH_WEIGHT)
    weight: float | tuple[tuple[str, float], ...] | None  # the diagnosis's weight for its findings, or (level,
    # weight) pairs for the levels it weighs apart; None: by their level
    reads: tuple[str, ...]  # the RunInputs it is called with, in order
    fn: Callable[..., Any]

    def raises(self, signal: str) -> bool:
        return any(signal.startswith(s[:-1]) if s.endswith("*") else signal == s for s in self.signals)

    def run(self, run: RunInputs) -> list[Finding]:
        found = self.fn(*(getattr(run, name) for name in self.reads))
        return [] if found is None else list(found) if isinstance(found, list) else [found]


_REGISTRY: dict[str, Detector] = {}  # by the function's full name: a module imported again replaces its own


def detector(signal: str | Sequence[str], points_to: str | None = None, strength: str | None = None, *,
             group: str = "numbers", reads: Sequence[str] = ("rows",),
             weight: float | dict[str, float] | None = None):
    """Register the decorated function as a detector of ``signal`` (or of each of several signals); see the module."""
    if group not in GROUPS:
        raise ValueError(f"unknown detector group {group!r}")
    signals = (signal,) if isinstance(signal, str) else tuple(signal)

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        by_level = tuple(sorted(weight.items())) if isinstance(weight, dict) else weight  # kept hashable
        _REGISTRY[f"{fn.__module__}.{fn.__qualname__}"] = Detector(signals, group, points_to, strength, by_level,
                                                                    tuple(reads), fn)
        return fn

    return register


def detectors(*groups: str) -> list[Detector]:
    """The registered detectors of ``groups`` (every group when none is named), group by group as named."""
    groups = groups or tuple(GROUPS)
    for module in dict.fromkeys(m for g in groups for m in GROUPS[g]):
        importlib.import_module(module)
    return [d for g in groups for d in _REGISTRY.values() if d.group == g]


def detector_for(signal: str) -> Detector | None:
    """The detector that raises ``signal``, or None (a signal from outside the registry)."""
    return next((d for d in detectors() if d.raises(signal)), None)


def collect(run: RunInputs, *groups: str) -> list[Finding]:
    """The findings of ``groups``' detectors on ``run``, in order. The numbers are read only with a plan, the
    pictures only when the run has a samples folder."""
    out: list[Finding] = []
    for group in groups:
        if (group == "numbers" and not run.plan) or (
                group == "pictures" and (run.samples is None or not run.samples.is_dir())):
            continue
        for d in detectors(group):
            out += d.run(run)
    return out


class Reported:
    """What a live run has said of each signal so far, so that each finding is said once and again only when its
    word changes: its level, or what it says (the dose "no save read yet", then "the saves read otherwise" or a
    warning once they read what it foretold). The Train step and the live alerts keep each signal's latest word.
    A warning whose detector no longer finds it (a slowdown that passed, a loss that stopped rising) is said once
    more as information, live at the reading that no longer finds it and at the run's end, so the Train step's last
    word is the diagnosis's; found again, it is said again."""

    def __init__(self) -> None:
        self.said: dict[str, Finding] = {}

    @staticmethod
    def _word(f: Finding) -> tuple[str, str]:
        return f.level, f.message.code if isinstance(f.message, Msg) else json.dumps(f.message, sort_keys=True)

    def news(self, found: list[Finding], read: tuple[str, ...] = (), step: int = 0, ended: bool = False
             ) -> list[Finding]:
        """The findings of ``found`` whose word differs from the one said last of their signal (noted as said).
        ``read``: the detector groups ``found`` comes from; a warning of theirs said before and not found now is said
        as passed at ``step`` (``ended``: the run's end)."""
        out = []
        for f in found:
            if f.signal not in self.said or self._word(self.said[f.signal]) != self._word(f):
                self.said[f.signal] = f
                out.append(f)
        readers = detectors(*read) if read else []
        for signal, f in list(self.said.items()):
            if (f.level in ("warning", "error") and all(g.signal != signal for g in found)
                    and any(d.raises(signal) for d in readers)):
                said = Msg("finding.passed" if ended else "finding.passed_live", {"step": step, "earlier": f.message})
                self.said[signal] = Finding(signal, "info", said, f.steps, f.values)
                out.append(self.said[signal])
        return out
