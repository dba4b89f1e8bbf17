"""The picture judge from its files: which CLIP and SigLIP models this computer's Hugging Face cache holds (offered in
the app), and a wrong ``measure.judge`` said before the run starts, in both languages, naming what to do."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import words
from trainer.doctor.judge_files import check_judge, local_judges
from trainer.errors import UserError
from trainer.models.tiny import save_tiny_clip_judge
from ui.paths import PathPolicy


@pytest.fixture(scope="module")
def judge(tmp_path_factory) -> Path:
    return save_tiny_clip_judge(tmp_path_factory.mktemp("judge") / "tiny-clip")


def cache_repo(cache: Path, repo_id: str, files: Path | dict[str, str], revision: str = "abc123") -> Path:
    """``repo_id`` laid out as huggingface_hub caches it: refs/main naming a snapshot that holds the files."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / revision
    if isinstance(files, Path):
        shutil.copytree(files, snapshot)
    else:
        snapshot.mkdir(parents=True)
        for name, text in files.items():
            (snapshot / name).write_text(text)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    return snapshot


def said(e: pytest.ExceptionInfo) -> tuple[str, str]:
    return e.value.say("en"), e.value.say("ko")


def test_the_cache_offers_its_clip_and_siglip_models_only(tmp_path, judge):
    cache = tmp_path / "hub"
    assert local_judges(cache) == []  # no cache at all: nothing, no error
    cache_repo(cache, "acme/tiny-clip", judge)
    cache_repo(cache, "acme/a-unet", {"config.json": json.dumps({"_class_name": "UNet2DConditionModel"})})
    siglip = cache_repo(cache, "acme/siglip-config-only", {"config.json": json.dumps({"model_type": "siglip"})})
    (siglip.parent.parent / "refs" / "main").write_text("gone")  # refs/main names a snapshot not there: the newest
    cache_repo(cache, "acme/siglip", {"config.json": json.dumps({"model_type": "siglip"}),
                                      "preprocessor_config.json": "{}", "model.safetensors": ""})
    (cache / "models--broken").mkdir()  # no snapshots
    (cache / "datasets--acme--pictures").mkdir()
    # the config-only download (no weights, no processor) and the UNet are not judges
    assert local_judges(cache) == ["acme/siglip", "acme/tiny-clip"]


def test_a_judge_folder_passes_and_every_wrong_one_says_what_to_do(tmp_path, judge):
    check_judge("")
    check_judge(str(judge))
    with pytest.raises(UserError) as e:
        check_judge(str(tmp_path / "no-such-model"))
    en, ko = said(e)
    assert "no-such-model" in en and "no such folder" in en and "no-such-model" in ko
    for odd in ("a" * 5000, "bad\0name", "~no-such-user-here/clip"):  # not a path here: one message, no traceback
        with pytest.raises(UserError, match="no such folder"):
            check_judge(odd)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UserError, match=r"no readable config\.json"):
        check_judge(str(empty))
    unet = tmp_path / "unet"
    unet.mkdir()
    (unet / "config.json").write_text(json.dumps({"_class_name": "UNet2DConditionModel"}))
    with pytest.raises(UserError) as e:
        check_judge(str(unet))
    en, ko = said(e)
    assert "UNet2DConditionModel, not a CLIP or SigLIP model" in en and "UNet2DConditionModel" in ko
    no_processor = tmp_path / "no-processor"
    shutil.copytree(judge, no_processor)
    (no_processor / "processor_config.json").unlink()
    with pytest.raises(UserError, match="no processor config"):
        check_judge(str(no_processor))
    no_weights = tmp_path / "no-weights"
    shutil.copytree(judge, no_weights)
    (no_weights / "model.safetensors").unlink()
    with pytest.raises(UserError, match="no weights"):
        check_judge(str(no_weights))


def test_a_hub_id_passes_from_the_cache_or_online_and_offline_without_it_is_a_message(tmp_path, judge, monkeypatch):
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    cache_repo(cache, "acme/tiny-clip", judge)
    cache_repo(cache, "acme/a-unet", {"config.json": json.dumps({"_class_name": "UNet2DConditionModel"})})
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    check_judge("acme/tiny-clip", cache)
    with pytest.raises(UserError, match="UNet2DConditionModel, not a CLIP"):
        check_judge("acme/a-unet", cache)
    with pytest.raises(UserError) as e:
        check_judge("openai/clip-vit-base-patch32", cache)
    en, ko = said(e)
    assert "not on this computer" in en and "HF_HUB_OFFLINE" in ko
    with pytest.raises(UserError, match="no such folder, and not a hub id"):
        check_judge("my judge", cache)  # neither a folder nor a valid hub id
    # online, a hub id the cache lacks is fetched when it is first read: nothing to say before the run
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE")
    check_judge("openai/clip-vit-base-patch32", cache)


