"""A user's own dataset replaces the demo: its captions propose the trigger, the sample prompts are made for it in
the four kinds, the run takes the folder's name and never one whose files hold another dataset's settings, a
preset that would enlarge the pictures says so, and a scan of the folder warns of nothing about the trigger."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from tests.helpers import tiny_config, write_toy_dataset
from trainer.config.names import clash, free_run_name
from trainer.config.schema import DatasetConfig, save_config
from trainer.data.buckets import upscaling
from trainer.data.caption_doctor import STOPWORDS, caption_words
from trainer.data.proposals import caption_texts, propose_trigger, run_name_for, sample_prompts_for
from trainer.plan.steps import plan_from_config
from trainer.run.samples import PROMPT_KINDS, expand_prompts

RED = ["qwe, on a red background"] * 12


def own_folder(root: Path, n: int = 12, caption: str = "qwe, on a red background", size: int = 64) -> Path:
    """``root`` holding ``n`` small pictures (no kohya folder), each captioned ``caption``."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        Image.new("RGB", (size, size), (200 - 10 * i, 30, 30 + 5 * i)).save(root / f"pic_{i:02d}.png")
        (root / f"pic_{i:02d}.txt").write_text(caption, encoding="utf-8")
    return root


# ------------------------------------------------------------------------------------------- trigger


def test_the_tag_opening_nearly_every_caption_is_proposed_as_written():
    assert propose_trigger(RED) == "qwe"
    assert propose_trigger(["Qwe, smiling", "Qwe, on grass", "qwe, standing", "Qwe"]) == "Qwe"
    # 11 of 12 open with it (nearly all); the twelfth has it later
    assert propose_trigger([*RED[:11], "on a red background, qwe"]) == "qwe"
    assert propose_trigger({"a.png": "sks woman, park", "b.png": "sks woman", "c.png": "sks woman, smiling"}) == "sks woman"


@pytest.mark.parametrize("captions", [
    RED[:10] + ["a red background"] * 2,                     # 10 of 12 is not nearly all
    ["1girl, solo, red hair, smile"] * 6,                     # a tagger's head count describes, it does not name
    ["girl, standing"] * 6,                                   # an everyday word the base model already draws
    ["a woman standing in a park, smiling"] * 6,              # a description, not a name
    ["qwe, on a red background"] * 2,                          # two captions say nothing about "nearly all"
])
def test_no_trigger_is_proposed_where_the_captions_do_not_name_one(captions):
    assert propose_trigger(captions) is None


def test_the_demo_captions_propose_the_demos_own_trigger(tmp_path):
    data = write_toy_dataset(tmp_path / "toy")
    texts = caption_texts(DatasetConfig(path=str(data)))
    assert len(texts) == 8 and propose_trigger(texts) == "zxc"


def test_caption_texts_reads_the_datasets_own_captions_only(tmp_path):
    data = own_folder(tmp_path / "mine", n=3)
    (data / "pic_00.txt").unlink()
    Image.new("RGB", (64, 64)).save(data / "uncaptioned.png")
    texts = caption_texts(DatasetConfig(path=str(data)))
    assert sorted(texts) == ["pic_01.png", "pic_02.png"]


# ------------------------------------------------------------------------------------------- prompts


def test_the_four_prompts_are_made_from_the_trigger_and_read_back_as_their_kinds():
    prompts = sample_prompts_for("qwe", RED)
    assert prompts[0] == "qwe"
    assert prompts[3] == "on a red background"  # the captions' own words, without the trigger
    assert all(p.startswith("qwe, ") for p in prompts[1:3])
    assert [p["kind"] for p in expand_prompts(prompts, "qwe")] == list(PROMPT_KINDS)
    assert "qwe" not in caption_words(prompts[3])


