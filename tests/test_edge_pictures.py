"""trainer.train.edges: once a run finishes, the saves a picture judge reads near its likeness line are drawn again
at ``measure.edge_pictures`` a prompt and read; in the trigger hold's transition band that reading decides."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

import words
from tests.helpers import tiny_config, write_toy_dataset
from trainer.doctor import judges, pictures
from trainer.doctor.model_lines import HOLD_EDGE, HOLD_SHOWS, HOLD_SURE, model_observations
from trainer.doctor.verdict import LIKENESS_EDGE, LIKENESS_SHOWS
from trainer.run.events import Alert, Finished, MemorySink, Progress
from trainer.run.samples import expand_prompts
from trainer.train.commands import Commands


def _near_line(config, base_pictures):
    """A judge that applies to the toy run and reads every picture just under the likeness line."""
    return lambda p: {"likeness": LIKENESS_SHOWS - LIKENESS_EDGE / 2}


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory):
    """One tiny run trained while a judge reading its pictures near the line was registered: what it left."""
    from trainer.train.loop import run_training

    root = tmp_path_factory.mktemp("edges")
    data = write_toy_dataset(root / "data", n=4)
    cfg = tiny_config(data, root / "runs", {"train.max_steps": 4, "save.every_steps": 2, "optim.lr": 5e-2,
                                            "sample.enabled": True, "sample.steps": 2, "measure.edge_pictures": 3})
    sink = MemorySink()
    judges.register_judge(judges.PictureJudge("near-line", _near_line))
    try:
        result = run_training(cfg, sink)
    finally:
        judges._JUDGES.pop("near-line")
        pictures._measured.cache_clear()
    assert result.status == "finished", result.message
    return result, sink.snapshot(), cfg


@pytest.mark.slow
def test_the_saves_near_the_line_are_drawn_again_before_the_run_ends(judged_run):
    result, events, cfg = judged_run
    run = result.run_dir
    per_save = len(expand_prompts(cfg.sample.prompts, cfg.dataset.trigger)) * 3
    for label in ("checkpoints_step-000002_lora", "checkpoints_step-000004_lora"):  # the last save is also final/'s
        manifest = json.loads((run / "review" / label / "more-3" / "manifest.json").read_text())
        assert manifest["judge"] == "near-line" and manifest["per_prompt"] == 3 and len(manifest["samples"]) == per_save
        assert manifest["readings"]["likeness"] == pytest.approx(LIKENESS_SHOWS - LIKENESS_EDGE / 2)
    assert len(list((run / "review" / "base-more-3").glob("*.png"))) == per_save  # the base's pictures, drawn once
    drawing = [e for e in events if isinstance(e, Progress) and e.task == "edge_pictures"]
    assert drawing and drawing[-1].done == drawing[-1].total == 3 * per_save  # two saves and the base
    assert [e.done for e in drawing] == sorted(e.done for e in drawing) and len(drawing) <= 25
    assert all(e.step == 4 for e in drawing)
    finished = [e for e in events if isinstance(e, Finished)]
    assert events[-1] is finished[0] and finished[0].step == 4  # the run ends after the drawing, at its own step
    assert json.loads((run / "status.json").read_text())["status"] == "finished"
    assert not [e for e in events if isinstance(e, Alert) and e.kind == "edge_pictures"]


@pytest.mark.slow
def test_a_reading_far_from_the_line_or_no_judge_draws_nothing(judged_run, monkeypatch):
    from trainer.review.more import edge_saves

    run = judged_run[0].run_dir
    assert edge_saves(run) == []  # no judge applies to the toy folder now
    far = lambda config, base: lambda p: {"likeness": LIKENESS_SHOWS + LIKENESS_EDGE + 0.05}  # noqa: E731
    monkeypatch.setitem(judges._JUDGES, "far", judges.PictureJudge("far", far))
    pictures._measured.cache_clear()
    assert edge_saves(run) == []
    monkeypatch.setitem(judges._JUDGES, "far", judges.PictureJudge("far", _near_line))
    pictures._measured.cache_clear()
    own = judged_run[2].sample.images_per_prompt
    assert [s["step"] for s in edge_saves(run)] == [2, 4]  # read on the run's own few a prompt: near the line
    assert edge_saves(run, per_prompt=own) == []  # ... unless the run drew as many as asked for itself
    pictures._measured.cache_clear()


def _trainer(run, cfg, events: list):
    """What :func:`draw_edges` uses of a trainer, around a finished run's folder."""
    from trainer.run.rundir import RunPaths

    return SimpleNamespace(config=cfg, dist=SimpleNamespace(is_main=True), paths=RunPaths(run),
                           commands=Commands(), emit=events.append, release_device=lambda: events.append("released"))


