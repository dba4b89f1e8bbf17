"""Sample prompts must not be copies of training captions (the settings seed: samples test generalisation).
The plan says so before training, and the same warning is a finding with a knowledge-base signal."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import words
from tests.helpers import tiny_config, write_toy_dataset
from trainer.config.schema import DEFAULT_SAMPLE_PROMPTS
from trainer.doctor.kb import load_kb
from trainer.doctor.plan_findings import sample_prompt_finding
from trainer.plan.steps import plan_from_config

HANGUL = re.compile(r"[\uac00-\ud7a3]")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """Eight pictures captioned "zxc, on <sky|grass|sand>"."""
    return write_toy_dataset(tmp_path_factory.mktemp("data"))


def plan_with(dataset, tmp_path, prompts, **overrides):
    cfg = tiny_config(dataset, tmp_path, {"sample.enabled": True, "sample.prompts": prompts, **overrides})
    return plan_from_config(cfg)[1]


def test_a_sample_prompt_that_is_a_caption_in_another_order_and_case_is_a_plan_warning(dataset, tmp_path):
    prompts = ["{trigger}", "On  Grass , ZXC", "{trigger}, wearing a red raincoat", "on grass"]
    plan = plan_with(dataset, tmp_path, prompts)
    [warning] = plan.sample_warnings
    assert warning["index"] == 1 and warning["prompt"] == "On  Grass , ZXC"
    grass = sorted(p.stem for p in (dataset / "10_zxc toy").glob("*.txt") if p.read_text() == "zxc, on grass")
    assert warning["matches"] == len(grass) > 0
    assert sorted(Path(f).stem for f in warning["files"]) == grass[:5]
    assert "sample prompt 2" in words.say(warning["message"], "en") and warning["files"][0] in words.say(warning["message"], "en")
    assert HANGUL.search(words.say(warning["message"], "ko")) and warning["files"][0] in words.say(warning["message"], "ko")
    assert words.worded(plan.to_json()["sample_warnings"]) == words.worded(plan.sample_warnings)


def test_the_trigger_filled_in_counts_but_the_trigger_only_prompt_does_not(dataset, tmp_path):
    plan = plan_with(dataset, tmp_path, ["{trigger}, on sand", "{trigger}"])
    assert [w["index"] for w in plan.sample_warnings] == [0]
    # a dataset captioned with the bare trigger: the trigger-only prompt checks likeness, which is the point
    bare = write_toy_dataset(tmp_path / "bare")
    for caption in (bare / "10_zxc toy").glob("*.txt"):
        caption.write_text("zxc", encoding="utf-8")
    assert plan_with(bare, tmp_path, ["{trigger}", "ZXC."]).sample_warnings == []


def test_the_default_prompts_and_a_run_without_samples_raise_nothing(dataset, tmp_path):
    assert plan_with(dataset, tmp_path, list(DEFAULT_SAMPLE_PROMPTS)).sample_warnings == []
    off = plan_with(dataset, tmp_path, ["zxc, on sky"], **{"sample.enabled": False})
    assert off.sample_warnings == []


def test_the_warning_is_a_finding_the_knowledge_base_explains(dataset, tmp_path):
    plan = plan_with(dataset, tmp_path, ["{trigger}", "zxc, on sky"]).to_json()
    f = sample_prompt_finding(plan)
    assert f is not None and f.signal == "sample_prompt_seen" and f.level == "warning"
    assert f.values["prompts"][0]["prompt"] == "zxc, on sky" and HANGUL.search(words.say(f.message, "ko"))
    kb = load_kb()
    [cause] = kb.rank_causes({f.signal: 0.6})
    assert cause.cause.id == "sample_prompts_from_data"
    assert kb.prescriptions_for(cause.cause.id)[0].id == "unseen_sample_prompts"
    assert sample_prompt_finding({}) is None


def test_several_pictures_per_prompt_each_with_its_own_seed_drawn_as_one_alone(tmp_path):
    """sample.images_per_prompt 2: each prompt drawn with seeds 1234 and 1235 (the first keeps the one-seed file
    name), in batches, and each picture is the one that seed draws alone."""
    import numpy as np
    import torch
    from PIL import Image

    from tests.helpers import tiny_config, write_toy_dataset
    from trainer.models.base import load_pipeline
    from trainer.models.precision import decide_precision
    from trainer.sampling import render, sampling_pipeline
    from trainer.train.loop import run_training

    data = write_toy_dataset(tmp_path / "data", n=2)
    cfg = tiny_config(data, tmp_path / "runs", {"train.max_steps": 1, "sample.enabled": True, "sample.images_per_prompt": 2,
                                                "sample.steps": 2})
    result = run_training(cfg)
    assert result.status == "finished", result.message
    folder = result.run_dir / "samples" / "step-000000"
    records = json.loads((folder / "manifest.json").read_text())["samples"]
    assert [(r["index"], r["seed"]) for r in records] == [(i, s) for i in range(4) for s in (1234, 1235)]
    assert [r["file"] for r in records[:2]] == ["00_trigger.png", "00_trigger_s1.png"]
    pipe, info = load_pipeline(cfg.model)
    sampler = sampling_pipeline(pipe, info.family, info.prediction_type)
    plan = decide_precision("fp32", torch.device("cpu"))
    for r in (records[0], records[1], records[-1]):
        alone = np.asarray(render(sampler, r["prompt"], cfg.sample, (cfg.dataset.resolution,) * 2, torch.device("cpu"),
                                  plan, r["seed"]), dtype=np.int16)
        batched = np.asarray(Image.open(folder / r["file"]).convert("RGB"), dtype=np.int16)
        assert np.abs(alone - batched).max() <= 2, r["file"]  # float rounding of a batch, at most
    other = np.asarray(Image.open(folder / records[1]["file"]), dtype=np.int16)
    assert np.abs(other - np.asarray(Image.open(folder / records[0]["file"]), dtype=np.int16)).max() > 10
