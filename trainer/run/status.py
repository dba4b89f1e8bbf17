"""Where a run stands: the statuses ``status.json``, the runner's snapshot and the API say, and the endings a run
returns with their exit codes. :mod:`trainer.run.events` names the status each ending event leaves a run in."""

from __future__ import annotations

from enum import StrEnum


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