def test_the_unseen_and_other_outfit_prompts_ask_for_what_no_caption_shows():
    captions = ["qwe, on snow, from behind, wearing a blue hat", "qwe, on a beach, sitting, wearing a red raincoat",
                "qwe, in a forest, wearing sunglasses"]
    seen = {w for c in captions for w in caption_words(c)} - STOPWORDS - {"qwe"}
    _, unseen, outfit, no_trigger = sample_prompts_for("qwe", captions)
    for prompt in (unseen, outfit):
        assert not set(caption_words(prompt.removeprefix("qwe, "))) & seen, prompt
    tags = no_trigger.split(", ")
    assert len(tags) == 4 and "qwe" not in tags
    assert all(any(tag in c.split(", ") for c in captions) for tag in tags)


def test_captions_of_the_trigger_alone_get_the_default_no_trigger_prompt():
    from trainer.config.schema import DEFAULT_SAMPLE_PROMPTS

    assert sample_prompts_for("qwe", ["qwe"] * 4)[3] == DEFAULT_SAMPLE_PROMPTS[3]


def test_the_plan_finds_no_made_prompt_copied_from_a_caption(tmp_path):
    data = own_folder(tmp_path / "mine")
    cfg = tiny_config(data, tmp_path / "runs", {"dataset.trigger": "qwe", "sample.enabled": True,
                                               "sample.prompts": sample_prompts_for("qwe", RED)})
    assert plan_from_config(cfg)[1].sample_warnings == []


# ------------------------------------------------------------------------------------------ run names


def test_the_run_is_named_after_its_folder():
    assert run_name_for("/data/my-character") == "my-character"
    assert run_name_for("/data/my-character/10_qwe") == "my-character"  # a kohya folder names its parent


def test_a_name_whose_config_holds_another_dataset_is_passed_over(tmp_path):
    configs, runs = tmp_path / "configs", tmp_path / "runs"
    configs.mkdir()
    demo, mine = own_folder(tmp_path / "demo", n=1), own_folder(tmp_path / "mine", n=1)
    save_config(tiny_config(demo, runs), configs / "mine.toml")
    assert clash("mine", str(mine), configs, runs) == (configs / "mine.toml", str(demo.resolve()))
    assert free_run_name("mine", str(mine), configs, runs) == "mine-2"
    assert free_run_name("mine", str(demo), configs, runs) == "mine"  # the demo's own name stays the demo's
    save_config(tiny_config(mine, runs), configs / "mine-2.toml")
    assert free_run_name("mine", str(mine), configs, runs) == "mine-2"  # already this dataset's
    # a run folder under the name counts too, though its config file is gone
    (runs / "other" / "20260101-000000").mkdir(parents=True)
    save_config(tiny_config(demo, runs), runs / "other" / "20260101-000000" / "config.toml")
    assert free_run_name("other", str(mine), configs, runs) == "other-2"


# ------------------------------------------------------------------------------------------- upscaling


def test_a_resolution_that_enlarges_small_pictures_says_how_much_and_what_would_not():
    small = [(64, 64)] * 12
    assert upscaling(small, DatasetConfig(resolution=512)) == {"n": 12, "scale": 8.0, "side": 64, "suggest": 64}
    assert upscaling(small, DatasetConfig(resolution=64)) is None
    assert upscaling([(480, 720)] * 4, DatasetConfig(resolution=512)) is None  # a little enlargement is no news


# ---------------------------------------------------------------------------------------- the wizard


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    from trainer.train.runner import Runner
    from ui.binding import UI
    from ui.context import make_context

    return UI(make_context(tmp_path_factory.mktemp("ws"), runner=Runner()))


def values_of(ui, **changes):
    from ui.steps.own_data import ORIGIN, initial_origin

    return {**ui.ctx.defaults, ORIGIN: initial_origin(ui.ctx), **changes}


