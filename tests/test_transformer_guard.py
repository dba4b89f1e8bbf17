"""The numerics guard on the transformer families (the tiny SD3.5, Flux.1 and Z-Image) as on SD1.5: a poisoned batch
is skipped and named, a NaN gradient rolls the run back to its last save with the lr halved, and no saved file holds
a non-finite number."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.helpers import InfInBatch, NanGradOnce, tiny_config, tiny_model_folder, write_toy_dataset
from trainer.io import read_jsonl
from trainer.run.events import ChangeApplied, MemorySink, NonFiniteAlert, Rollback
from trainer.train.loop import run_training

pytestmark = pytest.mark.slow
FAMILIES = ("sd3", "flux", "zimage")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_toy_dataset(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module", params=FAMILIES)
def base(request, tmp_path_factory) -> Path:
    return tiny_model_folder(tmp_path_factory, request.param)


def _finite_files(run_dir: Path) -> None:
    files = list(run_dir.rglob("*.safetensors"))
    assert files
    for f in files:
        for k, t in load_file(str(f)).items():
            assert torch.isfinite(t.float()).all(), f"{f}: {k}"


def test_a_poisoned_batch_is_skipped_and_named(base, dataset, tmp_path):
    hooks = InfInBatch(at_step=3)
    cfg = tiny_config(dataset, tmp_path, {"train.max_steps": 5, "guard.on_nonfinite": "skip"}, base=str(base))
    sink = MemorySink()
    result = run_training(cfg, sink, hooks=hooks)
    assert result.status == "finished", result.message
    first = next(e for e in sink.events if isinstance(e, NonFiniteAlert))
    assert first.first in ("loss", "grad") and first.broke_at_step == 3 and first.files == hooks.files
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    assert [r["step"] for r in rows if not r["skipped"]] == [1, 2, 3, 4, 5]
    assert any(r["skipped"] and r["nonfinite"] for r in rows)
    assert all(math.isfinite(r["weight_norm"]) for r in rows)
    _finite_files(result.run_dir)


def test_a_nan_gradient_rolls_back_to_the_last_save_with_half_the_lr(base, dataset, tmp_path):
    cfg = tiny_config(dataset, tmp_path, {"train.max_steps": 6, "save.every_steps": 3,
                                          "guard.on_nonfinite": "rollback", "optim.lr": 1e-3}, base=str(base))
    sink = MemorySink()
    result = run_training(cfg, sink, hooks=NanGradOnce(at_step=5))
    assert result.status == "finished", result.message
    assert next(e for e in sink.events if isinstance(e, Rollback)).to_step == 3
    [change] = [e for e in sink.events if isinstance(e, ChangeApplied)]
    assert change.key == "optim.lr" and change.new == pytest.approx(change.old / 2)
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    assert rows[-1]["step"] == 6 and rows[-1]["lr"] == pytest.approx(5e-4)
    _finite_files(result.run_dir)
