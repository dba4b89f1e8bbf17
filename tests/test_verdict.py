"""trainer.doctor.verdict: one judgement per run and checkpoint, and Plan, Review, Troubleshoot and the guard reading it.

Synthetic run folders (tests/test_review.py's ``fake_run``): pictures drawn by the demo world's renderer, so the
measures read them as a real demo run's samples would be read."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

import words
from tests.test_review import _burnt, _world, fake_run
from trainer.config.presets import preset_config
from trainer.config.schema import from_dict
from trainer.demo import character_scene, render_scene, write_character_dataset
from trainer.demo.world import BACKGROUNDS, Scene
from trainer.doctor import pictures
from trainer.doctor.diagnose import alert_prescription, diagnose
from trainer.doctor.kb import describe_change, load_kb, moves_as_meant
from trainer.doctor.risks import start_risks
from trainer.doctor.symptoms import symptom_causes, symptom_reading
from trainer.doctor.verdict import (
    LABEL_TEXT,
    checkpoint_verdicts,
    plan_verdict,
    run_verdict,
)
from trainer.io import atomic_write_text
from trainer.plan.steps import plan_from_config
from trainer.review import grid as review
from trainer.run import contents


def _character() -> Image.Image:
    return render_scene(character_scene("grass"), 64)


def demo_run(tmp_path: Path, picture, steps=(10, 20, 30), **kw) -> Path:
    write_character_dataset(tmp_path / "data", n_images=4)
    return fake_run(tmp_path, list(steps), picture, dataset=tmp_path / "data", **kw)


def _set_config(run: Path, **sections) -> None:
    """Rewrite the run's config.toml with some sections changed (e.g. the preset's LoRA shape)."""
    cfg = contents.load_run_config(run).to_dict()
    for section, values in sections.items():
        cfg[section].update(values)
    preset = cfg.pop("preset", "")
    new = from_dict(cfg)
    new.preset = preset
    atomic_write_text(run / "config.toml", new.to_toml())


def _alert(run: Path, kind: str = "nonfinite_grad", step: int = 5) -> None:
    ev = {"type": "alert", "kind": kind, "first": kind.removeprefix("nonfinite_"), "step": step,
          "broke_at_step": step, "module": "unet.x", "lr": 1.0, "precision": "fp32"}
    (run / "events.jsonl").write_text(json.dumps(ev) + "\n", encoding="utf-8")


def _healthy_demo(step: int, kind: str) -> Image.Image:
    """The demo character shows on trigger prompts from step 20; no-trigger pictures stay the world's."""
    if kind == "no_trigger" or step == 0 or step == 10:
        return _world()
    return _character()


def _healthy_burnt_late(step: int, kind: str) -> Image.Image:
    """:func:`_healthy_demo` whose last save's trigger pictures are harsher than the training pictures: the judge
    still sees the character (likeness 1.0), so the burn is weak beside it."""
    picture = _healthy_demo(step, kind)
    return _burnt(picture) if step == 30 and kind != "no_trigger" else picture


# ------------------------------------------------------------------------------------------ the verdict


def test_a_healthy_demo_run_is_fit_and_its_saturated_character_is_not_burn(tmp_path):
    # burn is measured against the training pictures' own colours: the character drawn as the data shows it is
    # not burnt (against step 0's world picture its magenta and yellow read ~0.58, over BURN_LIMIT)
    run = demo_run(tmp_path, _healthy_demo)
    rows = {r["step"]: r for r in pictures.measure_steps(run)}
    assert rows[20]["burn"] < pictures.BURN_LIMIT
    v = run_verdict(run)
    assert v.label == "fit" and v.recommended_step in (20, 30)
    assert [c.label for c in v.checkpoints] == ["under", "fit", "fit"]
    assert not any("burn" in words.say(e) for e in v.evidence)
    rec = review.recommend_checkpoint(run)
    assert rec["step"] == v.recommended_step
    # the old Review called every one of these saves damaged and asked for a lower dose
    assert "Lower the dose" not in words.say(rec["reason"], "en") and "burns or ignores" not in words.say(rec["reason"], "en")


