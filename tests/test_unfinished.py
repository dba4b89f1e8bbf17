"""A run that stopped before its plan's end is judged on what it learned so far: an under-trained verdict on it says
"continue it" before any change of a setting, Troubleshoot's first cause is that it has not finished and its first
prescription Continue, in both languages; once continued to its end, none of that is said any more. A run that
finished, or was stopped at its last step, is never told to continue."""

from __future__ import annotations

from pathlib import Path

import pytest

import words
from tests.helpers import tiny_config
from tests.test_continue import interrupted_run
from trainer.run.events import MemorySink


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory) -> Path:
    """A 4-step tiny run interrupted after step 3 (checkpoint: step 2); the dataset at ``<tmp>/data``."""
    tmp = tmp_path_factory.mktemp("unfinished")
    return interrupted_run(tmp, tmp / "runs")


def _first(diag: dict, kind: str) -> dict:
    return next(x for x in diag[kind] if not x.get("lesser"))


def test_an_interrupted_run_is_told_to_continue_before_any_change(interrupted):
    from trainer.doctor.diagnose import diagnose
    from ui.i18n import t
    from ui.steps.troubleshoot import action_buttons, findings_markdown, symptom_markdown

    diag = diagnose(interrupted)
    verdict = diag["verdict"]
    assert verdict["label"] == "under"
    assert verdict["summary"]["en"].startswith("Under-trained so far: the run stopped at step 3 of the 4 it planned. "
                                               "Continue it before changing a setting")
    assert verdict["summary"]["ko"].startswith("아직 미적합: 계획한 4스텝 중 3스텝에서 멈춘 실행입니다.")
    (found,) = [o for o in diag["observed"] if o["signal"] == "run_unfinished"]
    assert found["level"] == "info" and diag["healthy"]  # not a problem of the run: a fact about it
    assert found["values"] == {"step": 3, "planned": 4, "resume_step": 2, "status": "interrupted"}
    assert "Continue trains the rest from its checkpoint at step 2" in found["message"]["en"]
    assert "computer closed" in found["message"]["en"] and "컴퓨터가 닫힘" in found["message"]["ko"]
    cause, rx = _first(diag, "causes"), _first(diag, "prescriptions")
    assert cause["id"] == "unfinished" and rx["id"] == "continue_run" and rx["applicable"]
    assert cause["title"] == {"en": "The run has not finished", "ko": "실행이 아직 끝나지 않음"}
    # the changes of a setting come after it, still offered for a run that stays short once finished
    assert [p["id"] for p in diag["prescriptions"] if p["applicable"]][1:3] == ["raise_steps", "raise_lr"]
    assert not next(p for p in diag["prescriptions"] if p["id"] == "restart_run")["applicable"]  # it can go on
    for lang, title in (("en", "Continue this run"), ("ko", "이 실행 이어 가기")):
        shown = findings_markdown(diag, lang)
        label = f"{t('status_interrupted', lang)}, {t('status_resume_from', lang, step=2)}"  # not "no checkpoint"
        assert shown.startswith(f"### {t('findings_title', lang, status=label)}"), shown
        assert shown.index(cause["title"][lang]) < shown.index(diag["causes"][1]["title"][lang]), shown
        button = action_buttons(diag, lang)["ts_go_review"]
        assert button.visible and button.value == f"{title} →"
    # picked as a symptom, Continue is offered for this run
    shown = symptom_markdown("stopped_before_end", interrupted, "en", diag)
    assert "~~Continue this run~~" not in shown and "- Continue this run" in shown, shown
    assert f"~~Start it again with the same settings~~ ({t('continuable', 'en')})" in shown, shown


