"""Commands into a running training loop: stop, pause, sample now, save now. Safe to call from any thread."""

from __future__ import annotations

import threading


class Commands:
    def __init__(self) -> None:
        self._stop = threading.Event()
        self._pause = threading.Event()
        self._sample = threading.Event()
        self._save = threading.Event()

    def stop(self) -> None:
        """Finish the current optimizer step, write a final checkpoint, and end with status 'stopped'."""
        self._stop.set()

    def pause(self) -> None:
        """Finish the current optimizer step, checkpoint that exact state, free the device and end with status
        'paused': a resume from the run folder carries on as if it had never stopped."""
        self._pause.set()

    def sample_now(self) -> None:
        self._sample.set()

    def save_now(self) -> None:
        self._save.set()

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    @property
    def pause_requested(self) -> bool:
        return self._pause.is_set()

    def take_sample(self) -> bool:
        """True once per request (the flag is cleared when read)."""
        if self._sample.is_set():
            self._sample.clear()
            return True
        return False

    def take_save(self) -> bool:
        if self._save.is_set():
            self._save.clear()
            return True
        return False
