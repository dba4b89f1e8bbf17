"""Continue: a run that paused, was stopped by its user, was interrupted (the app, the terminal or the computer
closed while it trained) or failed (a full disk, the card's memory) goes on from its newest complete checkpoint, in
its own folder, from the app's Train step as from the command line; a finished run, one the numerics guard stopped,
or one without a checkpoint is refused with one message."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import words
from tests.helpers import tiny_config, write_toy_dataset
from tests.test_crash_safety import dead_pid, fake_checkpoint
from trainer.config.schema import save_config
from trainer.errors import UserError
from trainer.io import read_jsonl
from trainer.run.events import MemorySink
from trainer.run.rundir import RunPaths, continue_step, run_status, write_status
from trainer.train.hooks import Hooks


def _run_folder(root: Path, status: str, checkpoint: int | None, **fields) -> Path:
    paths = RunPaths(root)
    root.mkdir(parents=True)
    paths.config.write_text("")
    if checkpoint is not None:
        fake_checkpoint(paths, checkpoint)
    write_status(paths, status, **fields)
    return root


def test_which_runs_continue_and_from_where(tmp_path):
    from ui.context import status_label

    for status in ("paused", "failed", "finished", "stopped", "guard_stopped"):
        for checkpoint in (20, None):
            run = _run_folder(tmp_path / f"{status}-{checkpoint}", status, checkpoint)
            offered = status in ("paused", "stopped", "failed") and checkpoint is not None
            assert continue_step(run) == (20 if offered else None), (status, checkpoint)
    killed = _run_folder(tmp_path / "killed", "running", 20)
    status = {**json.loads(RunPaths(killed).status.read_text()), "pid": dead_pid(), "pid_started": time.time()}
    RunPaths(killed).status.write_text(json.dumps(status))
    assert continue_step(killed) == 20
    # a run stopped at its last step has nothing left to train; one whose plan cannot be read is not refused for it
    ended = _run_folder(tmp_path / "stopped-at-end", "stopped", 20)
    RunPaths(ended).plan.write_text(json.dumps({"total_steps": 20}))
    assert continue_step(ended) is None
    RunPaths(ended).plan.write_text(json.dumps({"total_steps": 40}))
    assert continue_step(ended) == 20
    RunPaths(ended).plan.write_text("{")
    assert continue_step(ended) == 20
    # a run this process still trains is not offered; nor a folder that lost its settings
    assert continue_step(_run_folder(tmp_path / "alive", "running", 20, pid_started=time.time())) is None
    (tmp_path / "failed-20" / "config.toml").unlink()
    assert continue_step(tmp_path / "failed-20") is None
    # run lists say where a failed run can go on from, as they do for an interrupted one
    failed = run_status(_run_folder(tmp_path / "failed-again", "failed", 30))
    assert failed["resume_step"] == 30
    assert status_label(failed, "en") == "failed, resume from step 30"
    assert status_label(failed, "ko") == "실패, 30 스텝부터 이어서 학습 가능"
    assert status_label(run_status(tmp_path / "failed-None"), "en") == "failed"


class FailsAtThirdSave:
    """``checkpoint.save_state`` that raises what a full disk makes torch say at its third call."""

    def __init__(self, real):
        self.real, self.calls = real, 0

    def __call__(self, state, path):
        self.calls += 1
        if self.calls == 3:
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 576 vs 534")
        return self.real(state, path)


@pytest.mark.slow
def test_a_failed_run_continues_in_its_folder_and_keeps_the_run_it_was_started_from(tmp_path, monkeypatch):
    from trainer.doctor.diagnose import compare_with_parent
    from trainer.train import checkpoint
    from trainer.train.loop import run_training
    from trainer.train.runner import Runner

    data = write_toy_dataset(tmp_path / "data", n=4)
    parent = tmp_path / "runs" / "lora" / "parent"
    parent.mkdir(parents=True)
    over = {"train.max_steps": 4, "save.every_steps": 1}
    save_config(tiny_config(data, tmp_path / "runs", {**over, "optim.lr": 2e-3}), parent / "config.toml")
    cfg = tiny_config(data, tmp_path / "runs", over)
    monkeypatch.setattr(checkpoint, "save_state", FailsAtThirdSave(checkpoint.save_state))
    failed = run_training(cfg, MemorySink(), parent=parent)
    assert failed.status == "failed" and continue_step(failed.run_dir) == 2
    monkeypatch.undo()  # what stopped it is mended
    run = failed.run_dir

    runner = Runner()
    ok, _ = runner.continue_run(run)
    assert ok and runner.wait(300)
    snap = runner.snapshot()
    assert snap.status == "finished" and snap.run_dir == str(run), snap.message
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl")] == [1, 2, 3, 4]
    assert (run / "final" / "lora.safetensors").is_file()
    journal = json.loads((run / "journal.json").read_text())
    assert journal["parent"] == str(parent) and journal["changes"] == {"optim.lr": [2e-3, 1e-3]}
    compared = compare_with_parent(RunPaths(run), [])
    assert compared is not None and compared["one_change"] and compared["status"] == "finished"

    with pytest.raises(UserError, match="only a paused, stopped, interrupted or failed run") as refused:
        runner.continue_run(run)
    assert "끝난 실행이나 수치 가드가 멈춘 실행은 새 실행으로" in words.say(refused.value.msg, "ko")
    early = _run_folder(tmp_path / "early", "failed", None)
    with pytest.raises(UserError, match="before its first complete checkpoint, so there is nothing to continue"):
        runner.continue_run(early)


class KilledAfter(Hooks):
    """Ends the process's part in the run after ``step`` as a kill would: nothing more is written (the status still
    says running)."""

    class Killed(BaseException):
        pass

    def __init__(self, step: int):
        self.step = step

    def after_step(self, trainer):
        if trainer.state.global_step == self.step:
            raise self.Killed


def interrupted_run(tmp_path: Path, runs: Path) -> Path:
    """A 4-step tiny run in ``runs`` whose process went away after step 3 (its checkpoint is step 2's): what a
    closed app, terminal or a power cut leaves. Its folder."""
    from trainer.train.loop import run_training

    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=4), runs, {"train.max_steps": 4, "save.every_steps": 2})
    with pytest.raises(KilledAfter.Killed):
        run_training(cfg, MemorySink(), hooks=KilledAfter(3))
    (config,) = runs.glob("*/*/config.toml")
    paths = RunPaths(config.parent)
    status = json.loads(paths.status.read_text())
    assert status["status"] == "running" and [r["step"] for r in read_jsonl(paths.metrics)] == [1, 2, 3]
    paths.status.write_text(json.dumps({**status, "pid": dead_pid()}))  # the process is gone
    return paths.root


@pytest.mark.slow
def test_the_app_offers_and_continues_a_run_the_computer_interrupted(tmp_path):
    """The app is opened again after the computer went off while a run trained (step 3 done, checkpoint at 2): the
    Train step says so and what Continue does, and Continue trains it to its end in its own folder."""
    gradio_client = pytest.importorskip("gradio_client")
    from tests.test_ui_flow import Api
    from ui.steps.train_poll import continuable_run, train_status
    from ui.testing import running_app

    ws = tmp_path / "ws"
    run = interrupted_run(tmp_path, ws / "runs")
    paths = RunPaths(run)
    with running_app(ws) as app:
        api = Api(app, gradio_client.Client(app.url, verbose=False))
        rel = app.ctx.run_rel(run)
        assert continuable_run(app.ctx) == (run, 2, "interrupted")
        shown = api("poll")["status_md"]
        assert f"<code>{rel}</code> was interrupted while it trained" in shown
        assert "last complete checkpoint, step 2" in shown, shown
        snap = app.ctx.runner.snapshot()
        ko = train_status(app.ctx, snap, "ko", None, continuable_run(app.ctx))
        assert f"`{rel}` 실행이 학습 중에 중단됐습니다" in ko and "2스텝부터 이어 가며" in ko
        assert f"Continuing {rel} from step 2" in api("continue")["train_msg"]
        done = api.wait()
        assert done["status"] == "finished" and done["run"] == rel and done["rows"] == 4, done
        assert [r["step"] for r in read_jsonl(paths.metrics)] == [1, 2, 3, 4]
        assert (run / "final" / "lora.safetensors").is_file()
        assert continuable_run(app.ctx) is None
        assert "No paused, stopped, interrupted or failed run to continue" in api("continue")["train_msg"]
        assert "Continue" not in api("poll")["status_md"]


@pytest.mark.slow
def test_a_run_stopped_by_its_user_continues_from_where_it_stopped(tmp_path):
    """Stop writes its step's checkpoint and final/: Continue trains the rest of the plan and final/ is the end's."""
    from safetensors.torch import load_file

    from trainer.train.commands import Commands
    from trainer.train.loop import run_training
    from trainer.train.runner import Runner

    class StopAt(Hooks):
        def __init__(self, commands: Commands, at: int):
            self.commands, self.at = commands, at

        def after_step(self, trainer):
            if trainer.state.global_step == self.at:
                self.commands.stop()

    commands = Commands()
    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=4), tmp_path / "runs", {"train.max_steps": 4})
    stopped = run_training(cfg, MemorySink(), commands, hooks=StopAt(commands, 2))
    run = stopped.run_dir
    assert stopped.status == "stopped" and continue_step(run) == 2
    early = load_file(run / "final" / "lora.safetensors")
    runner = Runner()
    assert runner.continue_run(run)[0] and runner.wait(300)
    assert runner.snapshot().status == "finished", runner.snapshot().message
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl")] == [1, 2, 3, 4]
    end = load_file(run / "final" / "lora.safetensors")
    assert end.keys() == early.keys() and any(not (end[k] == early[k]).all() for k in end)


@pytest.mark.slow
def test_the_command_line_continues_a_run_with_its_own_settings(tmp_path, capsys):
    """`train --resume RUN_DIR` without a config takes the run's config.toml: it read the defaults and said
    "dataset.path is empty"."""
    from trainer.cli import main
    from trainer.train.commands import Commands
    from trainer.train.loop import run_training

    commands = Commands()

    class PauseAt2(Hooks):
        def after_step(self, trainer):
            if trainer.state.global_step == 2:
                commands.pause()

    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=4), tmp_path / "runs", {"train.max_steps": 4})
    run = run_training(cfg, MemorySink(), commands, hooks=PauseAt2()).run_dir
    settings = (run / "config.toml").read_text()
    assert main(["train", "--resume", str(run), "--quiet"]) == 0
    assert run_status(run)["status"] == "finished" and (run / "config.toml").read_text() == settings
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl")] == [1, 2, 3, 4]
    assert main(["train", "--resume", str(tmp_path / "nowhere")]) == 2
    assert "not a run folder (no config.toml)" in capsys.readouterr().err


@pytest.mark.slow
def test_review_continues_an_older_run_that_the_train_step_does_not_offer(tmp_path):
    """A run interrupted, then another trained to its end: Train's Continue takes only the newest run (finished), and
    Review's "Continue this run" shows for the interrupted one alone and carries it on."""
    gradio_client = pytest.importorskip("gradio_client")
    from tests.test_ui_flow import Api
    from trainer.train.loop import run_training
    from ui.steps.review import review_view
    from ui.steps.train_poll import continuable_run
    from ui.testing import running_app

    ws = tmp_path / "ws"
    older = interrupted_run(tmp_path, ws / "runs")
    time.sleep(1.1)  # the newer run's folder is named by the second it started
    newer = run_training(tiny_config(tmp_path / "data", ws / "runs", {"train.max_steps": 2}), MemorySink()).run_dir
    with running_app(ws) as app:
        api = Api(app, gradio_client.Client(app.url, verbose=False))
        assert continuable_run(app.ctx) is None  # the newest run finished

        def offered(run: Path) -> bool:  # (a button is not in the API's outputs: what the handler shows)
            return review_view(SimpleNamespace(ctx=app.ctx), app.ctx.run_rel(run), "en")["review_continue"].visible

        assert offered(older) and not offered(newer)
        rel = app.ctx.run_rel(older)
        assert f"Continuing {rel} from step 2" in api("continue_chosen", review_run=rel)["train_msg"]
        done = api.wait()
        assert done["status"] == "finished" and done["run"] == rel and done["rows"] == 4, done
        assert not offered(older)
        assert "only a paused, stopped, interrupted or failed run" in api("continue_chosen",
                                                                          review_run=rel)["review_msg"]