def test_a_run_interrupted_before_its_first_checkpoint_is_told_to_start_again(tmp_path):
    """The same interruption with no checkpoint saved yet: it is unfinished all the same ("train longer or raise
    the lr" is still not the advice), but Continue has nothing to go on from: start it again, same settings."""
    import shutil

    from trainer.doctor.diagnose import diagnose
    from trainer.run.rundir import RunPaths
    from ui.i18n import t
    from ui.steps.troubleshoot import action_buttons, symptom_markdown

    run = interrupted_run(tmp_path, tmp_path / "runs")
    shutil.rmtree(RunPaths(run).checkpoints)
    diag = diagnose(run)
    (found,) = [o for o in diag["observed"] if o["signal"] == "run_unfinished"]
    assert found["values"] == {"step": 3, "planned": 4, "resume_step": None, "status": "interrupted"}
    assert "before its first checkpoint" in found["message"]["en"] and "첫 체크포인트 전에" in found["message"]["ko"]
    summary = diag["verdict"]["summary"]
    assert diag["verdict"]["label"] == "under"
    assert summary["en"].startswith("Under-trained so far: the run stopped at step 3 of the 4 it planned, before "
                                    "its first checkpoint. Start it again with the same settings"), summary
    assert "같은 설정으로 다시 시작하세요" in summary["ko"]
    assert _first(diag, "causes")["id"] == "unfinished"
    applicable = [p["id"] for p in diag["prescriptions"] if p["applicable"] and not p["lesser"]]
    assert applicable[0] == "restart_run" and "continue_run" not in applicable
    assert not action_buttons(diag, "en")["ts_go_review"].visible  # no Continue button to show
    for lang in ("en", "ko"):
        shown = symptom_markdown("stopped_before_end", run, lang, diag)
        continue_title, restart_title = (("Continue this run", "Start it again with the same settings") if lang == "en"
                                         else ("이 실행 이어 가기", "같은 설정으로 다시 시작"))
        assert f"~~{continue_title}~~ ({t('not_continuable', lang)})" in shown, shown
        assert f"- {restart_title}" in shown and f"~~{restart_title}~~" not in shown, shown


def test_once_continued_to_its_end_it_is_judged_as_a_finished_run(tmp_path):
    from trainer.doctor.diagnose import diagnose
    from trainer.train.runner import Runner
    from ui.i18n import t
    from ui.steps.troubleshoot import symptom_markdown

    run = interrupted_run(tmp_path, tmp_path / "runs")
    runner = Runner()
    assert runner.continue_run(run)[0] and runner.wait(300)
    assert runner.snapshot().status == "finished", runner.snapshot().message
    diag = diagnose(run)
    assert not [o for o in diag["observed"] if o["signal"] == "run_unfinished"]
    assert "unfinished" not in [c["id"] for c in diag["causes"]]
    assert not diag["verdict"]["summary"]["en"].startswith("Under-trained so far")
    # a user who picks "it stopped before its end" on it is told Continue does not apply
    for lang in ("en", "ko"):
        assert f"~~{'Continue this run' if lang == 'en' else '이 실행 이어 가기'}~~ ({t('not_continuable', lang)})" in \
            symptom_markdown("stopped_before_end", run, lang, diag)


def test_a_run_stopped_at_its_last_step_is_not_unfinished(tmp_path):
    from tests.helpers import write_toy_dataset
    from trainer.doctor.registry import RunInputs, collect
    from trainer.run.contents import load_run_config
    from trainer.train.commands import Commands
    from trainer.train.hooks import Hooks
    from trainer.train.loop import run_training

    commands = Commands()

    class StopAt(Hooks):
        def __init__(self, at: int):
            self.at = at

        def after_step(self, trainer):
            if trainer.state.global_step == self.at:
                commands.stop()

    data = write_toy_dataset(tmp_path / "data", n=4)
    for at, unfinished in ((2, True), (4, False)):
        cfg = tiny_config(data, tmp_path / f"runs{at}", {"train.max_steps": 4})
        run = run_training(cfg, MemorySink(), commands, hooks=StopAt(at)).run_dir
        found = next((f for f in collect(RunInputs.read(run, load_run_config(run)), "progress")
                      if f.signal == "run_unfinished"), None)
        assert (found is not None) == unfinished, (at, found)
        if found:
            assert found.values["status"] == "stopped" and found.values["resume_step"] == 2
        commands = Commands()


def test_a_run_judged_while_it_trains_is_not_told_to_change_a_setting(tmp_path):
    """Review of a run that is still training: under-trained so far, judged when it ends (it said: train longer or
    raise the learning rate)."""
    from tests.helpers import write_toy_dataset
    from trainer.doctor.verdict import run_verdict
    from trainer.train.hooks import Hooks
    from trainer.train.loop import run_training

    seen = {}

    class JudgeAt3(Hooks):
        def after_step(self, trainer):
            if trainer.state.global_step == 3:  # its checkpoint at step 2 is written
                seen["verdict"] = run_verdict(trainer.paths.root)

    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=4), tmp_path / "runs",
                      {"train.max_steps": 4, "save.every_steps": 2})
    run = run_training(cfg, MemorySink(), hooks=JudgeAt3()).run_dir
    verdict = seen["verdict"]
    assert verdict.label == "under"
    said = {lang: words.say(verdict.summary, lang) for lang in ("en", "ko")}
    assert said["en"] == ("Under-trained so far: the run is still training (its last save is step 2 of the 4 it "
                          "plans). Judge it when it ends."), said
    assert "끝난 뒤에 판정하세요" in said["ko"] and "2스텝" in said["ko"]
    assert not words.say(run_verdict(run).summary, "en").startswith("Under-trained so far")  # finished


