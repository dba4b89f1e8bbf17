"""The end of a run, after its final LoRA is saved (the last step's samples, the findings, the picture judge's
reading, the saves drawn again): whatever fails there is one warning, and the run ends finished with its files. And
a run that ends because its disk filled up: it says so, and how to go on."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

import words
from tests.helpers import tiny_config, write_toy_dataset
from trainer.run.events import Alert, MemorySink


def finished_run(tmp_path, **overrides) -> list:
    """A two-step tiny run that samples, trained to its end: it must end finished with its final LoRA. Its events."""
    from trainer.train.loop import run_training

    data = write_toy_dataset(tmp_path / "data", n=4)
    cfg = tiny_config(data, tmp_path / "runs", {"train.max_steps": 2, "save.every_steps": 2, "sample.enabled": True,
                                                "sample.steps": 2, **overrides})
    sink = MemorySink()
    result = run_training(cfg, sink)
    assert result.status == "finished", result.message
    assert json.loads((result.run_dir / "status.json").read_text())["status"] == "finished"
    assert (result.run_dir / "final" / "lora.safetensors").is_file()
    return sink.snapshot()


def alert_of(events: list, kind: str) -> tuple[str, str]:
    (alert,) = [e for e in events if isinstance(e, Alert) and e.kind == kind]
    return words.say(alert.message, "en"), words.say(alert.message, "ko")


@pytest.mark.slow
def test_a_judge_whose_model_does_not_load_loses_nothing(tmp_path):
    """measure.judge names files that pass the check before the run but a model that does not load: the run
    trains, saves and ends finished, and says at its end that no judge read the pictures, and why."""
    from trainer.models.tiny import save_tiny_clip_judge
    from trainer.run.events import FindingEvent

    broken = save_tiny_clip_judge(tmp_path / "judge")
    for weights in broken.glob("*.safetensors"):
        weights.write_bytes(weights.read_bytes()[:64])  # a download cut short
    events = finished_run(tmp_path, **{"measure.judge": str(broken)})
    (said,) = [e for e in events if isinstance(e, FindingEvent) and e.signal == "judge_unreadable"]
    assert str(broken) in words.say(said.message, "en") and "그림 판정 모델" in words.say(said.message, "ko")


@pytest.mark.slow
def test_a_finding_that_fails_at_the_end_loses_nothing(tmp_path, monkeypatch):
    """A detector that raises while the finished run is read for findings: one warning, the run ends finished."""
    from trainer.doctor import registry

    def broken(samples_dir):
        raise ValueError("a bug in a detector")

    registry.detectors()  # every detector module imported first: the broken one is one more
    monkeypatch.setitem(registry._REGISTRY, "tests.broken", registry.Detector(
        ("broken",), "pictures", None, None, None, ("samples",), broken))
    en, ko = alert_of(finished_run(tmp_path), "findings")
    assert "ValueError: a bug in a detector" in en and "학습과 저장은 끝났지만" in ko


@pytest.mark.slow
def test_the_last_steps_samples_failing_loses_nothing(tmp_path, monkeypatch):
    """The last step's samples are drawn after the final LoRA is saved; drawing them fails (the card's memory at
    the end of hours): one warning, the run ends finished with its final LoRA."""
    from trainer.train import outputs

    real = outputs.write_samples

    def fails_at_the_end(pipe, modules, prompts, sample, size, precision, folder, step, **kw):
        if step == 2:
            raise RuntimeError("CUDA out of memory")
        return real(pipe, modules, prompts, sample, size, precision, folder, step, **kw)

    monkeypatch.setattr(outputs, "write_samples", fails_at_the_end)
    en, ko = alert_of(finished_run(tmp_path), "samples")
    assert "RuntimeError: CUDA out of memory" in en and "마지막 스텝의 샘플" in ko


@pytest.mark.slow
@pytest.mark.parametrize(("free", "where"), [(2**20, "save"), (50 * 2**30, "save"), (2**20, "final")])
def test_a_full_disk_says_where_and_how_to_go_on(tmp_path, monkeypatch, free, where):
    """torch.save on a full disk fails with "unexpected pos 576 vs 534" and names no disk: with almost nothing
    free the run says the disk is full, where, and the command that goes on from its last complete checkpoint
    (which then finishes it); with room left the same error stays what it is. Step 3's save fails, or the final
    save after step 4."""
    from trainer.train import checkpoint, outputs
    from trainer.train.loop import run_training

    error = RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 576 vs 534")
    real, saves = checkpoint.save_state, []

    def fills_the_disk(state, path):
        saves.append(path)
        if len(saves) == 3:
            raise error
        return real(state, path)

    def final_fills_the_disk(self, state=None):
        raise error

    if where == "save":
        monkeypatch.setattr(checkpoint, "save_state", fills_the_disk)
    else:
        monkeypatch.setattr(outputs.Checkpointer, "save_final", final_fills_the_disk)
    monkeypatch.setattr(outputs.shutil, "disk_usage", lambda p: SimpleNamespace(total=2**40, used=0, free=free))
    data = write_toy_dataset(tmp_path / "data", n=4)
    cfg = tiny_config(data, tmp_path / "runs", {"train.max_steps": 4, "save.every_steps": 1})
    sink = MemorySink()
    result = run_training(cfg, sink)
    assert result.status == "failed"
    assert json.loads((result.run_dir / "status.json").read_text())["status"] == "failed"
    full = [e for e in sink.snapshot() if isinstance(e, Alert) and e.kind == "disk_full"]
    if free > outputs.LOW_SPACE:
        assert not full and result.message.startswith("RuntimeError: [enforce fail")
        return
    en, ko = alert_of(full, "disk_full")
    root, stopped, last = str(result.run_dir), (3 if where == "save" else 4), (2 if where == "save" else 3)
    assert f"the disk that holds {root} is full (1 MiB free)" in en and f"stopped at step {stopped}" in en
    assert f"checkpoint, step {last}" in en and f'--resume "{root}"' in en and result.message == en
    assert "디스크가 가득 차서" in ko and f"{last}스텝부터" in ko
    monkeypatch.undo()  # space freed: the command it gave finishes the run
    assert run_training(cfg, MemorySink(), resume=result.run_dir).status == "finished"
    assert (result.run_dir / "final" / "lora.safetensors").is_file()