def test_while_shared_the_judge_is_a_folder_in_the_workspace(tmp_path, judge, monkeypatch):
    from huggingface_hub import constants

    from ui.widgets import judge_choices

    ws = tmp_path / "ws"
    (ws / "models").mkdir(parents=True)
    shutil.copytree(judge, ws / "models" / "clip")
    shared, local = PathPolicy(ws, restricted=True), PathPolicy(ws, restricted=False)
    assert shared.check_judge("") == local.check_judge("  ") == ""
    assert shared.check_judge("models/clip") == str((ws / "models" / "clip").resolve())
    with pytest.raises(UserError, match="outside the workspace"):
        shared.check_judge(str(judge))
    assert local.check_judge(str(judge)) == str(judge.resolve())
    with pytest.raises(UserError, match="is a hub id"):
        shared.check_judge("acme/tiny-clip")
    with pytest.raises(UserError, match="허브 id"):
        shared.check_judge("acme/tiny-clip", "ko")
    # offered: none, then the cache's judges on one's own machine; none of the cache's while shared
    cache = tmp_path / "hub"
    cache_repo(cache, "acme/tiny-clip", judge)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    offered = judge_choices(SimpleNamespace(ctx=SimpleNamespace(policy=local)), "en")
    assert offered[0][1] == "" and offered[1:] == [("acme/tiny-clip", "acme/tiny-clip")]
    assert [v for _, v in judge_choices(SimpleNamespace(ctx=SimpleNamespace(policy=shared)), "ko")] == [""]


def test_a_run_with_a_wrong_judge_stops_before_its_folder_is_made(tmp_path):
    from tests.helpers import tiny_config, write_toy_dataset
    from trainer.train.loop import run_training

    data = write_toy_dataset(tmp_path / "data", n=2)
    cfg = tiny_config(data, tmp_path / "runs", {"measure.judge": str(tmp_path / "no-such-model")})
    with pytest.raises(UserError, match=r"measure\.judge"):
        run_training(cfg)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_judge_chosen_after_training_reads_the_run_and_can_be_taken_back(tmp_path, judge):
    from tests.test_review import _world, fake_run
    from tests.test_verdict import _character
    from trainer.cli import main
    from trainer.doctor import pictures
    from trainer.doctor.judge_files import RUN_JUDGE, choose_judge, chosen_judge

    data = tmp_path / "data" / "1_mine"
    data.mkdir(parents=True)
    for i in range(3):
        _character().save(data / f"{i}.png")
    run = fake_run(tmp_path, [10, 20], lambda step, kind: _character() if step == 20 and kind != "no_trigger" else _world())
    assert {r["judge"] for r in pictures.measure_steps(run)} == {None}  # trained without one
    with pytest.raises(UserError, match="no such folder"):
        choose_judge(run, str(tmp_path / "no-such-model"))
    assert chosen_judge(run) == "" and not (run / RUN_JUDGE).exists()  # a wrong one changes nothing
    choose_judge(run, str(judge))
    rows = {r["step"]: r for r in pictures.measure_steps(run)}  # read again: the chosen file keys the cache
    assert {r["judge"] for r in rows.values()} == {"clip"} and rows[20]["likeness"] > rows[10]["likeness"]
    assert chosen_judge(run) == str(judge)
    choose_judge(run, "")
    assert {r["judge"] for r in pictures.measure_steps(run)} == {None} and not (run / RUN_JUDGE).exists()
    # the CLI: diagnose --judge chooses it (and diagnoses with it); a folder that is not a run is one message
    assert main(["diagnose", str(run), "--judge", str(judge), "--json"]) == 0
    assert chosen_judge(run) == str(judge)
    assert main(["diagnose", str(tmp_path / "data"), "--judge", str(judge)]) == 2
    assert not (tmp_path / "data" / RUN_JUDGE).exists()


