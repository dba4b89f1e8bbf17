"""The doctor on a run that is not the demo: the demo character's pictures in a plain folder (no demo manifest),
one of them replaced by a picture that is not the character, trained with the demo preset as a user would.

The demo's own picture measures do not apply to such a folder, so the verdict rests on the run's own model; the
truth is known (scripts/doctor_calibration.py measured it: the last saves are fit). A demo-size run: about
2.5 minutes on 2 cores."""

from __future__ import annotations

import shutil

import pytest

from trainer.config.schema import from_dict
from trainer.demo.datasets import write_character_dataset, write_prior_dataset
from trainer.demo.world import Scene, render_scene
from trainer.doctor.diagnose import diagnose
from trainer.train.loop import run_training

WRONG = "zxc_007.png"


@pytest.mark.slow
def test_a_healthy_run_of_your_own_pictures_is_fit_warns_of_nothing_but_names_the_wrong_picture(tmp_path):
    data, prior = tmp_path / "my-pictures", tmp_path / "my-prior"
    write_character_dataset(data)
    (data / "demo_manifest.json").unlink()  # a user's folder: nothing says it is the demo
    write_prior_dataset(prior)
    for extra in prior.glob("*.json"):
        extra.unlink()
    render_scene(Scene("square", "blue", "sky", "center", "large"), 64).save(data / "10_zxc" / WRONG)
    cfg = from_dict({"preset": "demo-character",
                     "dataset": {"path": str(data), "trigger": "zxc", "reg_path": str(prior)},
                     "save": {"output_dir": str(tmp_path / "runs")}})
    result = run_training(cfg)
    assert result.status == "finished"
    d = diagnose(result.run_dir)
    v = d["verdict"]
    assert v["label"] == "fit" and v["recommended_step"] in (1200, 1392)
    assert any("trigger alone brings the subject" in e["en"] for e in v["evidence"])
    # nothing the demo once silenced: no grad spikes, weight growth or burn on a healthy run
    warned = {f["signal"] for f in d["observed"] if f["level"] in ("warning", "error")}
    assert warned == {"picture_outlier"}, warned
    outlier = next(f for f in d["observed"] if f["signal"] == "picture_outlier")
    assert [p["picture"] for p in outlier["values"]["pictures"]] == [f"10_zxc/{WRONG}"]
    assert WRONG in outlier["message"]["en"] and WRONG in outlier["message"]["ko"]
    first = next(c for c in d["causes"] if not c["lesser"])
    assert first["id"] == "data_problem"
    shutil.rmtree(tmp_path / "runs", ignore_errors=True)


def test_a_picture_copied_resized_is_named_in_the_diagnosis_as_a_data_problem(tmp_path):
    """The scan's near copy (trainer/data/near_copies.py) reaches the plan and the diagnosis: the copy and the
    picture it copies are named in both languages, and the first cause is the data."""
    import json

    from PIL import Image

    import words  # noqa: F401  the diagnosis holds its messages worded
    from tests.helpers import tiny_config, write_toy_dataset

    data = write_toy_dataset(tmp_path / "data", n=6)
    folder = next(data.iterdir())
    Image.open(folder / "02.png").resize((256, 256), Image.Resampling.BICUBIC).save(folder / "02_web.jpg", quality=70)
    (folder / "02_web.txt").write_text("zxc, on sky", encoding="utf-8")
    result = run_training(tiny_config(data, tmp_path / "runs", {"train.max_steps": 2}))
    assert result.status == "finished", result.message
    plan = json.loads((result.run_dir / "plan.json").read_text(encoding="utf-8"))
    assert [(c["file"], c["original"]) for c in plan["near_copies"]] == [(f"{folder.name}/02_web.jpg",
                                                                           f"{folder.name}/02.png")]
    d = diagnose(result.run_dir)
    found = next(f for f in d["observed"] if f["signal"] == "near_copy")
    assert found["level"] == "warning"
    for lang in ("en", "ko"):
        assert "02_web.jpg" in found["message"][lang] and "02.png" in found["message"][lang]
    assert "twice as often" in found["message"]["en"] and "두 배" in found["message"]["ko"]
    assert next(c for c in d["causes"] if not c["lesser"])["id"] == "data_problem"


def test_a_look_written_in_every_caption_reaches_the_plan_and_the_diagnosis(tmp_path):
    """The scan's caption doctor finds a phrase in every caption; the plan keeps it, and the diagnosis says it (as
    information on a run with nothing measured; tests/test_model_measures.py has the warning and its first cause)."""
    import words
    from tests.helpers import tiny_config, write_toy_dataset
    from trainer.doctor.plan_findings import caption_everywhere_finding
    from trainer.plan.steps import plan_from_config

    data = write_toy_dataset(tmp_path / "data", n=6)
    for caption in data.rglob("*.txt"):
        caption.write_text(caption.read_text(encoding="utf-8").replace(", ", ", a magenta diamond with stripes, ", 1),
                           encoding="utf-8")
    _, plan = plan_from_config(tiny_config(data, tmp_path / "runs", {}))
    assert plan.captions_everywhere == [{"phrase": "a magenta diamond with stripes", "pct": 100}]
    found = caption_everywhere_finding(plan.to_json(), tmp_path)
    assert found.level == "info" and '"a magenta diamond with stripes" (100%)' in words.say(found.message, "en")