def test_a_scan_of_ones_own_folder_proposes_everything_and_warns_of_nothing_about_the_trigger(ui):
    from ui.steps.dataset import scan_view

    mine = own_folder(ui.ctx.datasets_dir / "my-pictures")
    out = scan_view(ui, "en", values_of(ui, dataset_path=str(mine)))
    assert out["trigger"] == "qwe"
    prompts = out["sample_prompts"].splitlines()
    assert [p["kind"] for p in expand_prompts(prompts, "qwe")] == list(PROMPT_KINDS)
    assert not any("zxc" in p for p in prompts)
    assert out["run_name"] == "my-pictures"
    assert 'The captions open with "qwe" (12 of 12)' in out["ds_msg"] and "Run name: my-pictures" in out["ds_msg"]
    report = out["report_state"]["report"]
    assert report.trigger == "qwe" and report.trigger_share == 1.0
    assert not [p for p in report.problems if p["kind"] == "no_trigger"]
    # "qwe" in 100 % of captions is the trigger, not a tag welded to it (the red background in all of them is)
    assert [w["tag"] for w in report.tag_warnings] == ["on a red background"]
    assert not [f for f in report.caption_findings if f["message"].values.get("phrase") == "qwe"]


def test_a_typed_trigger_wins_over_a_later_proposal_for_the_same_folder(ui):
    from ui.steps.dataset import scan_view

    mine = own_folder(ui.ctx.datasets_dir / "typed")
    first = scan_view(ui, "en", values_of(ui, dataset_path=str(mine)))
    assert first["trigger"] == "qwe"
    # the user types "rty" and scans the folder again: kept, and the prompts are made for it
    again = scan_view(ui, "en", values_of(ui, dataset_path=str(mine), trigger="rty",
                                          dataset_origin=first["dataset_origin"]))
    assert "trigger" not in again and again["dataset_origin"]["edited"]
    assert again["sample_prompts"].splitlines()[0] == "rty"
    third = scan_view(ui, "en", values_of(ui, dataset_path=str(mine), trigger="rty",
                                          dataset_origin=again["dataset_origin"]))
    assert "trigger" not in third and "sample_prompts" not in third  # nothing new to make
    # another folder: its own captions propose again
    other = own_folder(ui.ctx.datasets_dir / "other", caption="asd, on a blue background")
    fourth = scan_view(ui, "en", values_of(ui, dataset_path=str(other), trigger="rty",
                                           dataset_origin=third["dataset_origin"]))
    assert fourth["trigger"] == "asd" and fourth["run_name"] == "other"


def test_the_demo_keeps_its_own_prompts_and_name(ui):
    from trainer.demo import demo_sample_prompts
    from ui.steps.dataset import scan_view

    out = scan_view(ui, "en", values_of(ui))
    assert "trigger" not in out and "sample_prompts" not in out and "run_name" not in out
    assert ui.ctx.defaults["sample_prompts"].splitlines() == demo_sample_prompts()
    assert ui.ctx.defaults["run_name"] == "demo-zxc"


def test_a_run_name_holding_another_datasets_config_is_named_in_both_languages(ui):
    from ui.steps.own_data import name_clash_note

    mine = own_folder(ui.ctx.datasets_dir / "clash", n=3)
    demo_cfg = tiny_config(ui.ctx.datasets_dir / "demo-zxc", ui.ctx.runs_dir)
    save_config(demo_cfg, ui.ctx.configs_dir / "demo-zxc.toml")
    en = name_clash_note(ui, "demo-zxc", str(mine), "en")
    ko = name_clash_note(ui, "demo-zxc", str(mine), "ko")
    assert "configs/demo-zxc.toml" in en and "demo-zxc-2" in en and "Start would write over" in en
    assert "configs/demo-zxc.toml" in ko and "덮어씁니다" in ko
    assert name_clash_note(ui, "demo-zxc", str(ui.ctx.datasets_dir / "demo-zxc"), "en") == ""
    assert name_clash_note(ui, "clash", str(mine), "en") == ""