def test_burn_past_the_training_pictures_on_a_run_without_other_measures_says_over(tmp_path):
    data = tmp_path / "data" / "1_world"
    data.mkdir(parents=True)
    for i in range(3):
        _world().save(data / f"{i}.png")
    run = fake_run(tmp_path, [10, 20], lambda step, kind: _burnt(_world()) if step == 20 and kind != "no_trigger"
                   else _world(), lr=1e-3, fit=(0.005, 0.05))
    labels = {c.step: c.label for c in checkpoint_verdicts(run)}
    assert labels == {10: "fit", 20: "over"}
    v = run_verdict(run)
    assert v.label == "fit" and v.recommended_step == 10
    assert "20" in words.say(v.summary, "en") and "overfit" in words.say(v.summary, "en")


def _disc(background: str) -> Image.Image:
    """A subject that is not the demo's: a large teal disc with two eyes, on one of the world's backgrounds."""
    img = Image.new("RGB", (64, 64), BACKGROUNDS[background])
    draw = ImageDraw.Draw(img)
    draw.ellipse([14, 14, 50, 50], fill=(20, 185, 185))
    for x in (24, 40):
        draw.ellipse([x - 3, 24, x + 3, 30], fill=(248, 248, 248))
    return img


def test_a_new_subject_on_a_night_sky_the_data_never_showed_is_not_burn_and_burnt_it_is(tmp_path):
    """HSV saturation calls a dark navy sky deeply saturated, so a healthy run of a subject drawn large on one (a
    prompt asking for what the data never showed) read as burnt against training pictures on sky, grass and sand.
    Burn between pictures of different content reads chroma, against the more of the data's and of the base
    model's picture of the same prompt."""
    data = tmp_path / "data" / "10_qwv"
    data.mkdir(parents=True)
    for i, background in enumerate(("sky", "grass", "sand")):
        _disc(background).save(data / f"{i}.png")
    world = render_scene(Scene("triangle", "orange", "night", "top", "small"), 64)

    def healthy(step: int, kind: str) -> Image.Image:
        return world if step == 0 or kind == "no_trigger" else _disc("night")

    rows = {r["step"]: r for r in pictures.measure_steps(fake_run(tmp_path / "a", [10, 20], healthy, dataset=data))}
    assert rows[20]["burn"] < 0.1 < pictures.BURN_LIMIT
    burnt = fake_run(tmp_path / "b", [10, 20], lambda step, kind: _burnt(_disc("night")) if step == 20
                     and kind != "no_trigger" else healthy(step, kind), dataset=data)
    assert {r["step"]: r for r in pictures.measure_steps(burnt)}[20]["burn"] > pictures.BURN_LIMIT


def test_a_colourful_scene_the_base_draws_for_the_prompt_is_not_burn_on_a_subject_shot_on_grey(tmp_path):
    """Training pictures on grey stone and snow; the prompt asks for grass, where the base model drew a large yellow
    square: the subject on grass is more colourful than any training picture, and no more than the base's own
    picture of that prompt."""
    data = tmp_path / "data" / "10_qwv"
    data.mkdir(parents=True)
    for i, background in enumerate(("stone", "snow", "stone")):
        _disc(background).save(data / f"{i}.png")
    base = render_scene(Scene("square", "yellow", "grass", "center", "large"), 64)
    run = fake_run(tmp_path, [10, 20], lambda step, kind: base if step == 0 or kind == "no_trigger"
                   else _disc("grass"), dataset=data)
    assert {r["step"]: r for r in pictures.measure_steps(run)}[20]["burn"] < 0.1


def test_leakage_on_the_demo_makes_a_checkpoint_over_and_the_run_over_when_all_leak(tmp_path):
    def picture(step: int, kind: str) -> Image.Image:
        if step == 0:
            return _world()
        return _character()  # the character everywhere, even without the trigger

    run = demo_run(tmp_path, picture, steps=(10, 20))
    v = run_verdict(run)
    assert [c.label for c in v.checkpoints] == ["over", "over"]
    assert v.label == "over" and v.recommended_step == 10  # the least pushed save
    assert "leakage" in words.say(v.evidence[0], "en") and "누출" in words.say(v.evidence[0], "ko")


def test_all_under_says_under_and_recommends_the_furthest_along(tmp_path):
    run = demo_run(tmp_path, lambda step, kind: _world(), steps=(10, 20))
    v = run_verdict(run)
    assert v.label == "under" and v.recommended_step == 20
    assert "Train longer" in words.say(v.summary, "en")


def test_a_guard_alert_makes_the_run_broken(tmp_path):
    run = demo_run(tmp_path, _healthy_demo)
    _alert(run)
    v = run_verdict(run)
    assert v.label == "broken"
    assert "non-finite" in words.say(v.evidence[0], "en")


