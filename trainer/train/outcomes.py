"""How a run and each of its optimizer steps end: the run's result with its exit code, and what a step leaves
the loop to do."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

from trainer.run.events import RunStatus


class StepOutcome(enum.Enum):
    """What an optimizer step leaves the loop to do."""

    CONTINUE = "continue"  # the next step (applied or skipped)
    ROLLBACK = "rollback"  # the guard put back an earlier state: the loop re-reads the data position
    STOP = "stop"  # the person asked to stop
    GUARD_STOP = "guard_stop"  # the guard stopped the run
    PAUSE = "pause"  # the person asked to pause (a checkpoint was just saved)

    @property
    def ending(self) -> RunStatus | None:
        """The run's status when this outcome ends it, else None."""
        return _ENDINGS.get(self)


_ENDINGS = {StepOutcome.STOP: RunStatus.STOPPED, StepOutcome.GUARD_STOP: RunStatus.GUARD_STOPPED,
            StepOutcome.PAUSE: RunStatus.PAUSED}


@dataclass
class RunResult:
    status: RunStatus  # an ending: finished | stopped | paused | guard_stopped | failed
    run_dir: Path | None
    final_lora: Path | None = None
    message: str = ""  # its English (the CLI's line; the app words the ending event's message in its language)

    def __post_init__(self) -> None:
        self.status = RunStatus(self.status)

    @property
    def exit_code(self) -> int:
        return self.status.exit_code
