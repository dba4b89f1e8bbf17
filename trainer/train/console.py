"""Running a training from the terminal: a progress bar (step, loss, it/s, ETA), Ctrl-C as a clean stop.

Messages are worded by the ``say`` the CLI passes in (``words.say``; by default the words :mod:`codes.wording`
has installed); this module imports no words."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from codes import wording
from trainer.config.schema import Config
from trainer.doctor.held_out import best_so_far
from trainer.run.events import (
    Alert,
    ChangeApplied,
    CheckpointSaved,
    NonFiniteAlert,
    Rollback,
    RunEvent,
    RunStatus,
    Started,
    StepRow,
    given,
)
from trainer.train.commands import Commands


class ConsoleSink:
    def __init__(self, quiet: bool = False, say: Callable[[Any], str] = wording.say):
        self.quiet = quiet
        self.say = say  # a message in the reader's language
        self.bar = None
        self.best_val: dict | None = None  # the lowest validation loss so far and its step (best_so_far)

    def __call__(self, ev: RunEvent) -> None:
        if isinstance(ev, Started):
            if not self.quiet:
                from tqdm import tqdm

                self.bar = tqdm(total=ev.plan["total_steps"], unit="step", dynamic_ncols=True, file=sys.stderr)
            print(f"run folder: {ev.run_dir}  device: {ev.device}  precision: {ev.precision['precision']}"
                  f"  trainable params: {ev.trainable_params:,}", file=sys.stderr)
        elif isinstance(ev, StepRow) and self.bar is not None:
            if not ev.skipped:
                self.bar.n = ev.step
            self.bar.set_postfix(loss=f"{ev.loss:.4f}", lr=f"{ev.lr:.2e}", refresh=False)
            self.bar.refresh()
        here = best_so_far([{"step": ev.step, "val_loss": ev.val_loss}]) if isinstance(ev, StepRow) else None
        if here is not None:
            best = self.best_val = best_so_far([r for r in (self.best_val, here) if r]) or here
            self._write(f"validation loss: {here['val_loss']:.4g} at step {here['step']} "
                        f"(lowest so far {best['val_loss']:.4g} at step {best['step']})")
        if isinstance(ev, Alert):
            message = ev.message or (given(ev.reason, "") if isinstance(ev, NonFiniteAlert) else "")
            self._write(f"[{given(ev.level, 'warning')}] {ev.kind}: "
                        f"{message if isinstance(message, str) else self.say(message)}")
        elif isinstance(ev, CheckpointSaved | Rollback | ChangeApplied):
            said = ev.path if isinstance(ev, CheckpointSaved) else ev.change if isinstance(ev, Rollback) else ev.key
            self._write(f"{ev.type}: {said}")
        elif ev.ends is not None and ev.ends is not RunStatus.PAUSED and self.bar is not None:  # a paused bar stays
            self.bar.close()

    def _write(self, line: str) -> None:
        if self.bar is not None:
            self.bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr)


def run_from_cli(cfg: Config, resume=None, parent=None, quiet: bool = False,
                 say: Callable[[Any], str] = wording.say) -> int:
    from trainer.train.loop import run_training

    commands = Commands()
    if threading.current_thread() is threading.main_thread():
        def on_sigint(signum, frame):
            print("\nstopping after this step (Ctrl-C again to abort)…", file=sys.stderr)
            commands.stop()
            signal.signal(signal.SIGINT, signal.default_int_handler)

        signal.signal(signal.SIGINT, on_sigint)
    result = run_training(cfg, ConsoleSink(quiet, say), commands, resume=resume, parent=parent)
    if result.status is RunStatus.FAILED:
        print(f"error: training failed: {result.message} (details in {result.run_dir}/events.jsonl)", file=sys.stderr)
    elif result.status is RunStatus.GUARD_STOPPED:
        print(f"{result.message}; diagnosis: python -m trainer diagnose {result.run_dir}", file=sys.stderr)
    else:
        print(f"{result.status}: {result.final_lora or result.run_dir}", file=sys.stderr)
    return result.exit_code