def test_a_paused_run_that_reads_fit_keeps_its_verdict_and_lists_continuing_last(tmp_path):
    """Paused at step 30 of 60 with its pictures showing the subject: fit, use the save it recommends; that it has
    not finished is observed and its cause comes after the others (it points to under-trained)."""
    import torch

    from tests.test_verdict import _healthy_demo, demo_run
    from trainer.doctor.diagnose import diagnose
    from trainer.io import atomic_write_json
    from trainer.run.rundir import RunPaths, write_checkpoint_marker, write_status

    run = demo_run(tmp_path, _healthy_demo)
    paths = RunPaths(run)
    folder = paths.step_dir(30)
    torch.save({"step": 30}, folder / "state.pt")
    write_checkpoint_marker(folder, 30)
    atomic_write_json(paths.plan, {"total_steps": 60})
    write_status(paths, "paused", step=30)
    diag = diagnose(run, write=False)
    assert diag["verdict"]["label"] == "fit" and diag["verdict"]["summary"]["en"].startswith("Fit: use step")
    (found,) = [o for o in diag["observed"] if o["signal"] == "run_unfinished"]
    assert found["values"] == {"step": 30, "planned": 60, "resume_step": 30, "status": "paused"}
    (cause,) = [c for c in diag["causes"] if c["id"] == "unfinished"]
    assert cause["lesser"] and all(c["lesser"] for c in diag["causes"][diag["causes"].index(cause):])


def test_a_run_the_device_ran_out_of_memory_for_is_told_what_to_change(tmp_path):
    """torch's out-of-memory error at step 3 (checkpoint at 2): the run's last words say what to change and that it
    can go on once the memory is back; the diagnosis's first cause is the memory and its first prescription
    gradient checkpointing; that it has not finished comes next, with Continue. A failure of another kind is not
    taken for one."""
    import torch

    from tests.helpers import write_toy_dataset
    from trainer.doctor.diagnose import diagnose
    from trainer.errors import is_out_of_memory
    from trainer.io import read_jsonl
    from trainer.train.hooks import Hooks
    from trainer.train.loop import run_training

    class OutOfMemoryAt3(Hooks):
        def after_step(self, trainer):
            if trainer.state.global_step == 3:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                                             "capacity of 7.79 GiB of which 1.02 GiB is free.")

    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=4), tmp_path / "runs",
                      {"train.max_steps": 4, "save.every_steps": 2})
    result = run_training(cfg, MemorySink(), hooks=OutOfMemoryAt3())
    assert result.status == "failed"
    alerts = [e for e in read_jsonl(result.run_dir / "events.jsonl") if e.get("type") == "alert"]
    assert [a["kind"] for a in alerts] == ["run_out_of_memory"] and alerts[0]["level"] == "error"
    said = alerts[0]["message"]  # worded in both languages in the file; the run's last words are its English
    assert result.message == said["en"]
    assert said["en"].startswith("the device ran out of memory at step 3 (CUDA out of memory. Tried to allocate"), said
    assert "gradient checkpointing on" in said["en"] and "'Fit to memory'" in said["en"]
    assert said["en"].endswith("Continue: the run goes on from its last complete checkpoint, step 2.")
    assert "3스텝에서 장치의 메모리가 모자랐습니다" in said["ko"] and "'메모리에 맞추기'" in said["ko"]

    diag = diagnose(result.run_dir)
    causes = [c["id"] for c in diag["causes"] if not c["lesser"]]
    assert causes[:2] == ["out_of_memory", "unfinished"], causes
    assert diag["causes"][0]["title"]["ko"] == "실행에 드는 메모리가 장치에 남은 메모리보다 많음"
    first = diag["prescriptions"][0]
    assert first["id"] == "gradient_checkpointing_on" and first["applicable"]
    assert first["change"]["diff"] == {"train.gradient_checkpointing": [False, True]}
    ids = [p["id"] for p in diag["prescriptions"]]
    assert ids[:4] == ["gradient_checkpointing_on", "halve_batch_for_memory", "lower_resolution_for_memory",
                       "continue_run"], ids
    (found,) = [o for o in diag["observed"] if o["signal"] == "run_out_of_memory"]
    assert found["level"] == "error" and "CUDA out of memory" in found["message"]["en"]
    summary = diag["verdict"]["summary"]
    assert diag["verdict"]["label"] == "under"  # (the tiny run's dose) not "continue it before changing a setting"
    assert "when the device ran out of memory" in summary["en"] and "메모리가 모자라" in summary["ko"], summary

    assert is_out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 9 bytes"))
    assert is_out_of_memory("MPS backend out of memory (MPS allocated: 17.00 GB)")
    assert not is_out_of_memory(RuntimeError("Expected all tensors to be on the same device"))