def test_the_plan_speaks_the_run_verdicts_words():
    plan = {"dose": 2.09, "dose_low": 0.4, "dose_high": 3.0}
    v = plan_verdict(plan)
    assert v.forecast and v.label == "fit" and words.say(v.title(), "en") == words.say(LABEL_TEXT["fit"], "en")
    assert plan_verdict({**plan, "dose": 9.0}).label == "over"
    assert plan_verdict({**plan, "dose": 0.1}).label == "under"
    assert "2.09" in words.say(v.evidence[0], "en") and "moderate" in words.say(v.evidence[0], "en")


# -------------------------------------------------------------------------------------- the diagnosis


def test_a_fit_run_never_shows_overtraining_as_its_top_cause(tmp_path):
    run = demo_run(tmp_path, _healthy_burnt_late)
    d = diagnose(run, write=False)
    assert d["verdict"]["label"] == "fit"
    over = {"overtraining", "lr_too_high", "alpha_rank_aggressive", "concept_bleed"}
    main = [c["id"] for c in d["causes"] if not c["lesser"]]
    assert main == [], main  # even caption bias, raised only by "samples melt late" through the weak burn
    for c in d["causes"]:
        assert c["strength"] in ("strong", "moderate", "weak")
        if c["id"] in over:
            assert c["lesser"] and "fit" in c["why_lesser"]["en"]
    assert not [p for p in d["prescriptions"] if p["applicable"] and not p["lesser"] and p["id"] == "lower_lr"]
    burn = next(o for o in d["observed"] if o["signal"] == "sample_burn")
    assert burn["weak"]


def test_earlier_checkpoint_is_offered_only_when_the_run_has_one(tmp_path):
    def picture(step: int, kind: str) -> Image.Image:
        if step == 0:
            return _world()
        return _character()

    run = demo_run(tmp_path, picture, steps=(10,))  # one save, and it leaks: over
    d = diagnose(run, write=False)
    assert d["verdict"]["label"] == "over"
    earlier = [p for p in d["prescriptions"] if p["id"] == "earlier_checkpoint"]
    assert earlier and not earlier[0]["applicable"]


def test_a_change_that_moves_a_setting_against_its_meaning_is_not_offered(tmp_path):
    cfg = preset_config("demo-character")  # conv_rank 16
    conv = load_kb().prescription("conv_lora_on")  # "put LoRA on the convolutions": set conv_rank to 8
    assert "16 → 8" in words.say(describe_change(conv, cfg))
    assert not moves_as_meant(cfg, conv)
    cfg.lora.conv_rank = 0
    assert moves_as_meant(cfg, conv)
    run = demo_run(tmp_path, lambda step, kind: _world(), steps=(10, 20))  # under: the underfit prescriptions
    _set_config(run, lora={"conv_rank": 16, "conv_blocks": ["up_blocks.1"]})
    d = diagnose(run, write=False)
    rx = {p["id"]: p for p in d["prescriptions"]}
    assert d["verdict"]["label"] == "under" and rx["conv_lora_on"]["applicable"] is False
    assert rx["raise_steps"]["applicable"] is True
    # a smaller convolution rank than the prescription's 8 is still convolution LoRA: raising the rank is the
    # advice, not "put LoRA on the convolutions too" (a rank-4 run of the demo's pictures, scripts/doctor_settings.py)
    _set_config(run, lora={"rank": 4, "alpha": 4.0, "conv_rank": 4, "conv_blocks": ["up_blocks.1"]})
    rx = {p["id"]: p for p in diagnose(run, write=False)["prescriptions"]}
    assert rx["conv_lora_on"]["applicable"] is False and rx["raise_rank"]["applicable"] is True


def test_an_lr_thousands_of_times_the_presets_is_sent_back_to_the_presets(tmp_path):
    run = demo_run(tmp_path, _healthy_demo, lr=3.0)
    _set_config(run, dose={"fit_low": 0.4, "fit_high": 3.0})
    cfg = contents.load_run_config(run)
    cfg.preset = "demo-character"
    atomic_write_text(run / "config.toml", cfg.to_toml())
    _alert(run)
    d = diagnose(run, write=False)
    first = next(p for p in d["prescriptions"] if p["applicable"])
    assert first["id"] == "preset_lr", [p["id"] for p in d["prescriptions"]]
    assert "3 → 0.003" in first["change"]["describe"]["en"]
    rx = alert_prescription(run, "nonfinite_grad", "en")  # the alert box before the diagnosis is written
    assert rx["title"] == "Go back to the preset's learning rate" and "0.003" in words.say(rx["change"])


