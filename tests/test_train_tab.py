"""The Train step without a browser (issue 34): the run's warnings show there as the detectors raise them, the
verdict once the run ended, Start is not the button to press while a run trains, and the "samples will appear"
note goes when they did."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import snapshot_of
from trainer.doctor.detectors import Finding
from trainer.message import msg
from trainer.run.events import RunEvent
from trainer.train.runner import Runner
from ui import live
from ui.binding import UI
from ui.context import AppContext
from ui.i18n import t
from ui.paths import PathPolicy
from ui.steps import train_poll as train


def _ui(tmp_path: Path) -> UI:
    (tmp_path / "runs").mkdir(exist_ok=True)
    return UI(AppContext(workspace=tmp_path, policy=PathPolicy(tmp_path, False), runner=Runner()))


def spike(step: int) -> dict:
    return {"type": "finding", **Finding("grad_spike", "warning", msg("finding.grad_spike", n=1, factor=20, step=step),
                                          [step]).to_json()}


def test_a_finding_shows_on_the_train_step_as_it_is_raised(tmp_path):
    ui = _ui(tmp_path)
    runner = ui.ctx.runner
    runner._on_event(RunEvent.from_json({"type": "started", "run_dir": str(tmp_path / "run"),
                                         "plan": {"total_steps": 100}}))
    first = train.poll_view(ui, {}, "en")
    assert first["warnings_md"] == "" and first["verdict_md"] == ""
    runner._on_event(RunEvent.from_json(spike(12)))
    out = train.poll_view(ui, first["poll_state"], "en")
    assert "Gradient" in out["warnings_md"] and "first at step 12" in out["warnings_md"]
    assert "verdict_md" not in out  # nothing ended
    again = train.poll_view(ui, out["poll_state"], "en")
    assert "warnings_md" not in again  # nothing new: not sent again


def test_the_latest_word_of_each_signal_in_the_page_language():
    snap = snapshot_of({"findings": [spike(12), spike(40)], "alerts": [{"kind": "precision_fallback", "message": "x"}],
                        "status": "running"})
    ko = live.warnings_markdown(snap, "ko")
    assert ko.startswith(f"**{t('run_warnings', 'ko')}**") and "처음은 40스텝" in ko and "12스텝" not in ko
    assert t("signal_precision_fallback", "ko") in ko and "grad_spike" not in ko


def test_with_no_run_training_the_poll_stops_its_timer(tmp_path):
    ui = _ui(tmp_path)
    first = train.poll_view(ui, {}, "en")
    assert first["poll_timer"].active is False  # an open page polls no more: each tick costs it 0.1-0.3 s of CPU
    assert train.poll_view(ui, first["poll_state"], "en") == {}  # showing the Train step looks once, finds nothing
    assert train.poll_every(active=False, shown=True, moved=True) is None
    assert train.poll_every(active=True, shown=True, moved=True) == train.RUN_POLL_S
    assert train.poll_every(active=True, shown=False, moved=True) == train.IDLE_POLL_S
    ticking = train.pace(train.RUN_POLL_S)  # what Start and Continue send
    assert ticking.active is True and ticking.value == train.RUN_POLL_S


def test_start_waits_while_a_run_trains_and_comes_back_after():
    during, after = train.run_buttons(True), train.run_buttons(False)
    assert during["start_btn"].interactive is False and during["start_btn"].variant == "secondary"
    assert after["start_btn"].interactive is True and after["start_btn"].variant == "primary"
    assert during["stop_btn"].interactive is True and after["stop_btn"].interactive is False


def test_a_run_on_the_cpu_is_looked_at_less_often(tmp_path, monkeypatch):
    """The page draws on the cores a CPU run trains on (bench/bench_watch.py): its light look comes every 5 s
    there, every 2 s where the run trains on a GPU; a hidden page's pace stays the slower one."""
    import torch

    from trainer.config.schema import Config

    runner = Runner()
    snap = snapshot_of({"status": "running", "active": True})
    snap.active = True
    assert train.look_every(runner, snap, shown=True, moved=True) == train.RUN_POLL_S  # no run's config yet
    runner.state.config = Config()
    runner.state.config.train.device = "cpu"
    assert train.look_every(runner, snap, shown=True, moved=True) == train.CPU_LOOK_S
    assert train.look_every(runner, snap, shown=False, moved=True) == train.IDLE_POLL_S
    monkeypatch.setattr(train, "resolve_device", lambda name: torch.device("cuda", 0))
    assert train.look_every(runner, snap, shown=True, moved=True) == train.RUN_POLL_S
    snap.active = False
    assert train.look_every(runner, snap, shown=True, moved=True) is None  # nothing trains: the page stops looking
