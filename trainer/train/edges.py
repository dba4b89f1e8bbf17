"""Once a run has finished, the saves a picture judge reads near its likeness line are drawn again at more
pictures a prompt (``measure.edge_pictures``), so that the verdict on them rests on more than the run's own few.

Read on the run's own 4 pictures a prompt, the demo's likeness of the 1x runs' step-400 saves fell on the other
side of its line from its reading on 16 in up to a third of random draws (``docs/doctor.md``, "At the edge");
the larger draw is what Review's "More pictures of this save" makes (:mod:`trainer.review.more`), made here for
those saves alone, and only where a judge reads the run (the demo's measures, or ``measure.judge``): without one
more pictures would change no verdict. The training models are let go first, so the card holds one model at a
time. A stop (or pause) asked for meanwhile ends the drawing; a drawing that fails is one warning; either way the
run, trained and saved, stays finished.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from trainer.run.events import Alert, Progress

if TYPE_CHECKING:
    from trainer.review.strength import SweepProgress
    from trainer.train.loop import Trainer


class _Stopped(Exception):
    """A stop was asked for while drawing."""


def draw_edges(trainer: Trainer, step: int) -> None:
    """Draw and read the saves at the likeness line (rank 0 alone; nothing where none is there). ``step``: the
    run's last step, which the events it sends carry. Lets the trainer's models go when there is something to
    draw: call it last."""
    config = trainer.config
    per_prompt = config.measure.edge_pictures
    if not (trainer.dist.is_main and config.sample.enabled and per_prompt > 0):
        return
    from trainer.review.more import edge_saves, more_pictures
    from trainer.review.strength import SweepPipelines
    from trainer.run.samples import expand_prompts

    root = trainer.paths.root
    try:
        saves = edge_saves(root, per_prompt)
    except Exception as e:  # reading the saves failed: the run is trained and saved all the same
        _failed(trainer, step, e)
        return
    if not saves:
        return
    trainer.release_device()
    jobs = len(expand_prompts(config.sample.prompts, config.dataset.trigger)) * per_prompt  # pictures a save
    report, pipelines = _Report(trainer, step, jobs, len(saves)), SweepPipelines()
    try:
        for save in saves:
            more_pictures(root, save["file"], per_prompt, pipelines=pipelines, progress=report.drawing())
            report.saved()
        report.end()
    except _Stopped:
        pass
    except Exception as e:  # the run is trained and saved: a drawing that fails loses none of it
        _failed(trainer, step, e)
    finally:
        pipelines.release()


def _failed(trainer: Trainer, step: int, e: Exception) -> None:
    trainer.emit(Alert.failed("edge_pictures", step, "run.edge_pictures_failed", e))


class _Report:
    """The drawing's progress as ``edge_pictures`` progress events (about every 5 %), in pictures of all the
    saves; a stop or pause asked for meanwhile ends it (:class:`_Stopped`)."""

    def __init__(self, trainer: Trainer, step: int, jobs: int, saves: int):
        self.trainer, self.step, self.jobs, self.t0 = trainer, step, jobs, time.perf_counter()
        self.before, self.left, self.sent = 0, jobs * saves, -1  # drawn by earlier saves; saves to come; last sent
        self.current = jobs  # the pictures of the save being drawn

    def drawing(self) -> SweepProgress:
        """The next save's progress callback (``more_pictures``'s; its ``total`` counts the base's pictures
        where that save draws them too)."""
        self.left -= self.jobs  # this save's pictures are counted by its own total from here on
        self.current = self.jobs

        def report(done: float, total: int, _strength: float | None) -> None:
            self.current = total
            self._send(self.before + min(int(done), total), self.before + total + self.left)

        return report

    def saved(self) -> None:
        """The save's pictures are drawn (or were on disk already)."""
        self.before += self.current

    def end(self) -> None:
        self._send(self.before, self.before)

    def _send(self, done: int, total: int) -> None:
        commands = self.trainer.commands
        if commands.stop_requested or commands.pause_requested:
            raise _Stopped
        if done != self.sent and (done - self.sent >= max(1, total // 20) or done == total):
            self.sent = done
            self.trainer.emit(Progress(task="edge_pictures", done=done, total=total, step=self.step,
                                       seconds=round(time.perf_counter() - self.t0, 3)))