def test_a_preset_that_enlarges_the_scanned_pictures_warns_instead_of_applying_silently(ui):
    from ui.steps.dataset import scan_view
    from ui.steps.preset import applied

    mine = own_folder(ui.ctx.datasets_dir / "tiny-pictures")
    scanned = scan_view(ui, "en", values_of(ui, dataset_path=str(mine)))
    values = {**values_of(ui, dataset_path=str(mine)), **scanned}
    out = applied(ui, "sd15-character", values, scanned["report_state"], "en")
    assert out["resolution"] == 512
    assert "12 of your 12 pictures are smaller" in out["preset_msg"] and "×8.0" in out["preset_msg"]
    assert "'Resolution' to 64" in out["preset_msg"]
    assert "64px로" in applied(ui, "sd15-character", values, scanned["report_state"], "ko")["preset_msg"]
    calm = applied(ui, "demo-character", values, scanned["report_state"], "en")
    assert "ld-ok" in calm["preset_msg"]



def test_a_trigger_typed_by_hand_gets_its_prompts_and_stays_for_its_folder(ui):
    from ui.steps.dataset import scan_view
    from ui.steps.own_data import trigger_typed

    mine = own_folder(ui.ctx.datasets_dir / "by-hand")
    first = scan_view(ui, "en", values_of(ui, dataset_path=str(mine)))
    assert trigger_typed(ui, "qwe", str(mine), first["report_state"], first["dataset_origin"]) == {}  # unchanged
    typed = trigger_typed(ui, "rty", str(mine), first["report_state"], first["dataset_origin"])
    prompts = typed["sample_prompts"].splitlines()
    assert prompts[0] == "rty" and prompts[3] == "on a red background"
    assert [p["kind"] for p in expand_prompts(prompts, "rty")] == list(PROMPT_KINDS)
    again = scan_view(ui, "en", values_of(ui, dataset_path=str(mine), trigger="rty",
                                          dataset_origin=typed["dataset_origin"]))
    assert "trigger" not in again and "sample_prompts" not in again and "run_name" not in again
    assert again["report_state"]["report"].trigger == "rty"


def test_a_folder_typed_before_the_page_opening_scan_ran_is_scanned_without_the_demos_prior_folder(ui):
    """The page scans its preselected dataset as it opens. A user who typed their own folder before that scan ran
    got it scanned with the demo's prior scenes still in 'Prior images folder' (its summary counted them), though
    Scan takes them out: now the opening scan does the same, and the fields and the message say so."""
    from ui.steps.dataset import opening_scan

    values = values_of(ui, dataset_path=str(own_folder(ui.ctx.datasets_dir / "typed-early")))
    assert values["reg_path"] and values["val_path"]  # the demo's, as a fresh workspace fills them
    out = opening_scan(ui, "en", None, values)
    report = out["report_state"]["report"]
    assert report.prior_images == 0 and report.image_repeats == report.images * report.folders[0]["repeats"]
    assert out["reg_path"] == "" and out["val_path"] == ""
    assert "taken out of 'Prior images folder'" in out["ds_msg"]
    demo = opening_scan(ui, "en", None, values_of(ui))  # the demo itself keeps its folders
    assert "reg_path" not in demo and demo["report_state"]["report"].prior_images > 0


def test_a_folder_typed_over_the_demos_and_left_without_scan_takes_the_demos_folders_out_of_their_fields(ui):
    """Typed, then Tab and Next: steps without Scan, the Steps page planned the demo's 30 prior scenes with the
    user's pictures (90 image-repeats for 60, seen in Chromium) and Start would have trained them: leaving the field
    now empties the demo's prior and held-out folders, as Scan does. The demo's own folder keeps them."""
    from ui.steps.dataset import leave_demo_folders

    out = leave_demo_folders(ui, "ko", values_of(ui, dataset_path=str(own_folder(ui.ctx.datasets_dir / "left"))))
    assert out["reg_path"] == "" and out["val_path"] == "" and "사전 보존 그림" in out["ds_msg"]
    assert leave_demo_folders(ui, "en", values_of(ui)) == {}