def test_a_trigger_that_is_an_everyday_word_reaches_the_plan_and_the_diagnosis(tmp_path):
    """The scan warns of a trigger the base model already draws ("star"); the plan keeps it, and the diagnosis says
    it (as information on a run with nothing measured; tests/test_model_measures.py has the warning and its first
    cause). A rare trigger keeps the plan's field empty."""
    import words
    from tests.helpers import tiny_config, write_toy_dataset
    from trainer.doctor.plan_findings import trigger_common_finding
    from trainer.plan.steps import plan_from_config

    data = write_toy_dataset(tmp_path / "data", n=6)
    _, plan = plan_from_config(tiny_config(data, tmp_path / "runs", {}))
    assert plan.trigger_common == "" and trigger_common_finding(plan.to_json(), tmp_path) is None
    for caption in data.rglob("*.txt"):
        caption.write_text(caption.read_text(encoding="utf-8").replace("zxc", "star"), encoding="utf-8")
    _, plan = plan_from_config(tiny_config(data, tmp_path / "runs", {"dataset.trigger": "star"}))
    assert plan.trigger_common == "star"
    found = trigger_common_finding(plan.to_json(), tmp_path)
    assert found.level == "info" and 'the trigger "star" is an everyday word' in words.say(found.message, "en")
    assert "드문 지어낸 단어" in words.say(found.message, "ko")


def test_captions_that_write_the_trigger_last_reach_the_plan_and_the_diagnosis(tmp_path):
    """Tags shuffled with the first one kept in place, and the trigger written last: the scan warns, the plan keeps
    it, the diagnosis says it (tests/test_model_measures.py has its warning and its first cause)."""
    import words
    from tests.helpers import tiny_config, write_toy_dataset
    from trainer.doctor.plan_findings import trigger_not_first_finding
    from trainer.plan.steps import plan_from_config

    data = write_toy_dataset(tmp_path / "data", n=6)
    shuffled = {"dataset.shuffle_tags": True, "dataset.keep_tokens": 1}
    _, plan = plan_from_config(tiny_config(data, tmp_path / "runs", shuffled))
    assert plan.trigger_not_first == {} and trigger_not_first_finding(plan.to_json(), tmp_path) is None
    for caption in data.rglob("*.txt"):
        tags = [t.strip() for t in caption.read_text(encoding="utf-8").split(",")]
        caption.write_text(", ".join([t for t in tags if t != "zxc"] + ["zxc"]), encoding="utf-8")
    _, plan = plan_from_config(tiny_config(data, tmp_path / "runs", shuffled))
    assert plan.trigger_not_first == {"trigger": "zxc", "n": 6, "keep": 1}
    found = trigger_not_first_finding(plan.to_json(), tmp_path)
    assert found.level == "info" and 'write the trigger "zxc" after their first 1 tag(s)' in words.say(found.message, "en")


def test_pictures_that_share_one_caption_reach_the_plan_and_the_diagnosis(tmp_path):
    """Every caption the trigger alone: the scan warns, the plan keeps the largest group, the diagnosis warns and
    ranks "the captions do not say what changes" first, and a fit verdict's summary says the model's measures read
    what those captions trained (the demo character's pictures so: fit by the model, likeness 0.14-0.16)."""
    import words
    from tests.helpers import tiny_config, write_toy_dataset
    from trainer.doctor.kb import load_kb
    from trainer.doctor.plan_findings import captions_alike, captions_identical_finding
    from trainer.doctor.verdict_summary import summary_of
    from trainer.plan.steps import plan_from_config

    data = write_toy_dataset(tmp_path / "data", n=6)
    places = ("on sand", "on grass", "on snow", "in a room", "on a road", "by the sea")
    for caption, place in zip(sorted(data.rglob("*.txt")), places):
        caption.write_text(f"zxc, {place}\n", encoding="utf-8")
    _, plan = plan_from_config(tiny_config(data, tmp_path / "runs", {}))
    assert plan.captions_identical == {} and captions_identical_finding(plan.to_json()) is None
    for caption in data.rglob("*.txt"):
        caption.write_text("zxc\n", encoding="utf-8")
    _, plan = plan_from_config(tiny_config(data, tmp_path / "runs", {}))
    assert plan.captions_identical == {"n": 6, "caption": "zxc", "of": 6}
    found = captions_identical_finding(plan.to_json())
    assert found.level == "warning" and '6 pictures share one caption, "zxc"' in words.say(found.message, "en")
    assert '그림 6장이 같은 캡션을 씀: "zxc"' in words.say(found.message, "ko")
    kb = load_kb()
    assert kb.rank_causes({"captions_identical": 1.0})[0].cause.id == "captions_say_nothing"
    assert captions_alike([found]) is found
    # four of the six sharing one caption: the scan's to say, not the diagnosis's (the others name what changes)
    for caption in sorted(data.rglob("*.txt"))[4:]:
        caption.write_text("zxc, by the sea\n", encoding="utf-8")
    _, fewer = plan_from_config(tiny_config(data, tmp_path / "runs", {}))
    assert fewer.captions_identical["n"] == 4 and captions_identical_finding(fewer.to_json()) is None
    en = words.say(summary_of("fit", 1392, [], [], alike=found), "en")
    assert en.startswith("Fit by the model's measures at step 1392, but 6 pictures share one caption") and \
        "Look at step 1392's pictures before using it" in en, en
    assert "1392스텝의 그림부터 보세요" in words.say(summary_of("fit", 1392, [], [], alike=found), "ko")
    assert words.say(summary_of("fit", 1392, [], []), "en").startswith("Fit: use step 1392")