def test_a_symptom_that_points_against_the_verdict_is_read_in_its_light(tmp_path):
    def picture(step: int, kind: str) -> Image.Image:
        return _world() if step == 0 else _character()

    run = demo_run(tmp_path, picture, steps=(10, 20))
    v = run_verdict(run)
    assert v.label == "over"
    note = symptom_reading("not_alike", v)
    assert note and "over-trained" in words.say(note, "en") and "more likely means" in words.say(note, "en")
    assert "과적합" in words.say(note, "ko")
    order = [(c.id, lesser) for c, lesser in symptom_causes("not_alike", v)]
    # the causes of too little learning (too little dose, the look written in the captions) go last, as lesser
    assert order[-2:] == [("underfit", True), ("features_captioned_away", True)], order
    assert not any(lesser for _, lesser in order[:-2])
    assert symptom_reading("burnt_colours", v) is None  # it agrees with the verdict: nothing to explain


# ---------------------------------------------------------------------------------- dangerous settings


@pytest.fixture(scope="module")
def demo_config(tmp_path_factory):
    from trainer.demo import TRIGGER, write_prior_dataset

    root = tmp_path_factory.mktemp("demo")
    write_character_dataset(root / "data")
    write_prior_dataset(root / "prior")
    cfg = preset_config("demo-character")
    cfg.dataset.path, cfg.dataset.reg_path, cfg.dataset.trigger = str(root / "data"), str(root / "prior"), TRIGGER
    return cfg


def test_the_default_demo_starts_without_asking(demo_config):
    _, plan = plan_from_config(demo_config)
    assert plan_verdict(plan).label == "fit"
    assert start_risks(demo_config, plan) == []


def test_a_far_lr_or_dose_asks_first_naming_the_number_and_the_presets(demo_config):
    cfg = demo_config.model_copy(deep=True)
    cfg.optim.lr = 0.04  # 13x the preset's: the dose goes to ~28, 9x the zone's top
    _, plan = plan_from_config(cfg)
    risks = start_risks(cfg, plan)
    assert len(risks) == 2
    assert "0.04" in words.say(risks[1], "en") and "0.003" in words.say(risks[1], "en") and "13.3× the preset's" in words.say(risks[1], "en")
    assert f"{plan.dose:.3g}" in words.say(risks[0], "en") and "0.4–3" in words.say(risks[0], "en")
    assert all(words.say(r, "ko") and words.say(r, "ko") != words.say(r) for r in risks)
    cfg.optim.lr = 0.0003  # exactly a tenth: starts at once
    _, plan = plan_from_config(cfg)
    assert start_risks(cfg, plan) == []
    cfg.optim.lr = 0.0002  # less: asks, saying it may learn nothing
    _, plan = plan_from_config(cfg)
    assert any("1/15 of the preset's" in words.say(r) and "learn nothing" in words.say(r) for r in start_risks(cfg, plan))



def test_an_optimizer_that_sets_its_own_step_is_not_held_to_adamws_lr_or_dose(demo_config):
    """Prodigy's lr is a multiplier (1 as its users set it): on the demo's AdamW preset its dose reads hundreds of
    times the zone's top and its lr 333x the preset's, though the run is healthy (scripts/doctor_settings.py: fit at
    1200 and 1392 by its pictures). Start does not ask, and no dose or lr finding is raised; the plan's note says
    why."""
    from trainer.doctor.plan_findings import dose_finding
    from trainer.doctor.risks import lr_far_finding

    cfg = demo_config.model_copy(deep=True)
    cfg.optim.optimizer, cfg.optim.lr = "prodigy", 1.0
    _, plan = plan_from_config(cfg)
    assert plan.dose_zone == "over" and plan.dose_note is not None
    assert start_risks(cfg, plan) == [] and lr_far_finding(cfg) is None
    assert dose_finding({"dose_zone": plan.dose_zone, "dose": plan.dose, "dose_low": plan.dose_low,
                         "dose_high": plan.dose_high, "dose_note": words.say(plan.dose_note)}) is None
    forecast = plan_verdict(plan)
    assert forecast.observations[0].strength == "weak"
    assert "sets its own step size" in words.say(forecast.summary) and "lower the learning rate" not in words.say(
        forecast.summary)
    assert "걸음 크기를 스스로" in words.say(forecast.summary, "ko")
    # the Plan step forecasts no label from that dose: not "Expected verdict: over-trained" beside the note
    from ui.steps.plan import render_plan

    assert forecast.label == "none"
    for lang, said in (("en", "the pictures will tell"), ("ko", "그림으로 판단")):
        shown = render_plan(plan, lang)
        assert said in shown["dose_md"] and words.say("verdict.label.over", lang) not in shown["dose_md"]
        assert "does not apply" in shown["preset_dose"] if lang == "en" else "맞지 않습니다" in shown["preset_dose"]
        assert words.say("verdict.label.over", lang) not in shown["preset_dose"]
    cfg.optim.optimizer = "adamw"  # the same lr with AdamW is the far lr it looks like
    _, plan = plan_from_config(cfg)
    assert len(start_risks(cfg, plan)) == 2 and lr_far_finding(cfg).level == "error"


