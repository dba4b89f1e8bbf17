"""TensorBoard beside metrics.jsonl: scalars and sample pictures reach the writer under the right tags and steps;
without the tensorboard package nothing is written and the run finishes the same."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import trainer.train.tensorboard_log as tb
from tests.helpers import Overflow, tiny_config, write_toy_dataset
from trainer.io import read_jsonl
from trainer.run.events import MemorySink
from trainer.train.loop import run_training

pytestmark = pytest.mark.slow

# fp16 for a loss scale; the first backward pass overflows, so step 1 is tried twice (one skipped row)
OVER = {"train.max_steps": 2, "train.precision": "fp16", "sample.enabled": True, "sample.prompts": ["zxc"]}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_toy_dataset(tmp_path_factory.mktemp("data"), n=4)


class FakeWriter:
    def __init__(self, log_dir: Path, purge_step):
        self.log_dir, self.purge_step = log_dir, purge_step
        self.scalars: list[tuple[str, float, int]] = []
        self.images: list[tuple[str, tuple, int]] = []
        self.closed = False

    def add_scalar(self, tag, value, step):
        self.scalars.append((tag, value, step))

    def add_image(self, tag, pixels, step, dataformats):
        assert dataformats == "HWC"
        self.images.append((tag, pixels.shape, step))

    def flush(self):
        pass

    def close(self):
        self.closed = True


def test_scalars_and_samples_reach_the_writer_with_their_tags_and_steps(dataset, tmp_path, monkeypatch):
    writers: list[FakeWriter] = []
    monkeypatch.setattr(tb, "make_writer", lambda log_dir, purge_step=None: writers.append(
        FakeWriter(log_dir, purge_step)) or writers[-1])
    result = run_training(tiny_config(dataset, tmp_path, OVER), MemorySink(), hooks=Overflow(attempts=(1,)))
    assert result.status == "finished", result.message
    assert len(writers) == 1 and writers[0].closed
    w = writers[0]
    assert w.log_dir == result.run_dir / "tensorboard" and w.purge_step is None
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    assert [(r["step"], r["skipped"]) for r in rows] == [(1, True), (1, False), (2, False)]
    by_tag: dict[str, list[tuple[int, float]]] = {}
    for tag, value, step in w.scalars:
        by_tag.setdefault(tag, []).append((step, value))
    applied = [r for r in rows if not r["skipped"]]
    for field, tag in tb.SCALARS.items():
        expected = [(r["step"], r[field]) for r in applied]
        if field == "loss_scale":  # the skipped attempt's (halved) scale is shown too
            expected = [(r["step"], r[field]) for r in rows]
        assert by_tag[tag] == expected, tag  # JSON keeps a float exactly
    assert by_tag["train/skipped"] == [(1, 1.0)]
    # the prompt's picture at step 0 and at the end (2), 64 px RGB, one series across the steps
    assert [(tag, step) for tag, _, step in w.images] == [("samples/00_trigger", 0), ("samples/00_trigger", 2)]
    assert {shape for _, shape, _ in w.images} == {(64, 64, 3)}


def test_without_tensorboard_nothing_is_written_and_the_run_finishes(dataset, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # import fails as if not installed
    assert tb.make_writer(tmp_path / "x") is None
    result = run_training(tiny_config(dataset, tmp_path, {**OVER, "train.precision": "fp32"}), MemorySink())
    assert result.status == "finished", result.message
    assert not (result.run_dir / "tensorboard").exists() and not (tmp_path / "x").exists()
    assert len(read_jsonl(result.run_dir / "metrics.jsonl")) == 2


def test_the_real_writer_leaves_event_files_tensorboard_reads(dataset, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    result = run_training(tiny_config(dataset, tmp_path, {**OVER, "train.precision": "fp32"}), MemorySink())
    assert result.status == "finished", result.message
    acc = EventAccumulator(str(result.run_dir / "tensorboard"), size_guidance={"images": 0, "scalars": 0})
    acc.Reload()
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    assert [e.step for e in acc.Scalars("train/loss")] == [1, 2]
    assert [e.value for e in acc.Scalars("train/loss")] == pytest.approx([r["loss"] for r in rows])
    assert "train/loss_scale" not in acc.Tags()["scalars"]  # fp32 has no loss scale
    assert [e.step for e in acc.Images("samples/00_trigger")] == [0, 2]