@pytest.mark.slow
@pytest.mark.parametrize("what", ["stop", "failure"])
def test_a_stop_or_a_failure_while_drawing_loses_nothing(judged_run, monkeypatch, tmp_path, what):
    import shutil

    from trainer.review import more
    from trainer.train.edges import draw_edges

    result, _, cfg = judged_run
    run = tmp_path / "run"
    shutil.copytree(result.run_dir, run)
    shutil.rmtree(run / "review")
    monkeypatch.setitem(judges._JUDGES, "near-line", judges.PictureJudge("near-line", _near_line))
    pictures._measured.cache_clear()
    events: list = []
    trainer = _trainer(run, cfg, events)
    real = more.more_pictures

    def stopped_or_failing(*a, **k):
        if what == "failure":
            raise RuntimeError("the card ran out of memory")
        trainer.commands.stop()
        return real(*a, **k)

    monkeypatch.setattr(more, "more_pictures", stopped_or_failing)
    draw_edges(trainer, 4)
    assert events[0] == "released"  # the training models go before a drawing pipeline loads
    assert not list(run.glob("review/*/more-3/manifest.json"))  # nothing half-drawn stands for a save
    alerts = [e for e in events if isinstance(e, Alert)]
    if what == "stop":
        assert not alerts
    else:
        (alert,) = alerts
        assert alert.kind == "edge_pictures" and alert.level == "warning" and alert.step == 4
        said = words.say(alert.message, "en")
        assert "the card ran out of memory" in said and "More pictures of this save" in said
        assert "더 보기" in words.say(alert.message, "ko")
    assert (run / "final" / "lora.safetensors").is_file()
    pictures._measured.cache_clear()


def test_in_the_holds_transition_band_a_judges_reading_decides():
    mid = (HOLD_EDGE + HOLD_SHOWS) / 2
    (alone,) = model_observations({"trigger_hold": mid})
    assert alone.strength == "strong" and alone.points_to == "under"
    (judged,) = model_observations({"trigger_hold": mid, "likeness": 0.6})
    assert judged.strength == "weak" and judged.points_to == "under"  # outweighed by any judge's reading
    assert "picture judge's reading decides" in words.say(judged.text, "en")
    (low,) = model_observations({"trigger_hold": HOLD_EDGE - 0.05, "likeness": 0.6})
    assert low.strength == "strong"  # below the band the model's word stands beside the judge's


def test_just_past_the_holds_line_it_reads_fit_and_says_the_pictures_are_worth_a_look():
    """Saves whose pictures did not show the subject yet held up to 0.758, past the line (docs/doctor.md): there the
    hold says fit and to look at the pictures, and a judge's reading decides; from HOLD_SURE on it is plain fit."""
    past = (HOLD_SHOWS + HOLD_SURE) / 2
    (alone,) = model_observations({"trigger_hold": past})
    assert (alone.points_to, alone.strength) == ("fit", "strong")
    assert "look at this save's pictures" in words.say(alone.text, "en")
    assert "경계 바로 위" in words.say(alone.text, "ko")
    (judged,) = model_observations({"trigger_hold": past, "likeness": 0.3})
    assert (judged.points_to, judged.strength) == ("fit", "weak")  # outweighed by a judge saying under
    assert "picture judge's reading decides" in words.say(judged.text, "en")
    (sure,) = model_observations({"trigger_hold": HOLD_SURE, "likeness": 0.3})
    assert (sure.points_to, sure.strength) == ("fit", "strong")
    assert words.say(sure.text, "en").startswith("the trigger alone brings the subject: ")

