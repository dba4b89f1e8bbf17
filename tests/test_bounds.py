"""Numbers a config may hold: step counts are bounded, floats are finite, and the save/sample schedule of even the
longest run costs nothing to plan or to send to the browser."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from tests.helpers import snapshot_of, write_toy_dataset
from trainer.config.schema import MAX_STEPS, Config, from_dict
from trainer.data.scan import scan_dataset
from trainer.errors import UserError
from trainer.plan.steps import SHOWN_STEPS, Schedule, make_plan

REPO = Path(__file__).resolve().parent.parent


def float_fields(model: type[BaseModel] = Config, prefix: str = "") -> list[str]:
    out = []
    for name, field in model.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            out += float_fields(field.annotation, f"{prefix}{name}.")
        elif field.annotation is float:
            out.append(prefix + name)
    return out


def with_value(dotted: str, value) -> dict:
    section, key = dotted.split(".")
    return {section: {key: value}}


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_every_float_setting_refuses_a_non_finite_value_by_name(value):
    fields = float_fields()
    assert {"optim.max_grad_norm", "dose.fit_high", "train.fp16_init_scale", "optim.lr"} <= set(fields)
    for dotted in fields:
        with pytest.raises(UserError, match=rf"'{dotted}' = (inf|-inf|nan): input should be a finite number"):
            from_dict(with_value(dotted, value))


@pytest.mark.parametrize("dotted", ["train.max_steps", "save.every_steps", "sample.every_steps",
                                    "optim.warmup_steps", "train.fp16_growth_interval", "guard.detect_every"])
def test_step_counts_stop_at_a_million_with_one_clear_message(dotted):
    assert from_dict(with_value(dotted, MAX_STEPS)).get(dotted) == MAX_STEPS
    for value in (MAX_STEPS + 1, 20_000_000, 1e23, math.inf):
        with pytest.raises(UserError) as e:
            from_dict(with_value(dotted, value))
        assert str(e.value).endswith(f"'{dotted}' = {value!r}: at most 1,000,000 steps; a larger count is a typo")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    data = write_toy_dataset(tmp_path_factory.mktemp("data"), n=2)
    return scan_dataset(from_dict({"dataset": {"path": str(data), "resolution": 64}}).dataset)


def test_the_longest_run_with_a_save_every_step_plans_a_rule_and_lists_a_few_steps(report):
    cfg = from_dict({"dataset": {"path": report.root, "resolution": 64},
                     "train": {"max_steps": MAX_STEPS}, "save": {"every_steps": 1}})
    plan = make_plan(cfg, report)
    as_json = json.dumps(plan.to_json(), allow_nan=False)
    assert len(as_json) < 20_000  # the whole list of a million steps was ~8 MB, sent on every plan refresh
    assert len(plan.checkpoint_steps) == MAX_STEPS and 777_777 in plan.checkpoint_steps
    assert len(plan.sample_steps) == MAX_STEPS + 1 and 0 in plan.sample_steps
    data = json.loads(as_json)
    assert len(data["checkpoint_steps"]) == SHOWN_STEPS and data["checkpoint_steps"][-1] == MAX_STEPS
    assert data["checkpoint_schedule"] == {"every": 1, "total": MAX_STEPS, "at_start": False, "enabled": True,
                                           "count": MAX_STEPS}


def test_a_schedule_is_the_list_the_plan_used_to_build(report):
    for save_every, sample_every, total, enabled in [(100, 0, 210, True), (0, 70, 210, True), (7, 0, 7, True),
                                                     (3, 5, 16, True), (0, 0, 1, True), (4, 0, 9, False)]:
        cfg = from_dict({"dataset": {"path": report.root, "resolution": 64}, "train": {"max_steps": total},
                         "save": {"every_steps": save_every},
                         "sample": {"every_steps": sample_every, "enabled": enabled}})
        plan = make_plan(cfg, report)
        ckpts = [*range(save_every, total, save_every or total), total] if save_every else [total]
        samples = sorted({0, *(range(sample_every, total, sample_every) if sample_every else ckpts), total})
        assert list(plan.checkpoint_steps) == plan.checkpoint_steps == ckpts
        assert list(plan.sample_steps) == (samples if enabled else [])
        assert [s for s in range(-1, total + 2) if s in plan.sample_steps] == (samples if enabled else [])
        assert Schedule.from_plan_json(plan.to_json(), "sample") == plan.sample_steps
    old = {"sample_steps": [0, 40, 80]}  # a plan.json from before schedules
    assert Schedule.from_plan_json(old, "sample") == [0, 40, 80]


def test_a_plan_over_a_million_steps_from_epochs_is_refused(report):
    cfg = from_dict({"dataset": {"path": report.root, "resolution": 64, "repeats": 10_000},
                     "train": {"epochs": 100_000, "batch_size": 1}})
    with pytest.raises(UserError, match="more than the 1,000,000 a run may have"):
        make_plan(cfg, report)


def test_the_live_view_knows_a_sampling_step_past_the_listed_ones():
    from ui import live

    schedule = {"every": 1000, "total": MAX_STEPS, "at_start": True, "enabled": True, "count": 1001}
    started = {"type": "started", "plan": {"sample_steps": [0, 1000, MAX_STEPS], "sample_schedule": schedule}}
    snap = {"active": True, "step": 500_000, "events": [started], "samples": []}
    assert live.sampling_step(snapshot_of(snap)) == 500_000
    assert live.sampling_step(snapshot_of({**snap, "step": 500_001})) is None


def test_the_poll_sends_a_non_finite_number_as_null_not_an_error():
    from ui.steps.train import plot_json

    fig = {"data": [{"y": [1.0, math.nan, math.inf]}], "layout": {"shapes": [{"y0": -math.inf}]}}
    sent = json.loads(plot_json(fig).plot)
    assert sent == {"data": [{"y": [1.0, None, None]}], "layout": {"shapes": [{"y0": None}]}}


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainer", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})


def test_the_cli_answers_huge_and_infinite_numbers_with_one_line_and_exit_2(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[dataset]\npath = "{tmp_path}"\n[optim]\nmax_grad_norm = inf\n')
    for proc, expected in [(cli("plan", str(cfg)), "'optim.max_grad_norm' = inf: input should be a finite number"),
                           (cli("train", str(cfg), "--set", "optim.max_grad_norm=1", "--set", "train.max_steps=1e23"),
                            "'train.max_steps' = 1e+23: at most 1,000,000 steps")]:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert len(lines) == 1 and expected in lines[0], lines