def test_a_judge_whose_model_does_not_load_is_said_and_the_run_is_read_without_it(tmp_path, judge):
    """Files that pass the check (config, processor, weights) but a model that does not load (a download cut
    short): the pictures are measured without a judge, the diagnosis says which and what to do, and a judge
    chosen after training that does not load is not kept."""
    from tests.test_review import _world, fake_run
    from tests.test_verdict import _character, _set_config
    from trainer.cli import main
    from trainer.doctor import pictures
    from trainer.doctor.clip_judge import load_judge
    from trainer.doctor.diagnose import diagnose
    from trainer.doctor.judge_files import chosen_judge

    broken = tmp_path / "cut-short"
    shutil.copytree(judge, broken)
    for weights in broken.glob("*.safetensors"):
        weights.write_bytes(weights.read_bytes()[:64])  # what a download cut short leaves
    check_judge(str(broken))  # the check before a run cannot tell: the files are there
    with pytest.raises(UserError) as e:
        load_judge(str(broken))
    assert str(broken) in said(e)[0] and "could not be loaded" in said(e)[0] and "불러오지 못했습니다" in said(e)[1]

    data = tmp_path / "data" / "1_mine"
    data.mkdir(parents=True)
    for i in range(3):
        _character().save(data / f"{i}.png")
    run = fake_run(tmp_path, [10, 20], lambda step, kind: _character() if step == 20 and kind != "no_trigger" else _world())
    _set_config(run, measure={"judge": str(broken)})  # trained with it
    rows = pictures.measure_steps(run)  # no traceback: measured as without a judge
    assert rows and {r["judge"] for r in rows} == {None} and all(r["leakage"] is not None for r in rows)
    result = diagnose(run)
    (finding,) = [f for f in result["observed"] if f["signal"] == "judge_unreadable"]
    assert str(broken) in finding["message"]["en"] and "without its readings" in finding["message"]["en"]
    assert "그림 판정 모델이 그림을 읽지 못해" in finding["message"]["ko"]
    assert "judge_files_unusable" in [c["id"] for c in result["causes"]]  # beside what the verdict says (a low dose)
    (reload,) = [p for p in result["prescriptions"] if p["id"] == "reload_judge"]
    assert "Read with the picture judge" in reload["detail"]["en"] and "그림 판정 모델로 읽기" in reload["detail"]["ko"]

    # chosen after training: a judge that loads is kept; one that does not is a message and the kept one stays
    _set_config(run, measure={"judge": ""})
    pictures.read_with_judge(run, str(judge))
    with pytest.raises(UserError) as e:
        pictures.read_with_judge(run, str(broken))
    assert str(broken) in said(e)[0] and "It was not kept" in said(e)[0] and chosen_judge(run) == str(judge)
    assert {r["judge"] for r in pictures.measure_steps(run)} == {"clip"}
    assert main(["diagnose", str(run), "--judge", str(broken)]) == 2 and chosen_judge(run) == str(judge)


def test_a_judge_that_fails_while_reading_is_named_and_the_pictures_are_measured_without_it(tmp_path, monkeypatch):
    from tests.test_review import _world, fake_run
    from trainer.doctor import judges, pictures
    from trainer.doctor.registry import RunInputs, collect
    from trainer.run.contents import load_run_config

    def reads_then_fails(config, base_pictures):
        def read(p):
            raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")
        return read

    run = fake_run(tmp_path, [10, 20], lambda step, kind: _world())
    monkeypatch.setitem(judges._JUDGES, "shaky", judges.PictureJudge("shaky", reads_then_fails))
    pictures._measured.cache_clear()
    rows = pictures.measure_steps(run)
    assert [r["step"] for r in rows] == [10, 20] and {r["judge"] for r in rows} == {None}
    assert all(r["leakage"] is not None and r["likeness"] is None for r in rows)
    problem = words.say(pictures.judge_problem(run), "en")
    assert "shaky" in problem and "RuntimeError: mat1 and mat2" in problem and "failed while reading" in problem
    assert "읽다가 실패" in words.say(pictures.judge_problem(run), "ko")
    found = collect(RunInputs(load_run_config(run), run_dir=run), "pictures")
    assert [f.signal for f in found] == ["judge_unreadable"]
    judge, read, _ = pictures.run_judge(run)  # what More pictures reads a larger draw with: a message, not a traceback
    assert judge.name == "shaky"
    with pytest.raises(UserError, match="shaky: the picture judge failed while reading"):
        read(judges.SamplePicture({"kind": "trigger"}, np.zeros((8, 8, 3), np.uint8), np.zeros((8, 8, 3), np.uint8)))
    monkeypatch.delitem(judges._JUDGES, "shaky")
    pictures._measured.cache_clear()
    assert pictures.judge_problem(run) is None
