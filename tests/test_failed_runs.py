"""A run that failed is told what stopped it, whatever the error: the diagnosis lists the error (a refusal worded as
the app words it, in both languages), its first cause is that something outside the settings stopped the run and
its prescriptions are to mend that and continue, or start again when there is nothing to continue from. A run that
never trained a step is not judged at all ("nothing to judge"), never "fit: nothing needs to change"; one that failed
partway and reads under-trained is told to mend and continue before changing a setting."""

from __future__ import annotations

import pytest

import words  # noqa: F401  (messages worded in both languages)
from tests.helpers import tiny_config, write_toy_dataset
from trainer.errors import UserError
from trainer.message import msg
from trainer.run.events import MemorySink


def _prescribed(diag: dict) -> list[str]:
    return [p["id"] for p in diag["prescriptions"] if p["applicable"] and not p["lesser"]]


def _config(tmp_path, **over):
    return tiny_config(write_toy_dataset(tmp_path / "data", n=4), tmp_path / "runs", {"train.max_steps": 4, **over})


def test_a_run_refused_after_its_folder_was_made_has_nothing_to_judge(tmp_path, monkeypatch):
    """A refusal while the models load (a trigger the tokenizer cannot read): not "fit", not healthy; the refusal is
    worded in Korean too; Continue is not offered (no checkpoint)."""
    import trainer.train.loop as loop
    from trainer.doctor.diagnose import diagnose
    from trainer.run.rundir import run_status

    def refuse(*a, **k):
        raise UserError(msg("error.trigger.no_tokens", trigger="zxc"))

    monkeypatch.setattr(loop, "run_models", refuse)
    with pytest.raises(UserError):
        loop.run_training(_config(tmp_path), MemorySink())
    (run,) = [p.parent for p in (tmp_path / "runs").rglob("status.json")]
    assert run_status(run)["refusal"]["code"] == "error.trigger.no_tokens"
    diag = diagnose(run)
    assert diag["verdict"]["label"] == "none" and not diag["healthy"]
    summary = diag["verdict"]["summary"]  # what stopped it, in the summary: Review shows no observations
    assert summary["en"] == ("Nothing to judge: the run was refused before its first step: dataset.trigger 'zxc': the "
                             "tokenizer makes no tokens of it; use a word. Mend that and start it again."), summary
    assert summary["ko"].startswith("판정할 것이 없습니다: 첫 스텝 전에 실행이 거부됨: ") and "zxc" in summary["ko"]
    from ui.steps.review import recommendation_markdown

    shown = recommendation_markdown(None, "ko", run)  # Review, on a run without checkpoints
    assert 'data-verdict="none"' in shown and summary["ko"] in shown and "체크포인트를 저장하지 않았습니다" in shown
    found = diag["observed"][0]  # (then what the plan foresaw: the tiny run's dose)
    assert found["signal"] == "run_failed" and found["level"] == "error"
    assert found["message"]["en"].startswith("the run was refused before its first step: ")
    assert "zxc" in found["message"]["ko"] and found["message"]["ko"] != found["message"]["en"]
    assert diag["causes"][0]["id"] == "run_error" and not diag["causes"][0]["lesser"]
    assert all(c["lesser"] for c in diag["causes"][1:])  # the plan's dose is no cause of a run that trained nothing
    assert {c["why_lesser"]["en"] for c in diag["causes"][1:]} <= {"the run trained no step that could show it"}
    assert _prescribed(diag) == ["mend_and_restart"]


def test_a_run_that_failed_partway_is_told_what_stopped_it(tmp_path):
    """A picture that went away at step 3 (no checkpoint before it): the error is the first observation and cause,
    the verdict under-trained "so far" with the error to mend, never "train longer or raise the lr" first."""
    from trainer.doctor.diagnose import diagnose
    from trainer.train.hooks import Hooks
    from trainer.train.loop import run_training

    class PictureGoneAt3(Hooks):
        def after_step(self, trainer):
            if trainer.state.global_step == 3:
                raise FileNotFoundError(2, "No such file or directory", "data/zxc_001.png")

    result = run_training(_config(tmp_path, **{"save.every_steps": 0}), MemorySink(), hooks=PictureGoneAt3())
    assert result.status == "failed"
    diag = diagnose(result.run_dir)
    assert diag["observed"][0]["signal"] == "run_failed"
    assert diag["observed"][0]["message"]["en"] == ("the run failed at step 3: [Errno 2] No such file or directory: "
                                                     "'data/zxc_001.png'")
    assert diag["observed"][0]["message"]["ko"].startswith("3스텝에서 실행이 실패함: ")
    assert diag["verdict"]["label"] == "under"
    summary = diag["verdict"]["summary"]
    assert summary["en"].startswith("Under-trained so far: the run failed at step 3: [Errno 2] No such file or "
                                    "directory: 'data/zxc_001.png' (of the 4 steps it planned). Mend what"), summary
    assert summary["ko"].startswith("아직 미적합: 3스텝에서 실행이 실패함: [Errno 2]") and "(계획은 4스텝)" in summary["ko"]
    assert diag["causes"][0]["id"] == "run_error"
    assert _prescribed(diag)[0] == "mend_and_restart"  # no checkpoint: nothing to continue
    from ui.steps.troubleshoot import symptom_markdown

    shown = symptom_markdown("stopped_before_end", result.run_dir, "en", diag)  # picked by hand: start it again
    assert "~~Continue this run~~" in shown and "- Start it again with the same settings" in shown, shown


def test_a_failed_run_with_a_checkpoint_is_told_to_continue_once_mended(tmp_path):
    from trainer.doctor.diagnose import diagnose
    from trainer.train.hooks import Hooks
    from trainer.train.loop import run_training

    class RefusedAt3(Hooks):  # bad input found mid-run: the refusal's words are kept
        def after_step(self, trainer):
            if trainer.state.global_step == 3:
                raise UserError(msg("error.train.no_usable", path="data"))

    with pytest.raises(UserError):
        run_training(_config(tmp_path, **{"save.every_steps": 2}), MemorySink(), hooks=RefusedAt3())
    (run,) = [p.parent for p in (tmp_path / "runs").rglob("status.json")]
    diag = diagnose(run)
    assert diag["resume_step"] == 2
    failed = next(o for o in diag["observed"] if o["signal"] == "run_failed")
    assert failed["message"]["en"].startswith("the run failed at step 3: ") and "data" in failed["message"]["en"]
    assert failed["message"]["ko"] != failed["message"]["en"]
    assert [c["id"] for c in diag["causes"] if not c["lesser"]][:2] == ["run_error", "unfinished"]
    assert _prescribed(diag)[:2] == ["continue_run", "mend_and_restart"]


def test_a_trigger_embedding_without_a_trigger_is_refused_before_a_run_folder(tmp_path):
    from trainer.train.loop import run_training

    cfg = _config(tmp_path, **{"lora.trigger_embedding": True})
    cfg.dataset.trigger = ""
    with pytest.raises(UserError, match=r"lora\.trigger_embedding needs dataset\.trigger"):
        run_training(cfg, MemorySink())
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").rglob("status.json"))
