"""How a run and each of its optimizer steps end: the run's result with its exit code, and what a step leaves
the loop to do."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

EXIT_CODES = {"finished": 0, "stopped": 130, "paused": 130, "guard_stopped": 3, "failed": 1}


class StepOutcome(enum.Enum):
    """What an optimizer step leaves the loop to do."""

    CONTINUE = "continue"  # the next step (applied or skipped)
    ROLLBACK = "rollback"  # the guard put back an earlier state: the loop re-reads the data position
    STOP = "stop"  # the person asked to stop
    GUARD_STOP = "guard_stop"  # the guard stopped the run
    PAUSE = "pause"  # the person asked to pause (a checkpoint was just saved)

    @property
    def ending(self) -> str | None:
        """The run's status when this outcome ends it, else None."""
        return {"stop": "stopped", "guard_stop": "guard_stopped", "pause": "paused"}.get(self.value)


@dataclass
class RunResult:
    status: str  # finished | stopped | paused | guard_stopped | failed
    run_dir: Path | None
    final_lora: Path | None = None
    message: str = ""

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]
