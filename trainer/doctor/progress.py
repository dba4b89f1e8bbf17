"""How far a run got and what stopped it. A run that ran out of the device's memory is told what to change first;
one that failed on another error, or was refused before its first step, is told what stopped it.
A run that stopped before its plan's end (paused, stopped, interrupted, failed) and can be continued is judged on
what it learned so far, not on the run its settings would give.

An under-trained verdict on such a run first means "it has not finished": Continue trains the rest of its plan from
its newest checkpoint, with the same settings. Raising the lr or the epochs instead would change a setting the run has
not yet been judged on (docs/doctor.md, "A run that did not finish").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainer.doctor.registry import Finding, detector
from trainer.errors import error_line, is_out_of_memory
from trainer.message import Msg, msg
from trainer.run.events import StepRow
from trainer.run.rundir import RunPaths, continue_step, planned_steps, run_status
from trainer.run.status import RunStatus

# the diagnosis's weight: what stopped the run comes first, as a non-finite failure does
# (trainer.doctor.detectors.NONFINITE_WEIGHT)
OUT_OF_MEMORY_WEIGHT = 5.0
# the diagnosis's weight: on an under-trained run, "it has not finished" comes before any setting's change (the
# non-finite failure's weight, trainer.doctor.detectors.NONFINITE_WEIGHT, still outranks it)
UNFINISHED_WEIGHT = 4.0


@detector("run_out_of_memory", group="progress", reads=("status", "rows"), weight=OUT_OF_MEMORY_WEIGHT)
def run_out_of_memory(status: dict[str, Any], rows: list[StepRow]) -> Finding | None:
    """The run failed because the device ran out of memory (the error its status.json kept): where, and the error."""
    error = str(status.get("error") or "")
    if status.get("status") != RunStatus.FAILED or not is_out_of_memory(error):
        return None
    step = max([r.step for r in rows], default=0)
    return Finding("run_out_of_memory", "error",
                   msg("finding.run_out_of_memory", step=step, error=error_line(error)), [step],
                   {"step": step})


@detector("run_failed", group="progress", reads=("status", "rows"), weight=OUT_OF_MEMORY_WEIGHT)
def run_failed(status: dict[str, Any], rows: list[StepRow]) -> Finding | None:
    """The run failed on an error other than the device's memory (:func:`run_out_of_memory`'s), or its input was
    refused once its folder was made: where, and the error (the refusal worded as the app words it)."""
    error = str(status.get("error") or "")
    if status.get("status") != RunStatus.FAILED or is_out_of_memory(error):
        return None
    step = max([r.step for r in rows], default=0)
    refusal = status.get("refusal")
    said = Msg.from_json(refusal) if isinstance(refusal, dict) and "code" in refusal else error_line(error) or "?"
    return Finding("run_failed", "error", msg("finding.run_failed" if step else "finding.run_refused", step=step,
                                              error=said), [step], {"step": step})


@detector("run_unfinished", group="progress", reads=("run_dir", "status", "plan", "rows"),
          weight=UNFINISHED_WEIGHT)
def run_unfinished(run_dir: Path | None, status: dict[str, Any], plan: dict[str, Any],
                   rows: list[StepRow]) -> Finding | None:
    """The run stopped before its plan's last step: how far it got, and from where Continue goes on. One that closed
    before its first checkpoint (``resume_step`` None) is started again; a failed one without a checkpoint is
    :func:`run_failed`'s to tell."""
    if run_dir is None:
        return None
    resume = continue_step(run_dir, status)
    total = plan.get("total_steps")
    cut_short = status.get("status") in (RunStatus.INTERRUPTED, RunStatus.PAUSED, RunStatus.STOPPED)
    if (resume is None and not cut_short) or not isinstance(total, int):
        return None
    reached = max([r.step for r in rows] + [resume or 0])
    if reached >= total or reached == 0:
        return None
    why = RunStatus(status["status"]).value  # paused, stopped, interrupted or failed (CONTINUABLE)
    said = "finding.run_unfinished" if resume is not None else "finding.run_unfinished_no_checkpoint"
    return Finding("run_unfinished", "info",
                   msg(said, step=reached, planned=total, resume=resume, status=msg(f"finding.run_status.{why}")),
                   [reached], {"step": reached, "planned": total, "resume_step": resume, "status": why})


def still_training(run_dir: Path) -> int | None:
    """The steps planned for a run that is still training (its process alive); None for any other run."""
    if run_status(run_dir).get("status") != RunStatus.RUNNING:
        return None
    total = planned_steps(RunPaths(run_dir))
    return total if isinstance(total, int) else None  # (not an unreadable plan's infinity)


def failure(findings: list[Finding]) -> Finding | None:
    """What made the run fail among ``findings`` (the device's memory or another error), if anything did."""
    return next((f for f in findings if f.signal in ("run_out_of_memory", "run_failed")), None)


def continuable(findings: list[Finding]) -> bool:
    """Whether Continue has a checkpoint to go on from, as :func:`run_unfinished` found (Troubleshoot reads the
    same finding)."""
    found = unfinished(findings)
    return found is not None and found.values.get("resume_step") is not None


def unfinished(findings: list[Finding]) -> Finding | None:
    """The run's :func:`run_unfinished` finding among ``findings``, if any."""
    return next((f for f in findings if f.signal == "run_unfinished"), None)
