"""TensorBoard beside ``metrics.jsonl``, when the optional ``tensorboard`` package is installed.

:class:`TensorBoardSink` is one more event sink: each step row's loss, grad norms, lr and fp16 loss scale become
scalars, each ``sample_ready`` event's pictures become images, all under ``<run>/tensorboard/``. Without
``torch.utils.tensorboard`` (it needs the ``tensorboard`` package) :func:`make_writer` gives None and the sink
writes nothing, not even the folder. ``metrics.jsonl`` stays the record the app reads; this is a view for those who use TensorBoard.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from trainer.run.events import Resumed, RunEvent, SampleReady, StepRow

FOLDER = "tensorboard"
# metrics row field -> scalar tag
SCALARS = {
    "loss": "train/loss",
    "grad_norm": "train/grad_norm",
    "grad_norm_clipped": "train/grad_norm_clipped",
    "lr": "train/lr",
    "loss_scale": "train/loss_scale",
}


def make_writer(log_dir: Path, purge_step: int | None = None):
    """A ``SummaryWriter`` for ``log_dir``, or None when TensorBoard is not installed. ``purge_step``: a resumed run
    drops what an earlier attempt wrote from that step on (it trains those steps again)."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # torch raises it when the tensorboard package is missing
        return None
    return SummaryWriter(log_dir=str(log_dir), purge_step=purge_step)


class TensorBoardSink:
    """Writes scalars and sample images of one run. The writer is made at the first thing to write, so a resume
    (its ``resumed`` event comes first) can purge the steps it trains again."""

    def __init__(self, run_dir: Path):
        self.log_dir = Path(run_dir) / FOLDER
        self.writer = None
        self._purge_step: int | None = None
        self._failed = False

    def __call__(self, ev: RunEvent) -> None:
        if isinstance(ev, Resumed):
            self._purge_step = int(ev.step or 0) + 1
        elif isinstance(ev, StepRow):
            self._scalars(ev)
        elif isinstance(ev, SampleReady):
            self._images(ev)
        elif ev.ends is not None and self.writer is not None:
            self.writer.close()
            self.writer = None

    def _open(self):
        if self.writer is None and not self._failed:
            self.writer = make_writer(self.log_dir, self._purge_step)
            self._failed = self.writer is None
        return self.writer

    def _scalars(self, ev: StepRow) -> None:
        writer = self._open()
        if writer is None:
            return
        row = ev.to_json()
        step = int(row["step"])
        # a skipped step (fp16 overflow) has no update to show, only the loss scale it halved
        fields = ("loss_scale",) if row.get("skipped") else tuple(SCALARS)
        for name in fields:
            value = row.get(name)
            if isinstance(value, int | float) and math.isfinite(value):
                writer.add_scalar(SCALARS[name], float(value), step)
        if row.get("skipped"):
            writer.add_scalar("train/skipped", 1.0, step)

    def _images(self, ev: SampleReady) -> None:
        writer = self._open()
        if writer is None:
            return
        import numpy as np
        from PIL import Image

        folder = Path(ev.path)
        for record in ev.samples or []:
            with Image.open(folder / record["file"]) as img:
                pixels = np.asarray(img.convert("RGB"))
            writer.add_image(sample_tag(record), pixels, int(ev.step or 0), dataformats="HWC")
        writer.flush()


def sample_tag(record: dict[str, Any]) -> str:
    """``samples/<picture file name without .png>``: one series per prompt, seed and weights across the steps."""
    return "samples/" + Path(record["file"]).stem