def test_the_app_says_an_out_of_memory_failure_in_its_readers_language(tmp_path, monkeypatch):
    """Run by the app's runner, a save that runs out of memory: the Train step's status says what happened and what
    to change in Korean for a Korean reader, not torch's English (and the English for an English one)."""
    import torch

    from tests.helpers import write_toy_dataset
    from trainer.train import checkpoint
    from trainer.train.runner import Runner
    from ui.live import status_line

    real, calls = checkpoint.save_state, []

    def out_of_memory_at_second_save(state, path):
        calls.append(path)
        if len(calls) == 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 512.00 MiB.")
        return real(state, path)

    monkeypatch.setattr(checkpoint, "save_state", out_of_memory_at_second_save)
    runner = Runner()
    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=4), tmp_path / "runs",
                      {"train.max_steps": 4, "save.every_steps": 1})
    assert runner.start(cfg)[0] and runner.wait(300)
    snap = runner.snapshot()
    assert snap.status == "failed" and snap.refusal is not None
    ko, en = status_line(snap, "ko"), status_line(snap, "en")
    assert "2스텝에서 장치의 메모리가 모자랐습니다(CUDA out of memory. Tried to allocate 512.00 MiB.)" in ko, ko
    assert "'계속'을 누르세요. 마지막으로 온전한 체크포인트인 1스텝부터" in ko and "the device ran out" not in ko
    assert "the device ran out of memory at step 2" in en, en


def test_a_real_cuda_out_of_memory_is_recognised(tmp_path):
    """On a CUDA device (bench/gpu_check.sh part 4): torch's own out-of-memory error, from an allocation no card
    holds, ends the run with the words above and the diagnosis's memory cause."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("a real CUDA out of memory needs a CUDA device")
    from tests.helpers import write_toy_dataset
    from trainer.doctor.diagnose import diagnose
    from trainer.train.hooks import Hooks
    from trainer.train.loop import run_training

    class Allocates(Hooks):
        def after_step(self, trainer):
            if trainer.state.global_step == 2:
                torch.empty(2**50, dtype=torch.uint8, device="cuda")  # a petabyte

    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=4), tmp_path / "runs",
                      {"train.max_steps": 4, "save.every_steps": 1, "train.device": "cuda"})
    result = run_training(cfg, MemorySink(), hooks=Allocates())
    assert result.status == "failed" and result.message.startswith("the device ran out of memory at step 2"), result
    assert diagnose(result.run_dir)["causes"][0]["id"] == "out_of_memory"


def test_a_thread_dying_of_a_base_exception_leaves_a_failed_run_not_a_running_one(tmp_path, monkeypatch):
    """SystemExit raised inside the app's training thread (a library calling sys.exit): the app lives on, so its
    run folder must not go on saying "running" (Review would show a run that never moves, and Continue would refuse
    it); it says failed, with the checkpoint Continue carries on from, and the runner's snapshot says failed."""
    from tests.helpers import write_toy_dataset
    from trainer.run.rundir import continue_step, run_status
    from trainer.train.hooks import Hooks
    from trainer.train.runner import Runner

    class ExitAt3(Hooks):
        def after_step(self, trainer):
            if trainer.state.global_step == 3:
                raise SystemExit(7)

    import trainer.train.loop as loop

    runner = Runner()
    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=4), tmp_path / "runs",
                      {"train.max_steps": 4, "save.every_steps": 2})
    real = loop.run_training
    monkeypatch.setattr(loop, "run_training", lambda *a, **k: real(*a, **k, hooks=ExitAt3()))  # the runner has none
    assert runner.start(cfg)[0] and runner.wait(300)
    snap = runner.snapshot()
    assert snap.status == "failed" and snap.message == "SystemExit: 7", snap
    run = Path(snap.run_dir)
    status = run_status(run)
    assert status["status"] == "failed" and status["error"] == "SystemExit: 7" and status["resume_step"] == 2, status
    assert continue_step(run, status) == 2