# -------------------------------------------------------------------------- what Troubleshoot shows of it


def test_troubleshoot_shows_the_verdict_and_causes_in_words_not_scores(tmp_path):
    from ui.steps.troubleshoot import findings_markdown

    run = demo_run(tmp_path, _healthy_burnt_late)
    text = findings_markdown(diagnose(run, write=False), "en")
    assert "Verdict: fit" in text and "Nothing to change" in text
    assert "Also weighed, less likely for this run" in text and "weak evidence" in text
    assert not re.search(r"\(\d+\.\d\d\)", text), text  # "Overtrained (1.40)" was a number nobody can read
    ko = findings_markdown(diagnose(run, write=False), "ko")
    assert "판정: 알맞음" in ko and "약한 근거" in ko


def test_troubleshoot_never_offers_a_change_the_wrong_way_and_turns_advice_into_buttons(tmp_path):
    from ui.steps.troubleshoot import action_buttons, rx_choices, symptom_markdown

    run = demo_run(tmp_path, lambda step, kind: _world(), steps=(10, 20))  # under
    _set_config(run, lora={"conv_rank": 16, "conv_blocks": ["up_blocks.1"]})
    diag = diagnose(run, write=False)
    panel = symptom_markdown("not_alike", run, "en", diag)
    assert "~~Put LoRA on the convolutions too~~ (already so in this run: lora.conv_rank is 16)" in panel
    assert "16 → 8" not in panel
    offered = [pid for _, pid in rx_choices(run, diag, "not_alike", "en")]
    assert "raise_steps" in offered and "conv_lora_on" not in offered
    # advice the run already follows (its noise offset is 0, its clipping at 1) is struck through, never offered
    nan_panel = symptom_markdown("loss_nan", run, "en", diag)
    assert "~~Turn noise offset off~~ (already so in this run: train.noise_offset is 0.0)" in nan_panel
    assert "(0 → 0)" not in nan_panel and "(1 → 1)" not in nan_panel
    assert "noise_offset_off" not in [pid for _, pid in rx_choices(run, diag, "loss_nan", "en")]
    buttons = action_buttons(diag, "en")
    assert buttons["ts_go_dataset"].visible and buttons["ts_go_dataset"].value == "Go back to the dataset →"
    assert not buttons["ts_go_review"].visible  # every save is under: no earlier one to go back to


@pytest.mark.parametrize("follows, over", [
    ((False, True, True), []),  # following the prompts better as it learns: not overfitting
    ((True, False, False), [20, 30]),  # following them worse after having followed them: overfitting
])
def test_adherence_counts_as_overfitting_only_when_it_falls_from_an_earlier_peak(tmp_path, follows, over):
    """The trigger prompts that ask for something new ("on snow, right", "wearing a blue hat") drawn as asked or
    as the data has it (grass, left, a red hat); the character itself at every save."""
    by_step = dict(zip((10, 20, 30), follows))

    def picture(step: int, kind: str) -> Image.Image:
        if kind == "no_trigger" or step == 0:
            return _world()
        asked = by_step[step]
        if kind == "trigger_unseen":
            return render_scene(character_scene("snow", "right") if asked else character_scene("grass", "left"), 64)
        if kind == "trigger_outfit":
            return render_scene(character_scene("grass", "left", "large", "blue" if asked else "red"), 64)
        return render_scene(character_scene("grass", "left"), 64)

    run = demo_run(tmp_path, picture)
    verdicts = {c.step: c for c in checkpoint_verdicts(run)}
    assert all(c.measures["likeness"] >= 0.5 for c in verdicts.values())
    assert [s for s, c in verdicts.items() if c.label == "over"] == over, {s: c.measures for s, c in verdicts.items()}
