"""Pause and Continue: a pause checkpoints the exact state of its step, ends the run as "paused" and frees the
models; Continue resumes it in the same folder and ends with the tensors an uninterrupted run has."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.helpers import tiny_config, write_toy_dataset
from tests.test_run_state import Record, _final_tensors
from trainer.config.schema import load_config
from trainer.io import read_jsonl
from trainer.run.events import MemorySink
from trainer.run.rundir import latest_checkpoint, run_status
from trainer.train.commands import Commands
from trainer.train.loop import run_training
from trainer.train.runner import Runner

pytestmark = pytest.mark.slow

OVER = {"train.max_steps": 4, "train.grad_accum": 2, "train.batch_size": 1, "ema.enabled": True,
        "dataset.caption_dropout": 0.2}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_toy_dataset(tmp_path_factory.mktemp("data"))


class PauseAt(Record):
    """Records like :class:`Record` and asks for a pause once the run reaches ``at`` steps."""

    def __init__(self, commands: Commands, at: int):
        super().__init__(commands)
        self.at = at

    def after_step(self, trainer):
        if trainer.state.global_step == self.at:
            self.commands.pause()


def test_pause_then_continue_ends_bitwise_equal_to_an_uninterrupted_run(dataset, tmp_path):
    straight_hooks = Record()
    straight = run_training(tiny_config(dataset, tmp_path / "a", OVER), MemorySink(), hooks=straight_hooks)
    assert straight.status == "finished", straight.message

    commands = Commands()
    first_hooks = PauseAt(commands, at=2)
    sink = MemorySink()
    first = run_training(tiny_config(dataset, tmp_path / "b", OVER), sink, commands, hooks=first_hooks)
    assert first.status == "paused" and first.exit_code == 130, first.message
    run = first.run_dir
    assert first_hooks.trainer.models is None and first_hooks.trainer.state is None  # the models were let go
    assert latest_checkpoint_step(run) == 2 and not (run / "final").exists()
    paused = sink.of_type("paused")
    assert len(paused) == 1 and paused[0].checkpoint == str(run / "checkpoints" / "step-000002")
    assert not sink.of_type("finished") and not sink.of_type("stopped")

    # Continue: the run folder's own settings, resumed in place
    resumed_hooks = Record()
    resumed = run_training(load_config(run / "config.toml"), MemorySink(), resume=run, hooks=resumed_hooks)
    assert resumed.status == "finished" and resumed.run_dir == run, resumed.message
    assert run_status(run)["status"] == "finished"

    assert first_hooks.batches + resumed_hooks.batches == straight_hooks.batches
    a, b = _final_tensors(straight_hooks.trainer), _final_tensors(resumed_hooks.trainer)
    assert a.keys() == b.keys() and any(k.startswith("ema.") for k in a)
    assert any(".exp_avg_sq" in k for k in a)  # Adam's second moments are among the compared tensors
    unequal = [k for k in a if not torch.equal(a[k], b[k])]
    assert not unequal, unequal[:5]
    # one metrics file, its rows continuing where the pause left them, the same losses as the straight run's
    rows, straight_rows = read_jsonl(run / "metrics.jsonl"), read_jsonl(straight.run_dir / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    assert [r["loss"] for r in rows] == [r["loss"] for r in straight_rows]


def latest_checkpoint_step(run: Path) -> int | None:
    from trainer.run.rundir import RunPaths

    last = latest_checkpoint(RunPaths(run))
    return int(last.name.removeprefix("step-")) if last else None


def test_a_paused_run_says_paused_in_status_diagnose_and_run_lists(dataset, tmp_path, capsys):
    from trainer.cli import main
    from ui.context import status_label

    commands = Commands()
    result = run_training(tiny_config(dataset, tmp_path, {"train.max_steps": 3}), MemorySink(), commands,
                          hooks=PauseAt(commands, at=1))
    assert result.status == "paused", result.message
    status = run_status(result.run_dir)
    assert status["status"] == "paused" and status["step"] == 1
    assert status_label(status, "en") == "paused" and status_label(status, "ko") == "일시정지됨"
    assert main(["diagnose", str(result.run_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "paused"
    assert main(["diagnose", str(result.run_dir)]) == 0
    assert "status: paused" in capsys.readouterr().out


def test_a_pause_asked_for_at_the_last_step_just_finishes(dataset, tmp_path):
    commands = Commands()
    result = run_training(tiny_config(dataset, tmp_path, {"train.max_steps": 2}), MemorySink(), commands,
                          hooks=PauseAt(commands, at=2))
    assert result.status == "finished", result.message
    assert (result.run_dir / "final" / "lora.safetensors").is_file()


def test_the_runner_pauses_frees_the_thread_and_continues_with_the_earlier_rows(dataset, tmp_path):
    from trainer.errors import UserError

    runner = Runner()
    runner.start(tiny_config(dataset, tmp_path, {"train.max_steps": 3}))
    assert runner.pause()  # asked while the models load: the first step completes, then the run pauses
    assert runner.wait(300)
    snap = runner.snapshot()
    assert snap.status == "paused" and not snap.active and snap.step == 1
    assert not runner.pause()  # nothing active to pause
    run = snap.run_dir

    ok, _ = runner.continue_run(run)
    assert ok and runner.snapshot().run_dir == run  # the same run from the first moment
    assert runner.wait(300)
    snap = runner.snapshot()
    assert snap.status == "finished", snap.message
    assert [r.step for r in snap.metrics] == [1, 2, 3]  # the plots carry on from the paused rows
    assert snap.step == 3 and len(read_jsonl(Path(run) / "metrics.jsonl")) == 3
    with pytest.raises(UserError, match="only a paused, stopped, interrupted or failed run"):
        runner.continue_run(run)


def test_pause_and_continue_through_the_app_end_with_the_uninterrupted_weights(tmp_path):
    gradio_client = pytest.importorskip("gradio_client")
    from safetensors.torch import load_file

    from tests.test_ui_flow import SHORT, Api
    from ui.testing import running_app

    with running_app(tmp_path / "ws") as app:
        api = Api(app, gradio_client.Client(app.url, verbose=False))
        assert "started" in api("start", **SHORT)["train_msg"].lower()
        assert "Pausing after this step" in api("pause")["train_msg"]
        paused = api.wait()
        assert paused["status"] == "paused" and paused["step"] == 1, paused
        assert "paused" in api("poll")["status_md"]
        assert not (app.ctx.runs_dir / paused["run"] / "final").exists()

        continued = api("continue")
        assert f"Continuing {paused['run']} from step 1" in continued["train_msg"], continued
        done = api.wait()
        assert done["status"] == "finished" and done["run"] == paused["run"] and done["rows"] == 4, done
        assert "No paused, stopped, interrupted or failed run" in api("continue")["train_msg"]

        api("start", **SHORT)
        straight = api.wait()
        assert straight["status"] == "finished" and straight["run"] != done["run"]
        a = load_file(app.ctx.runs_dir / done["run"] / "final" / "lora.safetensors")
        b = load_file(app.ctx.runs_dir / straight["run"] / "final" / "lora.safetensors")
        assert a.keys() == b.keys() and a
        assert [k for k in a if not torch.equal(a[k], b[k])] == []
        steps = [r["step"] for r in read_jsonl(app.ctx.runs_dir / done["run"] / "metrics.jsonl")]
        assert steps == [1, 2, 3, 4]
