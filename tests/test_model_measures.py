"""The doctor's measures from the run's own model (trainer/train/probes.py writes measures.jsonl,
trainer/doctor/model_measures.py reads it) and the verdict they decide, on runs that are not the demo."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import words
from tests.helpers import tiny_config, write_toy_dataset
from trainer.config.schema import Config
from trainer.data.batches import without_trigger
from trainer.doctor import model_lines, model_measures, verdict
from trainer.doctor.verdict import checkpoint_verdicts, run_verdict
from trainer.io import atomic_write_text
from trainer.run.rundir import RunPaths
from trainer.train.probes import spread


def test_the_trigger_is_taken_out_of_a_caption_as_a_whole_word():
    assert without_trigger("zxc, on grass, left", "zxc") == "on grass, left"
    assert without_trigger("a photo of zxc on grass", "zxc") == "a photo of on grass"
    assert without_trigger("zxcv, zxc", "zxc") == "zxcv"  # a longer word that starts like it stays
    assert without_trigger("zxc", "zxc") == ""
    assert without_trigger("ohwx man, smiling", "ohwx man") == "smiling"
    assert without_trigger("on grass", "") == "on grass"


def test_spread_takes_pictures_from_the_whole_folder():
    assert spread(list(range(10)), 4) == [0, 2, 5, 7]
    assert spread([1, 2], 5) == [1, 2]


def _write_measures(run: Path, rows: list[dict]) -> None:
    atomic_write_text(RunPaths(run).measures, "".join(json.dumps(r) + "\n" for r in rows))


def _pic(with_t: float, without: float, alone: float | None = None) -> dict:
    """One subject picture's row: its losses at two timesteps with the caption, without the trigger and with the
    trigger alone."""
    alone = with_t if alone is None else alone
    return {"caption": [with_t] * 2, "bare": [without] * 2, "trigger": [alone] * 2}


def _subject(with_t: float, without: float, n: int = 8, odd: dict[str, float] | None = None) -> dict:
    out = {f"p{i}.png": _pic(with_t, without) for i in range(n)}
    for k, v in (odd or {}).items():
        out[k] = _pic(v, v)
    return out


def _moved(lora: float, base: float, move: float) -> dict:
    return {"lora": [lora] * 2, "base": [base] * 2, "move": [move] * 2}


def test_gain_drift_and_memorisation_are_read_against_step_0(tmp_path):
    _write_measures(tmp_path, [
        {"step": 0, "subject": {"a.png": _pic(0.10, 0.10, 0.12)}, "base_samples": {"s.png": _moved(0.2, 0.2, 0.0)},
         "held_out": {"h.png": [0.10, 0.10]}},
        {"step": 10, "subject": {"a.png": _pic(0.05, 0.08, 0.06)}, "base_samples": {"s.png": _moved(0.21, 0.2, 0.1)},
         "prior": {"p.png": _moved(0.1, 0.2, 0.5)}, "held_out": {"h.png": [0.10, 0.10]}},
        {"step": 10, "subject": {"a.png": _pic(0.04, 0.08, 0.06)}, "base_samples": {"s.png": _moved(0.21, 0.2, 0.1)},
         "held_out": {"h.png": [0.10, 0.10]}},  # a rollback measured step 10 again: the last row wins
    ])
    m = model_measures.measures_by_step(tmp_path)
    assert m[0]["trigger_gain"] == 0.0 and m[0]["prior_drift"] == 0.0 and m[0]["memorisation"] == 0.0
    assert m[10]["trigger_gain"] == pytest.approx(0.5)  # (0.08 - 0.04) / 0.08
    assert m[10]["plain_hold"] == pytest.approx(0.5)  # 1 - 0.06 / 0.12: the trigger alone, against step 0
    # beyond what the LoRA did to the base model's own samples (their loss 0.21 with it, 0.2 without)
    assert m[10]["trigger_hold"] == pytest.approx(1 - 0.5 / 1.05)
    # the base model's own samples, never trained on, are preferred to the (trained) prior pictures
    assert m[10]["prior_source"] == "base_samples" and m[10]["prior_drift"] == pytest.approx(0.5)
    assert m[10]["memorisation"] == pytest.approx((0.10 / 0.04) / (0.10 / 0.10) - 1)


def test_the_trigger_hold_counts_what_the_lora_learned_of_the_subject_not_what_it_did_to_everything(tmp_path):
    # an lr that broke the model: everything it did not train on is denoised 4x worse, the subject 2x worse
    _write_measures(tmp_path, [
        {"step": 0, "subject": {"a.png": _pic(0.10, 0.10, 0.10)}, "base_samples": {"s.png": _moved(0.2, 0.2, 0.0)}},
        {"step": 10, "subject": {"a.png": _pic(0.2, 0.2, 0.2)}, "base_samples": {"s.png": _moved(0.8, 0.2, 0.5)}},
        # a LoRA that denoises the base model's own samples better than the base is not held against the subject
        {"step": 20, "subject": {"a.png": _pic(0.05, 0.05, 0.05)}, "base_samples": {"s.png": _moved(0.1, 0.2, 0.1)}},
    ])
    m = model_measures.measures_by_step(tmp_path)
    assert m[0]["trigger_hold"] == 0.0 and m[0]["plain_hold"] == 0.0
    assert m[10]["plain_hold"] == pytest.approx(-1.0) and m[10]["trigger_hold"] == pytest.approx(0.5)
    assert m[20]["trigger_hold"] == pytest.approx(0.5) == m[20]["plain_hold"]
    # without the base model's samples (sampling off) the prior pictures are trained on: the plain hold
    _write_measures(tmp_path, [
        {"step": 0, "subject": {"a.png": _pic(0.10, 0.10, 0.10)}, "prior": {"p.png": _moved(0.2, 0.2, 0.0)}},
        {"step": 10, "subject": {"a.png": _pic(0.2, 0.2, 0.2)}, "prior": {"p.png": _moved(0.8, 0.2, 0.5)}},
    ])
    m = model_measures.measures_by_step(tmp_path)
    assert m[10]["trigger_hold"] == pytest.approx(-1.0) == m[10]["plain_hold"]
    assert m[10]["prior_source"] == "prior"


def test_no_measures_file_means_no_measures(tmp_path):
    assert model_measures.measures_by_step(tmp_path) == {}
    assert model_measures.picture_outliers(tmp_path) == []


def test_a_picture_the_trigger_learns_unlike_the_rest_is_named_and_a_tight_spread_names_none(tmp_path):
    first = {f"p{i}.png": _pic(0.10, 0.10) for i in range(10)}
    last = {f"p{i}.png": _pic(0.05 - 0.0005 * i, 0.06) for i in range(10)}  # gains 0.17-0.24
    last["p0.png"] = _pic(0.01, 0.06)  # gain 0.83: the trigger carries this one (not the subject?)
    last["p1.png"] = _pic(0.06, 0.06)  # gain 0: the caption explains it without the trigger
    _write_measures(tmp_path, [{"step": 0, "subject": first}, {"step": 20, "subject": last}])
    found = {o["picture"]: o["side"] for o in model_measures.picture_outliers(tmp_path)}
    assert found == {"p0.png": "high"}  # p1 is 0.2 from the median: under OUTLIER_MIN_GAP
    last["p1.png"] = _pic(0.12, 0.06)  # gain -1: far less
    _write_measures(tmp_path, [{"step": 0, "subject": first}, {"step": 20, "subject": last}])
    found = {o["picture"]: o["side"] for o in model_measures.picture_outliers(tmp_path)}
    assert found == {"p0.png": "high", "p1.png": "low"}
    even = {f"p{i}.png": _pic(0.05 - 0.0005 * i, 0.06) for i in range(10)}
    _write_measures(tmp_path, [{"step": 0, "subject": first}, {"step": 20, "subject": even}])
    assert model_measures.picture_outliers(tmp_path) == []


def test_the_model_decides_the_save_and_the_dose_only_supports(tmp_path):
    from tests.test_review import _world, fake_run

    # a dose far over the zone: alone it would call every save over
    run = fake_run(tmp_path, [10, 20, 30], lambda step, kind: _world(), lr=1.0, fit=(0.005, 0.05))
    hold = verdict.HOLD_SHOWS
    drift = verdict.DRIFT_LIMIT
    _write_measures(run, [
        {"step": 0, "subject": _subject(0.10, 0.10), "base_samples": {"s.png": _moved(0.2, 0.2, 0.0)}},
        {"step": 10, "subject": _subject(0.10 * (1 - hold / 2), 0.10), "base_samples": {"s.png": _moved(0.2, 0.2, 0.0)}},
        {"step": 20, "subject": _subject(0.10 * (1 - hold * 1.1), 0.10),
         "base_samples": {"s.png": _moved(0.2, 0.2, 0.2 * drift / 2)}},
        {"step": 30, "subject": _subject(0.10 * (1 - hold * 1.2), 0.10),
         "base_samples": {"s.png": _moved(0.2, 0.2, 0.2 * drift * 2)}},
    ])
    labels = {c.step: c.label for c in checkpoint_verdicts(run)}
    assert labels == {10: "under", 20: "fit", 30: "over"}
    v = run_verdict(run)
    assert v.label == "fit" and v.recommended_step == 20
    text = " ".join(words.say(e, "en") for e in v.evidence)
    assert "trigger alone brings the subject" in text and "outweighed" in text and "dose" in text
    ko = " ".join(words.say(e, "ko") for e in v.evidence)
    assert "트리거만으로 대상이 나옴" in ko
    assert "prior_drift" in {o.signal for c in v.checkpoints if c.step == 30 for o in c.observations}


def test_the_dose_past_its_zone_is_said_as_information_once_the_saves_read_otherwise(tmp_path):
    """The dose is a forecast: where the run measures its own saves it is information until they are read (live,
    from the start), and stays so when they read no save over-trained (a constant lr, batch 2:
    scripts/doctor_settings.py); a save read over makes it the warning it was. Without measures it warns as before;
    a dose under the zone whose saves read the subject is said so."""
    from trainer.doctor.plan_findings import dose_finding

    over = {"dose_zone": "over", "dose": 4.17, "dose_low": 0.4, "dose_high": 3.0}
    under = {**over, "dose_zone": "under", "dose": 0.2}
    base = {"s.png": _moved(0.2, 0.2, 0.0)}
    assert dose_finding(over, tmp_path).level == "warning"  # no measures: the forecast is the reading
    _write_measures(tmp_path, [{"step": 0, "subject": _subject(0.10, 0.10), "base_samples": base}])
    pending = dose_finding(over, tmp_path)
    assert pending.level == "info" and "will say whether it over-trains" in words.say(pending.message)
    assert "과적합인지는" in words.say(pending.message, "ko")
    hold, drift = verdict.HOLD_SHOWS, verdict.DRIFT_LIMIT
    fit = {"step": 400, "subject": _subject(0.10 * (1 - hold * 1.1), 0.10),
           "base_samples": {"s.png": _moved(0.2, 0.2, 0.2 * drift / 2)}}
    _write_measures(tmp_path, [{"step": 0, "subject": _subject(0.10, 0.10), "base_samples": base}, fit])
    measured = dose_finding(over, tmp_path)
    assert measured.level == "info" and "read no save over-trained" in words.say(measured.message)
    assert dose_finding(under, tmp_path).message.code == "finding.dose_under_measured"
    moved = {**fit, "step": 800, "base_samples": {"s.png": _moved(0.2, 0.2, 0.2 * drift * 2)}}
    _write_measures(tmp_path, [{"step": 0, "subject": _subject(0.10, 0.10), "base_samples": base}, fit, moved])
    warned = dose_finding(over, tmp_path)
    assert warned.level == "warning" and warned.message.code == "finding.dose_over"


def test_a_prior_drift_past_its_line_at_one_save_only_is_a_passing_move_not_a_warning(tmp_path):
    """Batch 2 and a constant lr (scripts/doctor_settings.py) drift past the line at step 400 and come back, their
    no-trigger pictures never leaking: no warning (the save's own verdict still reads it). Two measured steps in a
    row past it, or the last step of a run that has ended, warn; while the run trains, the last step may come back."""
    from trainer.doctor.model_measures import model_findings
    from trainer.doctor.plan_findings import dose_finding

    drift = verdict.DRIFT_LIMIT
    base = {"s.png": _moved(0.2, 0.2, 0.0)}

    def row(step: int, moved: float) -> dict:
        return {"step": step, "subject": _subject(0.10 * (1 - verdict.HOLD_SHOWS * 1.1), 0.10),
                "base_samples": {"s.png": _moved(0.2, 0.2, 0.2 * moved)}}

    def warned(*drifts: float) -> bool:
        _write_measures(tmp_path, [{"step": 0, "subject": _subject(0.10, 0.10), "base_samples": base},
                                   *(row(400 * (i + 1), d) for i, d in enumerate(drifts))])
        return "prior_drift" in {f.signal for f in model_findings(tmp_path)}

    high, low = drift * 1.3, drift * 0.7
    assert not warned(high, low, low)  # passed and came back
    over = {"dose_zone": "over", "dose": 4.14, "dose_low": 0.4, "dose_high": 3.0}
    assert dose_finding(over, tmp_path).level == "info"  # and the dose past its zone is not confirmed by it
    assert warned(low, high, high) and warned(high, high, low)  # two in a row
    assert warned(low, low, high)  # the last save of an ended run
    assert dose_finding(over, tmp_path).level == "warning"
    atomic_write_text(RunPaths(tmp_path).status, json.dumps({"status": "running"}))
    assert not warned(low, low, high)  # live: the next save may bring it back
    assert warned(low, high, high)
    # the loop's reading at the run's end, before its status says so, warns as the diagnosis will afterwards
    from trainer.doctor.registry import RunInputs, collect

    assert not warned(low, low, high)
    assert "prior_drift" in {f.signal for f in collect(RunInputs(Config(), run_dir=tmp_path, stopped=True), "model")}
    assert "prior_drift" not in {f.signal for f in collect(RunInputs(Config(), run_dir=tmp_path), "model")}
    # and the dose it confirms: live, the loop says each signal again when its word changes (the Train step and the
    # live alerts keep the latest), so the dose's "the saves read no over-training" becomes the warning it is there
    from trainer.doctor.registry import Reported

    reported = Reported()

    def live(stopped: bool) -> list[str]:
        run = RunInputs(Config(), plan=over, run_dir=tmp_path, stopped=stopped)
        return sorted(f"{f.signal}:{f.level}" for f in reported.news(collect(run, "numbers", "model")))

    assert live(False) == ["dose_over:info"] and live(False) == []
    assert live(True) == ["dose_over:warning", "prior_drift:warning"] and live(True) == []


def _with_trigger(row: dict, share: float, reach: float = 0.3) -> dict:
    """A masked run's base-sample row with the trigger put in: it moves the prediction ``reach`` from the base's, and
    adds ``share`` of that to the LoRA's own prediction without it."""
    return {**row, "reach": [reach] * 2, "add": [reach * share] * 2}


@pytest.mark.parametrize("kind", ["unmasked", "masked", "masked_leaking", "masked_subject_only"])
def test_on_a_masked_run_a_drift_past_the_line_points_to_the_captions_background_words(tmp_path, kind):
    """Masked training leaves the backgrounds out of the loss while the captions still name them; on the demo world
    with masks five of six seeds leaked, and captions naming the subject alone stopped it (docs/doctor.md): the
    same drift on a masked run is worded so, and its first cause and prescription are the captions, not the dose.
    Where the run measured what the trigger adds to a no-trigger prompt (``masked_leaking``: little, the captions'
    other words draw the subject; ``masked_subject_only``: much, the trigger carries it), that decides: the second
    is fit, with no warning and no caption advice."""
    from tests.test_review import _world, fake_run
    from trainer.doctor.diagnose import diagnose

    run = fake_run(tmp_path, [10, 20], lambda step, kind: _world(), lr=1e-4, fit=(0.005, 0.05))
    drift, hold, line = verdict.DRIFT_LIMIT, verdict.HOLD_SHOWS, model_lines.SHARE_LINE
    masked = kind != "unmasked"
    flag = {"masked": True} if masked else {}
    share = {"masked_leaking": line * 0.5, "masked_subject_only": line * 1.6}.get(kind)
    def moved(m):
        row = _moved(0.2, 0.2, m)
        return row if share is None else _with_trigger(row, share)
    _write_measures(run, [
        {"step": 0, "subject": _subject(0.10, 0.10), "base_samples": {"s.png": moved(0.0)}, **flag},
        *({"step": s, "subject": _subject(0.10 * (1 - hold * 1.2), 0.10),
           "base_samples": {"s.png": moved(0.2 * drift * 1.3)}, **flag} for s in (10, 20)),
    ])
    v = run_verdict(run)
    dg = diagnose(run, write=False)
    # Review shows the share as a column and says what it means, on a run that measured it
    from ui.steps.review import measures_table, model_measures_view

    table = measures_table(run, "ko").value
    assert ("트리거 몫" in table["headers"]) == (share is not None)
    if share is not None:
        at = table["headers"].index("트리거 몫")
        assert [row[at] for row in table["data"]] == [f"{share:.0%}"] * 2  # as the words say it
        assert "Trigger share" in model_measures_view(run, 20, "en")["model_md"]
    if kind == "masked_subject_only":
        assert v.label == "fit" and v.summary.code != "verdict.summary.over_masked"
        text = " ".join(words.say(e, "en") for e in v.evidence)
        assert "backgrounds the masks leave free moved, not the subject" in text
        assert "마스크 밖의 배경이 움직인 것" in " ".join(words.say(e, "ko") for e in v.evidence)
        assert not [f for f in dg["observed"] if f["signal"].endswith("drift")]
        assert "caption_subject_only" not in [p["id"] for p in dg["prescriptions"] if p["applicable"]]
        return
    signal = "masked_drift" if masked else "prior_drift"
    assert v.label == "over" and {o.signal for c in v.checkpoints for o in c.observations if o.points_to == "over"} == {signal}
    assert v.summary.code == ("verdict.summary.over_masked" if masked else "verdict.summary.over")
    first = next(c for c in dg["causes"] if not c["lesser"])
    rx = next(p for p in dg["prescriptions"] if p["applicable"] and not p["lesser"])
    assert [f["signal"] for f in dg["observed"] if f["signal"].endswith("drift")] == [signal]
    if masked:
        assert first["id"] == "masked_background_words" and rx["id"] == "caption_subject_only"
        assert "caption the subject alone" in words.say(v.summary, "en")
        assert "캡션에 대상만" in words.say(v.summary, "ko") and "배경 단어" in first["title"]["ko"]
        if kind == "masked_leaking":  # the share it measured is said
            assert "the trigger adds only 12%" in " ".join(words.say(e, "en") for e in v.evidence)
            assert "캡션의 다른 단어도 대상을 그림" in " ".join(words.say(e, "ko") for e in v.evidence)
    else:
        assert first["id"] != "masked_background_words" and "caption_subject_only" not in [p["id"] for p in dg["prescriptions"]]


def test_a_masked_runs_drift_gives_way_to_a_judges_reading():
    """On the demo world's masked runs the drift passed its line on leaking and healthy saves alike (1.2-1.7): where
    a picture judge read the save (its likeness, and its leakage of the no-trigger pictures), the judge decides."""
    seen = {"trigger_hold": 0.9, "prior_drift": 1.5}
    def strength(**m):
        return {o.signal: o.strength for o in verdict.model_observations({**seen, **m})}
    assert strength(masked=True)["masked_drift"] == "strong"
    assert strength(masked=True, likeness=0.8)["masked_drift"] == "weak"
    assert strength(likeness=0.8)["prior_drift"] == "strong"  # an unmasked run's drift stays strong


@pytest.mark.slow
def test_a_run_measures_its_own_model_at_step_0_each_save_and_the_end(tmp_path):
    import torch

    from trainer.train.loop import Hooks, run_training

    class Twice(Hooks):
        def __init__(self):
            self.rows: list[dict] = []

        def after_step(self, trainer):
            if trainer.state.global_step == 3:
                self.rows = [trainer.measures.measure(3), trainer.measures.measure(3)]

    data = write_toy_dataset(tmp_path / "data", n=6)
    cfg = tiny_config(data, tmp_path / "out", {"train.max_steps": 6, "save.every_steps": 3, "sample.enabled": True,
                                                "measure.enabled": True,
                                                "validation.holdout": 2})
    hooks = Twice()
    result = run_training(cfg, hooks=hooks)
    assert result.status == "finished"
    rows = model_measures.read_rows(result.run_dir)
    assert sorted(rows) == [0, 3, 6]
    first = rows[0]
    assert len(first["subject"]) == 4 and len(first["held_out"]) == 2 and first["base_samples"]
    assert all(v["move"] == [0.0] * 3 for v in first["base_samples"].values())  # step 0 is the base model
    m = model_measures.measures_by_step(result.run_dir)
    assert m[0]["trigger_gain"] == 0.0 and m[6]["prior_drift"] > 0.0
    assert all(math.isfinite(m[s]["trigger_gain"]) for s in m)
    # fixed pictures, timesteps and noise: the same weights give the same numbers
    a, b = ({k: v for k, v in r.items() if k != "seconds"} for r in hooks.rows)
    assert a == b and a["subject"] != first["subject"]
    cvs = checkpoint_verdicts(result.run_dir)
    assert [c.step for c in cvs] == [3, 6] and all(c.measures.get("trigger_hold") is not None for c in cvs)

    # measured again after the fact from the saves (python -m trainer measure): the same numbers, the earlier
    # file kept beside the new one; with more timesteps, rows of that many
    from trainer.cli import main

    def flat(x):
        return [y for z in x.values() for y in z] if isinstance(x, dict) else x

    assert main(["measure", str(result.run_dir)]) == 0
    again = model_measures.read_rows(result.run_dir)
    assert sorted(again) == [0, 3, 6]
    for step in again:
        for name in ("subject", "base_samples", "held_out"):
            assert again[step][name].keys() == rows[step][name].keys()
            for key, v in again[step][name].items():
                old = rows[step][name][key]
                assert flat(v) == pytest.approx(flat(old), rel=1e-4, abs=1e-7), (step, name, key)
    assert len(list(Path(result.run_dir).glob("measures.before-*.jsonl"))) == 1
    assert main(["measure", str(result.run_dir), "--timesteps", "5", "--device", "cpu"]) == 0  # where it is asked
    assert len(model_measures.read_rows(result.run_dir)[6]["timesteps"]) == 5
    if not torch.cuda.is_available():  # a card that is not there: one line, no traceback
        assert main(["measure", str(result.run_dir), "--device", "cuda"]) == 2
    assert main(["measure", str(tmp_path / "data")]) == 2  # not a run folder: one line, no traceback
    # its checkpoints/ folder deleted to free space (as the full-disk message advises for older runs): the final
    # save is read at the step it was trained to (its file says so), not as step 0
    import shutil

    shutil.rmtree(Path(result.run_dir) / "checkpoints")
    (last,) = checkpoint_verdicts(result.run_dir)
    assert last.step == 6 and last.measures.get("trigger_hold") is not None


def test_a_clip_judge_reads_any_runs_pictures_against_the_base_models(tmp_path):
    from tests.test_review import _world, fake_run
    from tests.test_verdict import _character, _set_config
    from trainer.doctor import pictures
    from trainer.models.tiny import save_tiny_clip_judge

    judge = save_tiny_clip_judge(tmp_path / "judge")
    data = tmp_path / "data" / "1_mine"
    data.mkdir(parents=True)
    for i in range(3):
        _character().save(data / f"{i}.png")

    def picture(step: int, kind: str):
        return _character() if step == 20 and kind != "no_trigger" else _world()

    run = fake_run(tmp_path, [10, 20], picture)
    assert all(r["judge"] is None for r in pictures.measure_steps(run))  # off unless set
    _set_config(run, measure={"judge": str(judge)})
    rows = {r["step"]: r for r in pictures.measure_steps(run)}
    assert {r["judge"] for r in rows.values()} == {"clip"}
    assert rows[10]["leakage"] == pytest.approx(0.0, abs=1e-5)  # the no-trigger picture is the base model's own
    assert rows[10]["likeness"] == pytest.approx(0.0, abs=1e-5)  # and so is every trigger picture at step 10
    assert rows[20]["likeness"] > 0.0  # the training pictures themselves: as close as the data
    assert all(0.0 <= r[k] <= 1.0 for r in rows.values() for k in ("likeness", "adherence", "leakage"))
    # an uncalibrated judge is moderate evidence: the run's model measures (when there are some) decide
    obs = [o for c in checkpoint_verdicts(run) for o in c.observations if o.source == "pictures"]
    assert obs and all(o.strength == "moderate" for o in obs if o.signal in ("low_likeness", None))


def test_a_judge_that_cannot_be_loaded_is_named_with_what_to_do(tmp_path):
    from trainer.doctor.clip_judge import load_judge
    from trainer.errors import UserError

    with pytest.raises(UserError) as e:
        load_judge(str(tmp_path / "no-such-model"))
    assert "measure.judge" in str(e.value) and "CLIP or SigLIP" in str(e.value)


def test_a_hold_just_under_the_line_says_the_pictures_decide():
    from trainer.doctor.model_lines import HOLD_EDGE, HOLD_SHOWS, model_observations

    def said(hold: float) -> tuple[str, str, str]:
        (o,) = model_observations({"trigger_hold": hold})
        return o.points_to, o.signal, words.say(o.text, "en")

    edge = said((HOLD_EDGE + HOLD_SHOWS) / 2)
    assert edge[:2] == ("under", "low_trigger_hold") and "look at this save's pictures" in edge[2]
    low = said(HOLD_EDGE - 0.1)
    assert low[:2] == ("under", "low_trigger_hold") and "does not bring the subject yet" in low[2]
    assert said(HOLD_SHOWS)[0] == "fit"


def test_the_model_measures_chart_ticks_its_steps_not_fractions_of_them():
    from ui.step_charts import MAX_STEP_TICKS, model_measures_figure

    rows = {s: {"trigger_hold": 0.1 * s, "prior_drift": 0.2} for s in (0, 1, 2)}
    fig = model_measures_figure(rows, 2, 0.755, 1.0)
    assert list(fig.layout.xaxis.tickvals) == [0, 1, 2]  # a tiny run: no tick at 0.5 or 1.5
    assert fig.layout.yaxis2.tickmode == "auto"  # the drift's own round numbers, not the hold's grid (0.088, 0.349)
    many = {s * 100: {"trigger_hold": 0.5, "prior_drift": 0.2} for s in range(MAX_STEP_TICKS + 1)}
    assert model_measures_figure(many, None, 0.755, 1.0).layout.xaxis.tickvals is None  # plotly spaces them


def test_on_a_style_a_hold_past_its_line_is_weak_and_says_to_look_at_the_pictures(tmp_path):
    """A style's pictures are known to the denoiser once trained on, whether or not the trigger alone draws the style
    (docs/doctor.md, "a style"): the hold's "fit" is weak there and says so; the same run from a character preset
    keeps it strong."""
    from tests.test_review import _world, fake_run
    from trainer.config.presets import load_preset

    assert load_preset("sd15-style").subject == "style" and load_preset("sd3-style").subject == "style"
    assert load_preset("demo-character").subject == "character"
    run = fake_run(tmp_path, [10, 20], lambda step, kind: _world())
    hold = verdict.HOLD_SHOWS
    _write_measures(run, [
        {"step": 0, "subject": _subject(0.10, 0.10), "base_samples": {"s.png": _moved(0.2, 0.2, 0.0)}},
        {"step": 10, "subject": _subject(0.10 * (1 - hold * 1.1), 0.10), "base_samples": {"s.png": _moved(0.2, 0.2, 0.02)}},
        {"step": 20, "subject": _subject(0.10 * (1 - hold * 1.2), 0.10), "base_samples": {"s.png": _moved(0.2, 0.2, 0.02)}},
    ])

    def holds() -> list[tuple[str, str]]:
        return [(o.points_to, o.strength) for c in checkpoint_verdicts(run) for o in c.observations
                if o.source == "model" and "hold" in words.say(o.text, "en")]

    assert holds() == [("fit", "strong")] * 2  # no preset: read as a character
    config = (run / "config.toml").read_text(encoding="utf-8")
    atomic_write_text(run / "config.toml", config.replace('preset = ""', 'preset = "sd15-style"', 1))
    assert holds() == [("fit", "weak")] * 2
    v = run_verdict(run)
    assert v.label == "fit"  # the drift and the dose still read it; the line says what the hold cannot
    text = " ".join(words.say(e, "en") for e in v.evidence)
    assert "does not say the trigger alone draws it" in text and "picture judge" in text
    assert "그림 판정 모델" in " ".join(words.say(e, "ko") for e in v.evidence)
    # a preset of the user's own, in the app's workspace beside its runs (<workspace>/presets, <workspace>/runs/...)
    (tmp_path / "presets").mkdir()
    (tmp_path / "presets" / "mine.toml").write_text(
        '[preset]\nversion = 1\nsubject = "style"\nname_en = "m"\nname_ko = "m"\ndescription_en = "m"\n'
        'description_ko = "m"\n', encoding="utf-8")
    atomic_write_text(run / "config.toml", config.replace('preset = ""', 'preset = "mine"', 1))
    assert holds() == [("fit", "weak")] * 2


def test_the_replay_script_says_what_the_live_run_said_of_its_measures(tmp_path):
    """``scripts/replay_detectors.py`` cuts the measures at each live reading too: a dose past its zone is
    information while no save is read, and becomes the warning it is once two saves in a row drift past the line,
    at the reading after the second one's measures (not before), with the drift's own warning."""
    import sys

    from trainer.config.schema import save_config

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    from replay_detectors import replay

    run = tmp_path / "my-subject" / "lora" / "20260101-000000"
    run.mkdir(parents=True)
    save_config(Config(), run / "config.toml")
    (run / "plan.json").write_text(json.dumps({"dose_zone": "over", "dose": 4.2, "dose_low": 0.4, "dose_high": 3.0}))
    (run / "metrics.jsonl").write_text("".join(
        json.dumps({"type": "step", "step": i, "loss": 0.05, "grad_norm": 0.5, "skipped": False}) + "\n"
        for i in range(1, 121)), encoding="utf-8")
    base = {"s.png": _moved(0.2, 0.2, 0.0)}

    def row(step: int, moved: float) -> dict:
        return {"step": step, "subject": _subject(0.10 * (1 - verdict.HOLD_SHOWS * 1.1), 0.10),
                "base_samples": {"s.png": _moved(0.2, 0.2, 0.2 * moved)}}

    high = verdict.DRIFT_LIMIT * 1.3
    _write_measures(run, [{"step": 0, "subject": _subject(0.10, 0.10), "base_samples": base}, row(40, high),
                          row(80, high), row(120, 0.5)])
    said = [(step, signal, level) for step, signal, level, _ in replay(run, every=25, info=True)]
    # the first reading: no save read yet; at step 40's measures one save drifts, which may come back; at 80 two
    assert said == [(25, "dose_over", "info"), (40, "dose_over", "info"), (80, "dose_over", "warning"),
                    (80, "prior_drift", "warning")]
    assert replay(run, every=25) == [w for w in replay(run, every=25, info=True) if w[2] == "warning"]


def test_measures_that_run_out_of_the_cards_memory_take_fewer_pictures_a_pass_then_step_aside(tmp_path, monkeypatch,
                                                                                             capsys):
    """A forward pass of the measures holds no more noised pictures than the training step or the sampler does;
    where the card still runs out of memory the passes are halved and the step measured again (the same numbers),
    and out of memory one picture at a time the measures are off for the rest of the run with one warning, while
    the run trains on, finishes, and its verdict reads the saves it has."""
    import torch

    from trainer.run.events import Alert
    from trainer.train.loop import Hooks, run_training

    class Squeezed(Hooks):
        def __init__(self):
            self.rows: list = []
            self.passes: list[int] = []

        def after_step(self, trainer):
            if trainer.state.global_step != 3:
                return
            adapter = trainer.measures.models.adapter
            predict = adapter.predict

            def at_most(limit):
                def squeezed(denoiser, noisy, *rest):
                    self.passes.append(len(noisy))
                    if len(noisy) > limit:
                        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
                    return predict(denoiser, noisy, *rest)
                return squeezed

            adapter.predict = at_most(10**6)
            self.rows.append(trainer.measures.measure(3))
            self.most, self.passes = max(self.passes), []
            adapter.predict = at_most(2)
            self.rows.append(trainer.measures.measure(3))
            self.shrink, self.last = trainer.measures.shrink, self.passes[-1]
            adapter.predict = at_most(0)
            self.rows.append(trainer.measures.measure(3))
            adapter.predict = predict

    data = write_toy_dataset(tmp_path / "data", n=6)
    cfg = tiny_config(data, tmp_path / "out", {"train.max_steps": 6, "save.every_steps": 3, "sample.enabled": True,
                                                "measure.enabled": True, "train.batch_size": 2})
    hooks = Squeezed()
    result = run_training(cfg, hooks=hooks)
    assert result.status == "finished"
    # the tiny run's 32 px pictures: the sampler's budget (16 of 64 px) allows 64 at once; the subject's 4
    # pictures at 3 timesteps make 12
    assert hooks.most == 12
    first, halved, off = hooks.rows
    assert hooks.shrink == 8 and hooks.last <= 2  # 12 → 6 → 3 → 1 a pass (the last measure's passes fit)
    for name in ("subject", "base_samples"):
        for key, v in first[name].items():
            for kind, losses in v.items():
                assert halved[name][key][kind] == pytest.approx(losses, rel=1e-4, abs=1e-7), (name, key, kind)
    assert off is None
    rows = model_measures.read_rows(result.run_dir)
    assert sorted(rows) == [0, 3]  # off after step 3: the last save is not measured
    events = [json.loads(line) for line in (Path(result.run_dir) / "events.jsonl").read_text().splitlines()]
    (said,) = [e for e in events if e.get("kind") == "measures"]
    assert said["level"] == "warning" and said["step"] == 3
    assert "OutOfMemoryError" in words.say(Alert.from_json(said).message, "en")
    cvs = checkpoint_verdicts(result.run_dir)
    assert [c.step for c in cvs] == [3, 6] and cvs[0].measures.get("trigger_hold") is not None
    assert not cvs[1].measures.get("trigger_hold")
    # the dose supports a measured save and speaks as in a run without measures where none was read
    assert [[o.strength for o in c.observations if o.source == "dose"] for c in cvs] == [["weak"], ["moderate"]]
    # measured again afterwards on a card that cannot hold one picture a pass: one line, the file as it was
    from trainer.cli import main
    from trainer.train.probes import ModelMeasures

    def no_memory(self, step, write):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(ModelMeasures, "_measure", no_memory)
    before = (Path(result.run_dir) / "measures.jsonl").read_text()
    capsys.readouterr()
    assert main(["measure", str(result.run_dir)]) == 2
    err = capsys.readouterr().err
    assert "ran out of cpu's memory even one picture at a time" in err and "Traceback" not in err
    assert "--device cpu" in err  # where the card is busy, the CPU measures without stopping it
    assert (Path(result.run_dir) / "measures.jsonl").read_text() == before


def test_pictures_that_stand_apart_by_what_their_captions_share_are_not_named_one_by_one(tmp_path):
    """The character's run whose captions write its look: the trigger carried its six "on grass" pictures more
    than the rest, four of them past the outlier line; among the six none stands apart, so they are the tag's
    doing, not four wrong pictures. A picture apart among its own tag's pictures too is named as before."""
    keys = [f"p{i}.png" for i in range(20)]
    grass = set(keys[:6])
    captions = {k: f"zxc, on {'grass' if k in grass else 'sky'}, {'left' if i % 2 else 'center'}"
                for i, k in enumerate(keys)}
    first = {k: _pic(0.10, 0.10) for k in keys}
    last = {k: _pic(0.05 - 0.0005 * i, 0.06) for i, k in enumerate(keys)}  # gains 0.17-0.32
    for k, loss in zip(keys[:6], (0.004, 0.006, 0.008, 0.010, 0.025, 0.030)):  # the grass six lead, four past
        last[k] = _pic(loss, 0.06)

    def apart(with_captions: dict[str, str] | None) -> list[str]:
        row0 = {"step": 0, "subject": first, **({"captions": with_captions} if with_captions else {})}
        _write_measures(tmp_path, [row0, {"step": 20, "subject": last}])
        return sorted(o["picture"] for o in model_measures.picture_outliers(tmp_path))

    assert apart(None) == ["p0.png", "p1.png", "p2.png", "p3.png"]  # no captions to read: one by one
    assert apart(captions) == []
    for k in keys[:6]:  # the grass pictures like the rest, but one: it stands apart among its own too
        last[k] = _pic(0.05, 0.06)
    last["p0.png"] = _pic(0.004, 0.06)
    last["p9.png"] = _pic(0.004, 0.06)  # and a sky picture as far apart
    assert apart(captions) == ["p0.png", "p9.png"]


SCAN_SAID = {  # what the scan's caption doctor found, as the plan keeps it: the finding's words, its first cause
    "caption_everywhere": ({"captions_everywhere": [{"phrase": "a magenta diamond with yellow stripes and two eyes",
                                                     "pct": 100}]},
                           ['"a magenta diamond with yellow stripes and two eyes" (100%)', "트리거는 그것을 배우지 못함"],
                           "features_captioned_away"),
    "trigger_common_word": ({"trigger_common": "star"},
                            ['the trigger "star" is an everyday word', '트리거가 기반 모델이 이미 그리는 일상 단어임("star")'],
                            "trigger_common"),
    "trigger_not_first": ({"trigger_not_first": {"trigger": "zxc", "n": 20, "keep": 1}},
                          ['20 caption(s) write the trigger "zxc" after their first 1 tag(s)', "트리거를 맨 앞에 두세요"],
                          "trigger_shuffled"),
}


@pytest.mark.parametrize("signal", SCAN_SAID)
def test_what_the_scan_said_of_the_captions_is_the_first_suspect_where_the_trigger_brings_nothing(tmp_path, signal):
    """The scan's phrase in nearly every caption, a trigger that is an everyday word ("star" on the demo
    character's pictures: fit from step 800 by its pictures, under by its holds of 0.744-0.752, and its first
    cause was "the LoRA cannot hold the subject's details, double the rank"), or captions that write the trigger
    after the tags kept in place (the same pictures with it last: under at every save, by the pictures too, with
    the same first cause) reach the diagnosis: information on
    a run whose saves show the subject (a class word or a style tag in every caption is common) or while it trains,
    a warning where the run ended with every save read under, and then what the scan found ranks first."""
    from trainer.doctor.kb import load_kb
    from trainer.doctor.registry import detector_for

    plan, said, cause = SCAN_SAID[signal]
    detector = detector_for(signal)
    assert detector is not None and detector.reads == ("plan", "run_dir", "ended")

    def found(plan: dict, ended: bool = True):
        return detector.fn(plan, tmp_path, ended)

    assert found({}) is None
    assert found(plan).level == "info"  # nothing measured: the scan said it
    base = {"s.png": _moved(0.2, 0.2, 0.0)}

    def saves(hold: float) -> None:
        _write_measures(tmp_path, [{"step": 0, "subject": _subject(0.10, 0.10), "base_samples": base}, *(
            {"step": s, "subject": _subject(0.10 * (1 - hold), 0.10), "base_samples": base} for s in (400, 800))])

    saves(verdict.HOLD_SHOWS * 1.1)
    assert found(plan).level == "info"
    saves(verdict.HOLD_SHOWS * 0.6)
    assert found(plan, ended=False).level == "info"  # live, early saves read under
    f = found(plan)  # a run that ended so
    assert f.level == "warning" and f.signal == signal
    assert said[0] in words.say(f.message, "en") and said[1] in words.say(f.message, "ko")
    from trainer.doctor.diagnose import finding_weight

    kb = load_kb()
    stalled = {"low_trigger_hold": 1.0, "trigger_hold_plateau": 1.0}
    assert kb.rank_causes(stalled)[0].cause.id == "capacity_short"  # nothing to blame in the data: the LoRA's room
    if cause != "features_captioned_away":  # the trigger's own causes come up only with their finding
        assert all(rc.cause.id != cause for rc in kb.rank_causes({**stalled, "leakage": 1.0, "prior_drift": 1.0}))
    for signals in (stalled, {"low_trigger_hold": 1.0}):
        assert kb.rank_causes({**signals, signal: finding_weight(signal, "warning")})[0].cause.id == cause
    # said as information (the saves showed the subject, or the run still trains) it does not lead a weak hold
    assert kb.rank_causes({"low_trigger_hold": 1.0, signal: finding_weight(signal, "info")})[0].cause.id != cause
    # and the verdict's summary of a run that ended so names it, not "train longer" (what the star run's said)
    from trainer.doctor.plan_findings import caption_suspect
    from trainer.doctor.verdict_summary import summary_of

    assert caption_suspect([found(plan, ended=False)]) is None  # information: not the suspect
    summary = summary_of("under", 800, [], [], suspect=caption_suspect([found(plan)]))
    en, ko = words.say(summary, "en"), words.say(summary, "ko")
    assert en.startswith("Under-trained: even the last checkpoint (step 800)") and said[0] in en and "Train longer" not in en, en
    assert "캡션부터 고치세요" in ko and said[1] in ko, ko
    plain = words.say(summary_of("under", 800, [], []), "en")
    assert "Train longer or raise the learning rate" in plain and said[0] not in plain


def test_an_under_trained_run_whose_hold_stopped_growing_is_not_told_to_train_longer():
    """The mixed-sizes folder (docs/doctor.md): every save under, the hold stalled at 0.70-0.71 with the dose in its
    zone; 1.5x the steps drew less of the character, the rank doubled drew it. Its summary said "train longer or
    raise the learning rate"; where the last save's hold stopped growing it now says that more of the same dose
    will not mend it, as its first cause does. A hold that stalled early and then grew is told to train longer."""
    from trainer.doctor.evidence import Observation
    from trainer.doctor.verdict import CheckpointVerdict
    from trainer.doctor.verdict_summary import summary_of

    stalled = Observation("model", "under", "strong", "", "trigger_hold_plateau")
    low = Observation("model", "under", "strong", "", "low_trigger_hold")

    def summary(*signals: Observation) -> tuple[str, str]:
        cvs = [CheckpointVerdict(400 * (i + 1), "under", [], observations=(o,)) for i, o in enumerate(signals)]
        said = summary_of("under", cvs[-1].step, cvs, [])
        return words.say(said, "en"), words.say(said, "ko")

    en, ko = summary(low, stalled)
    assert "stopped growing" in en and "will not mend it" in en and "Train longer" not in en, en
    assert "더 오르지 않았습니다" in ko and "LoRA에 자리부터" in ko, ko
    en, _ = summary(stalled, low)
    assert "Train longer or raise the learning rate" in en and "stopped growing" not in en, en


def test_an_under_trained_run_whose_last_hold_sits_in_the_band_is_told_to_look_at_its_pictures_first():
    """Of the saves read under with the trigger hold in the band where the pictures decide (HOLD_EDGE to HOLD_SHOWS),
    18 of 38 showed the subject on the demo world's pictures in plain folders (the trigger "star", the pictures in
    mixed sizes, each on three training seeds), 5 of the 8 that were a run's last (scripts/doctor_calibration.py
    --failure-seeds 42 1 2 prints it). The summary of a run whose last save sits there says first to look at that
    save's pictures before changing anything, then what to do if they do not show the subject; below the band, past
    the line, or where a judge read the pictures it does not; and a save whose hold stopped growing in the band says
    so too (the no-convolution run's, far below, does not)."""
    from trainer.doctor.evidence import Observation
    from trainer.doctor.model_lines import HOLD_EDGE, HOLD_SHOWS, model_observations
    from trainer.doctor.verdict import CheckpointVerdict
    from trainer.doctor.verdict_summary import summary_of

    low = Observation("model", "under", "strong", "", "low_trigger_hold")

    def summary(hold: float, likeness: float | None = None, suspect=None) -> tuple[str, str]:
        last = {"trigger_hold": hold, **({"likeness": likeness} if likeness is not None else {})}
        cvs = [CheckpointVerdict(400, "under", [], measures={"trigger_hold": 0.6}, observations=(low,)),
               CheckpointVerdict(800, "under", [], measures=last, observations=(low,))]
        said = summary_of("under", 800, cvs, [], suspect=suspect)
        return words.say(said, "en"), words.say(said, "ko")

    en, ko = summary((HOLD_EDGE + HOLD_SHOWS) / 2)
    # the look comes first, what the under-trained summary says to do is for pictures that do not show the subject
    assert en.startswith("Under-trained by the model's measures, but the last save's trigger hold"), en
    assert "look at step 800's pictures before changing anything" in en and "if they show the subject, use it" in en
    assert "If they do not: Under-trained: even the last checkpoint (step 800)" in en, en
    assert "800스텝의 그림부터 보세요" in ko, ko
    for hold, likeness in ((HOLD_EDGE - 0.01, None), (HOLD_SHOWS, None), (HOLD_EDGE + 0.01, 0.3)):
        assert "look at step" not in summary(hold, likeness)[0]

    def said(hold: float, before: float) -> str:
        obs = model_observations({"trigger_hold": hold, "hold_before": before})
        plateau = [o for o in obs if o.signal == "trigger_hold_plateau"]
        assert plateau and plateau[0].points_to == "under"
        return words.say(plateau[0].text, "en")

    assert "stopped growing just under the line" in said(0.72, 0.71) and "look at this save's pictures" in said(0.72, 0.71)
    assert "just under the line" not in said(0.46, 0.45) and "look at" not in said(0.46, 0.45)


def test_what_a_change_did_is_said_by_the_judge_where_one_read_both_runs():
    """A child run against its parent at the save each verdict recommends: a judge's likeness 0.05 or more apart
    says the pictures got better or worse, closer says they hardly moved; without a judge's reading on both the
    model measures are given and the pictures decide (the doubled rank held less while its pictures improved)."""
    from trainer.doctor.outcome import at_recommended, change_outcome

    def verdict(label, rec, *saves):
        return {"label": label, "recommended_step": rec,
                "checkpoints": [{"step": s, "measures": {"trigger_hold": h, "likeness": like}} for s, h, like in saves]}

    parent = verdict("under", 1416, (800, 0.731, 0.30), (1416, 0.709, 0.46))
    assert at_recommended(parent) == {"label": "under", "step": 1416, "trigger_hold": 0.709, "prior_drift": None,
                                      "likeness": 0.46}
    better = change_outcome(parent, verdict("under", 1416, (1416, 0.694, 0.59)))
    en, ko = words.say(better["said"], "en"), words.say(better["said"], "ko")
    assert "from 0.46 (the parent: under-trained, step 1416) to 0.59" in en and "the pictures got better" in en, en
    assert "그림이 나아졌습니다" in ko, ko
    worse = words.say(change_outcome(parent, verdict("fit", 800, (800, 0.80, 0.40)))["said"], "en")
    assert "to 0.40 (this run: fit, step 800)" in worse and "got worse" in worse, worse
    assert "hardly moved" in words.say(change_outcome(parent, verdict("under", 1416, (1416, 0.70, 0.49)))["said"], "en")
    unjudged = words.say(change_outcome(parent, verdict("under", None, (1416, 0.694, None)))["said"], "en")
    assert "trigger hold 0.709), this run reads under-trained (step 1416, trigger hold 0.694)" in unjudged, unjudged
    assert "Compare two runs" in unjudged
    assert change_outcome(None, parent) is None and change_outcome({"label": "?"}, parent) is None
    assert "step —" in words.say(change_outcome(verdict("under", None), parent)["said"], "en")
