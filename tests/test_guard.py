"""Numerics guard scenarios on the tiny model (CPU): catch a collapse before it reaches the weights."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import words
from tests.helpers import InfInBatch, NanGradOnce, Overflow, tiny_config, write_toy_dataset
from trainer.config.presets import preset_config
from trainer.io import read_jsonl
from trainer.run.events import ChangeApplied, FindingEvent, MemorySink, NonFiniteAlert, Rollback
from trainer.train.loop import Hooks, run_training

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_toy_dataset(tmp_path_factory.mktemp("data"))


def assert_no_nonfinite_file(run_dir: Path) -> None:
    """Scenario 7: no saved file holds a non-finite tensor."""
    files = list(run_dir.rglob("*.safetensors"))
    for f in files:
        for k, t in load_file(str(f)).items():
            assert torch.isfinite(t.float()).all(), f"{f}: {k}"
    for f in run_dir.rglob("state.pt"):
        state = torch.load(f, map_location="cpu", weights_only=False)
        for role in state["lora"].values():
            for k, t in role.items():
                assert torch.isfinite(t).all(), f"{f}: {k}"


def alerts(sink: MemorySink) -> list[NonFiniteAlert]:
    return [e for e in sink.events if isinstance(e, NonFiniteAlert)]


def test_fp16_absurd_lr_overflows_and_stop_exits_3(dataset, tmp_path):
    cfg = tiny_config(dataset, tmp_path, {"train.precision": "fp16", "optim.lr": 10.0, "optim.max_grad_norm": 0.0,
                                          "train.max_steps": 12, "guard.on_nonfinite": "stop"})
    sink = MemorySink()
    result = run_training(cfg, sink)
    assert result.status == "guard_stopped" and result.exit_code == 3
    # said in both languages: the English line for the CLI, the code for the page, both in events.jsonl
    assert result.message.startswith("stopped by the numerics guard at step")
    stopped = [e for e in read_jsonl(result.run_dir / "events.jsonl") if e["type"] == "stopped"][-1]
    assert stopped["message"]["en"] == result.message and "수치 감시" in stopped["message"]["ko"]
    first = alerts(sink)[0]
    assert first.precision == "fp16"
    # Which breaks first depends on the CPU's fp16 kernels: either the gradient stays non-finite until the
    # scaler's scale collapses (the module it broke in is named), or the scaler finds a finite gradient, lr 10
    # applies it, and the next loss is non-finite. Either way the scaler skipped overflowing steps first.
    assert first.first in ("grad", "loss"), first
    if first.first == "grad":
        assert first.module
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    assert any(r["skipped"] and r["nonfinite"] is None for r in rows if r["step"] <= first.step)
    diagnosis = json.loads((result.run_dir / "diagnosis.json").read_text())
    causes = [c["id"] for c in diagnosis["causes"]]
    # an lr 100,000 times the defaults' comes first, and with it going back to theirs (not halving it); then
    # what it broke: fp16 overflow
    assert causes[:2] == ["lr_off_preset", "fp16_overflow"] and "lr_too_high" in causes[:5]
    ids = [p["id"] for p in diagnosis["prescriptions"]]
    assert ids[0] == "preset_lr" and "switch_to_bf16" in ids[:4] and "lower_lr" in ids[:5]
    assert_no_nonfinite_file(result.run_dir)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_skip_drops_the_poisoned_batch_and_names_its_files(dataset, tmp_path, precision):
    hooks = InfInBatch(at_step=3)
    cfg = tiny_config(dataset, tmp_path, {"train.precision": precision, "train.max_steps": 6,
                                          "guard.on_nonfinite": "skip"})
    sink = MemorySink()
    result = run_training(cfg, sink, hooks=hooks)
    assert result.status == "finished", result.message
    first = alerts(sink)[0]
    assert first.first in ("loss", "grad") and first.broke_at_step == 3
    assert first.files == hooks.files and first.files
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    assert [r["step"] for r in rows if not r["skipped"]] == [1, 2, 3, 4, 5, 6]
    assert any(r["skipped"] and r["nonfinite"] for r in rows)
    assert all(math.isfinite(r["weight_norm"]) for r in rows)
    assert_no_nonfinite_file(result.run_dir)


def test_rollback_restores_the_last_checkpoint_and_halves_the_lr(dataset, tmp_path):
    cfg = tiny_config(dataset, tmp_path, {"train.max_steps": 10, "save.every_steps": 5,
                                          "guard.on_nonfinite": "rollback", "optim.lr": 1e-3})
    sink = MemorySink()
    result = run_training(cfg, sink, hooks=NanGradOnce(at_step=8))
    assert result.status == "finished", result.message
    rollback = next(e for e in sink.events if isinstance(e, Rollback))
    assert rollback.to_step == 5
    changes = [e for e in sink.events if isinstance(e, ChangeApplied)]
    assert len(changes) == 1 and changes[0].key == "optim.lr"
    assert changes[0].new == pytest.approx(changes[0].old / 2)
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    assert rows[-1]["step"] == 10 and rows[-1]["lr"] == pytest.approx(5e-4)
    saved = (result.run_dir / "config.toml").read_text()
    assert "lr = 0.0005" in saved
    assert_no_nonfinite_file(result.run_dir)


class NanEma(Hooks):
    def after_step(self, trainer):
        if trainer.state.global_step == 3:
            trainer.state.ema.shadow[0].view(-1)[0] = float("nan")


def test_nonfinite_ema_is_reported_as_ema_first(dataset, tmp_path):
    cfg = tiny_config(dataset, tmp_path, {"train.max_steps": 6, "ema.enabled": True, "guard.on_nonfinite": "stop"})
    sink = MemorySink()
    result = run_training(cfg, sink, hooks=NanEma())
    assert result.exit_code == 3
    first = alerts(sink)[0]
    assert first.first == "ema" and first.broke_at_step == 3 and first.module
    diagnosis = json.loads((result.run_dir / "diagnosis.json").read_text())
    assert diagnosis["observed"][0]["signal"] == "nonfinite_ema"
    assert diagnosis["causes"][0]["id"].startswith("ema_")
    assert_no_nonfinite_file(result.run_dir)


# tiny-sd15 has two levels, not SD1.5's four: its last up block stands for the preset's up_blocks.2 and .3
TINY_CONV = {"lora.conv_blocks": ["up_blocks.1"]}


def test_healthy_run_on_the_default_preset_raises_nothing(dataset, tmp_path):
    cfg = tiny_config(dataset, tmp_path, {"preset": "demo-character", "train.max_steps": 30, **TINY_CONV})
    sink = MemorySink()
    result = run_training(cfg, sink)
    assert result.status == "finished"
    assert not [e for e in sink.events if e.type == "alert"]
    from trainer.doctor.diagnose import diagnose

    d = diagnose(result.run_dir)
    assert not [f for f in d["observed"] if f["level"] in ("warning", "error")], d["observed"]
    assert d["healthy"]
    assert_no_nonfinite_file(result.run_dir)


def test_healthy_fp16_run_with_the_scalers_warmup_raises_nothing(dataset, tmp_path):
    cfg = tiny_config(dataset, tmp_path, {"train.precision": "fp16", "train.fp16_init_scale": 65536.0,
                                          "train.batch_size": 1, "train.max_steps": 2})
    sink = MemorySink()
    result = run_training(cfg, sink, hooks=Overflow(range(1, 7)))
    assert result.status == "finished", result.message
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    # the warm-up: six skipped steps halve 65536 down to 1024, where the run settles
    assert [(r["loss_scale"], r["skipped"]) for r in rows] == [
        *[(65536.0 / 2**i, True) for i in range(6)], (1024.0, False), (1024.0, False)]
    assert all(r["nonfinite"] is None for r in rows)
    assert not [e for e in sink.events if e.type == "alert"]
    assert not [e for e in sink.events if isinstance(e, FindingEvent) and e.id.startswith("loss_scale")]
    from trainer.doctor.diagnose import diagnose

    d = diagnose(result.run_dir)
    assert not [f for f in d["observed"] if f["signal"].startswith("loss_scale")], d["observed"]
    assert d["healthy"], d["observed"]
    assert_no_nonfinite_file(result.run_dir)


def test_lr_100x_raises_dose_and_weight_growth_and_the_lr_comes_first(dataset, tmp_path):
    cfg = tiny_config(dataset, tmp_path, {"preset": "demo-character", "train.max_steps": 30, **TINY_CONV})
    cfg.optim.lr = preset_config("demo-character").optim.lr * 100  # dose 6, past the preset's fit zone
    sink = MemorySink()
    result = run_training(cfg, sink)
    assert result.status == "finished"
    found = {e.id for e in sink.events if isinstance(e, FindingEvent)}
    assert {"dose_over", "weight_norm_growth"} <= found, found
    from trainer.doctor.diagnose import diagnose

    d = diagnose(result.run_dir)
    # whatever the model measures make of the wrecked weights, the first cause is the lr far from the preset's,
    # and its first prescription puts it back (never "train longer" on a run at 100x the lr)
    assert d["causes"][0]["id"] == "lr_off_preset", [c["id"] for c in d["causes"]]
    first_rx = next(p for p in d["prescriptions"] if p["applicable"])
    assert first_rx["change"]["key"] == "optim.lr" and first_rx["change"]["op"] == "preset"
    assert_no_nonfinite_file(result.run_dir)


def test_a_prescribed_run_differs_from_its_parent_in_one_setting(dataset, tmp_path):
    import subprocess
    import sys

    from trainer.doctor.diagnose import diagnose
    from trainer.doctor.kb import apply_change, load_kb

    parent_cfg = tiny_config(dataset, tmp_path, {"train.max_steps": 3})
    parent = run_training(parent_cfg, MemorySink())
    child_cfg = apply_change(parent_cfg, load_kb().prescription("lower_lr"))
    child_cfg.save.output_dir = str(tmp_path / "elsewhere")  # where a run is written is not a change of how it trains
    child = run_training(child_cfg, MemorySink(), parent=parent.run_dir)
    journal = json.loads((child.run_dir / "journal.json").read_text())
    assert journal["parent"] == str(parent.run_dir)
    assert list(journal["changes"]) == ["optim.lr"]
    diag = diagnose(child.run_dir)
    comparison = diag["parent"]
    assert comparison["one_change"] and comparison["changes"]["optim.lr"][1] == pytest.approx(5e-4)
    # what the change did, at the save each verdict recommends: these tiny runs have no picture judge, so the
    # comparison gives each verdict and says the pictures decide
    outcome = comparison["outcome"]
    assert outcome["parent"]["label"] == diagnose(parent.run_dir, write=False)["verdict"]["label"]
    assert outcome["this"]["likeness"] is None
    assert words.say(outcome["said"], "en").startswith("What the change did: the parent read ")
    ko = words.say(outcome["said"], "ko")
    assert "두 실행 비교에서 나란히 보거나" in ko and ")(" not in ko  # no label's brackets run into the step's
    from ui.steps.troubleshoot import findings_markdown

    shown = findings_markdown(diag, "en").split("**Against the run it was started from**")[1].splitlines()
    assert shown[1].startswith("- Changed: optim.lr: ") and shown[3].startswith("- What the change did: ")
    proc = subprocess.run([sys.executable, "-m", "trainer", "diagnose", str(child.run_dir), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["parent"]["parent"] == str(parent.run_dir)
    # a prescription that changes what this run already changed from its parent says so (its detail), in both
    # languages; the others do not
    from trainer.doctor.diagnose import _prescriptions
    from trainer.run.contents import load_run_config

    kb = load_kb()
    ranked = [rc for rc in kb.rank_causes({"grad_spike": 1.0}, child_cfg) if rc.cause.id == "lr_too_high"]
    assert ranked, "the cause that prescribes a lower lr"
    made = _prescriptions(kb, ranked, load_run_config(child.run_dir), made=journal["changes"])
    said = {p["id"]: p["detail"] for p in made}
    lr_keyed = {p["id"] for p in made if (p["change"] or {}).get("key") == "optim.lr"}
    lower = words.say(said["lower_lr"], "en")
    assert lower.startswith("This run already made this change from the run it was started from (optim.lr: 0.001 → "
                            "0.0005)"), lower
    assert "이미 이 변경을 했습니다" in words.say(said["lower_lr"], "ko")
    assert all(("already made this change" in words.say(d, "en")) == (i in lr_keyed) for i, d in said.items())
    assert len(said) > len(lr_keyed)  # prescriptions of other settings, which do not say so
    plain = {p["id"]: p["detail"] for p in _prescriptions(kb, ranked, load_run_config(child.run_dir))}
    assert "already made" not in words.say(plain["lower_lr"], "en")
    # a change of the epochs moves max_steps where the run sets it (this one: 3), so a run whose steps were halved
    # from its parent's is told so by the prescription that halves the epochs
    over = [rc for rc in kb.rank_causes({"dose_over": 1.0}, child_cfg) if any(
        p.id == "fewer_steps" for p in kb.prescriptions_for(rc.cause.id))]
    assert over, "a cause that prescribes fewer steps"
    steps = {p["id"]: p["detail"] for p in _prescriptions(kb, over[:1], load_run_config(child.run_dir),
                                                          made={"train.max_steps": [6, 3]})}
    assert words.say(steps["fewer_steps"], "en").startswith(
        "This run already made this change from the run it was started from (train.max_steps: 6 → 3)")


def test_a_finding_of_the_pictures_both_runs_have_is_still_there_not_new(dataset, tmp_path, monkeypatch):
    """The parent's findings are read as its own diagnosis reads them, the pictures' too: a picture finding this
    run shares with it is "still there", whether the parent's diagnosis.json was written or not."""
    from trainer.doctor import registry
    from trainer.doctor.diagnose import diagnose
    from trainer.doctor.pictures import prompt_kind
    from trainer.message import msg
    from trainer.run.rundir import RunPaths

    parent = run_training(tiny_config(dataset, tmp_path, {"train.max_steps": 2}), MemorySink())
    child_cfg = tiny_config(dataset, tmp_path, {"train.max_steps": 2, "optim.lr": 5e-4})
    child = run_training(child_cfg, MemorySink(), parent=parent.run_dir)
    burnt = registry.Detector(("sample_burn",), "pictures", None, None, None, ("samples",),
                              lambda samples: registry.Finding("sample_burn", "warning", msg(
                                  "finding.sample_burn", burn=0.9, step=2, kind=prompt_kind("trigger")), [2]))
    monkeypatch.setitem(registry._REGISTRY, "tests.burnt", burnt)
    for run in (parent, child):  # these tiny runs draw no samples: the pictures' detectors read a folder of them
        RunPaths(run.run_dir).samples.mkdir(exist_ok=True)
    for parent_diagnosed in (False, True):
        if parent_diagnosed:
            assert "sample_burn" in {f["signal"] for f in diagnose(parent.run_dir)["observed"]}
        compared = diagnose(child.run_dir, write=False)["parent"]
        assert "sample_burn" in compared["still"] and "sample_burn" not in compared["new"], compared
