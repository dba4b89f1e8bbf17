"""trainer.review.grid: the checkpoint × prompt grid, leakage per step, the recommended checkpoint, the strength sweep."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import words
from trainer.config.schema import from_dict
from trainer.demo import character_scene, demo_sample_prompts, render_scene, write_character_dataset
from trainer.demo.world import Scene
from trainer.doctor import pictures
from trainer.errors import UserError
from trainer.io import atomic_write_json, atomic_write_text
from trainer.picture_measures import leakage_scores
from trainer.review import grid as review
from trainer.review import strength
from trainer.run import contents
from trainer.run.samples import expand_prompts

KINDS = ["trigger", "trigger_unseen", "trigger_outfit", "no_trigger"]


def _world(size: int = 64) -> Image.Image:
    return render_scene(Scene("circle", "red", "grass", "left", "small"), size)


def _burnt(img: Image.Image) -> Image.Image:
    a = np.asarray(img).astype(np.float32)
    a = np.clip((a - 128) * 3 + 128, 0, 255)
    rng = np.random.default_rng(0)
    a = np.clip(a + rng.normal(0, 40, a.shape), 0, 255)
    return Image.fromarray(a.astype(np.uint8))


def fake_run(
    root: Path,
    steps: list[int],
    picture: Callable[[int, str], Image.Image],
    *,
    dataset: Path | None = None,
    lr: float = 1e-3,
    fit: tuple[float, float] = (0.05, 0.3),
    total: int | None = None,
    seeds: int = 1,
) -> Path:
    """A run folder as the loop writes it: config, metrics (lr per step), checkpoints and samples at ``steps``
    (step 0 samples only), the demo's four prompts; ``seeds`` pictures per prompt, ``picture(step, kind, k)`` for
    the k-th when there are several."""
    run = root / "runs" / "lora" / "20250101-000000"
    run.mkdir(parents=True)
    cfg = from_dict({
        "dataset": {"path": str(dataset or root / "data"), "trigger": "zxc", "resolution": 64},
        "lora": {"rank": 8, "alpha": 8.0}, "optim": {"lr": lr},
        "dose": {"fit_low": fit[0], "fit_high": fit[1]},
        "sample": {"prompts": demo_sample_prompts()},
    })
    atomic_write_text(run / "config.toml", cfg.to_toml())
    last = total or max(steps)
    rows = [{"step": s, "loss": 0.1, "lr": lr, "skipped": False} for s in range(1, last + 1)]
    atomic_write_text(run / "metrics.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    prompts = expand_prompts(cfg.sample.prompts, "zxc")
    for step in [0, *steps]:
        folder = run / "samples" / f"step-{step:06d}"
        folder.mkdir(parents=True)
        records = []
        for p in prompts:
            for k in range(seeds):
                name = f"{p['index']:02d}_{p['kind']}" + (f"_s{k}" if k else "") + ".png"
                (picture(step, p["kind"], k) if seeds > 1 else picture(step, p["kind"])).save(folder / name)
                records.append({**p, "file": name, "weights": "live", "seed": 1 + k, "step": step})
        atomic_write_json(folder / "manifest.json", {"step": step, "size": [64, 64], "samples": records})
        if step:
            ck = run / "checkpoints" / f"step-{step:06d}"
            ck.mkdir(parents=True)
            (ck / "lora.safetensors").write_bytes(b"x")
    (run / "final").mkdir()
    (run / "final" / "lora.safetensors").write_bytes(b"x")
    return run


def test_grid_has_the_four_kinds_as_columns_and_steps_as_rows(tmp_path):
    run = fake_run(tmp_path, [10, 20], lambda step, kind: _world())
    grid = review.review_grid(run)
    assert grid["steps"] == [0, 10, 20]
    assert grid["kinds"] == KINDS
    assert len(grid["cells"]) == 12
    assert Path(grid["cells"][(10, "no_trigger")]).name == "03_no_trigger.png"
    assert grid["prompts"]["trigger"] == "zxc"


def test_several_seeds_per_prompt_are_each_compared_with_their_own_step_0_and_averaged(tmp_path):
    """Two pictures per prompt: the no-trigger picture of seed 2 shows the character at step 20, seed 1's does
    not; leakage is their mean, and each is compared with step 0's picture of its own seed (the two seeds' step-0
    pictures differ, so pairing a picture with the other seed's would read as leakage at step 10)."""
    scenes = [Scene("circle", "red", "grass", "left", "small"), Scene("square", "blue", "sky", "center", "large")]

    def picture(step: int, kind: str, k: int) -> Image.Image:
        if kind == "no_trigger" and step == 20 and k == 1:
            return render_scene(character_scene("grass"), 64)
        return render_scene(scenes[k], 64)

    run = fake_run(tmp_path, [10, 20], picture, seeds=2)
    rows = {r["step"]: r for r in pictures.measure_steps(run)}
    one_seed = fake_run(tmp_path / "one", [10, 20], lambda step, kind: render_scene(
        character_scene("grass") if kind == "no_trigger" and step == 20 else scenes[1], 64))
    alone = {r["step"]: r["leakage"] for r in pictures.measure_steps(one_seed)}
    assert rows[10]["leakage"] == 0.0
    assert rows[20]["leakage"] == pytest.approx(alone[20] / 2)  # seed 1 clean, seed 2 as leaky as alone
    grid = review.review_grid(run)
    assert grid["kinds"] == KINDS  # two pictures of one prompt are one column, not two
    assert [Path(f).name for f in grid["files"][(20, "no_trigger")]] == ["03_no_trigger.png", "03_no_trigger_s1.png"]
    assert Path(grid["cells"][(20, "no_trigger")]).name == "03_no_trigger.png"


def test_checkpoint_files_list_steps_then_final_and_refuse_files_outside_the_run(tmp_path):
    run = fake_run(tmp_path, [10, 20], lambda step, kind: _world())
    labels = [c["label"] for c in contents.checkpoint_files(run)]
    assert labels == ["checkpoints/step-000010/lora.safetensors", "checkpoints/step-000020/lora.safetensors",
                      "final/lora.safetensors"]
    assert contents.resolve_checkpoint(run, labels[0]) == (run / labels[0]).resolve()
    outside = tmp_path / "other.safetensors"
    outside.write_bytes(b"x")
    for bad in (str(outside), "../../../other.safetensors", "config.toml", "checkpoints/step-000099/lora.safetensors"):
        with pytest.raises(UserError):
            contents.resolve_checkpoint(run, bad)


def _character_shows_up_at_step_20(step: int, kind: str) -> Image.Image:
    if kind == "no_trigger" and step == 20:
        return render_scene(character_scene("grass"), 64)  # the character shows up without its trigger
    return _world()


def test_leakage_grows_when_the_no_trigger_picture_drifts(tmp_path):
    write_character_dataset(tmp_path / "data", n_images=4)  # the demo run: its measures see the character
    run = fake_run(tmp_path, [10, 20], _character_shows_up_at_step_20, dataset=tmp_path / "data")
    rows = {r["step"]: r["leakage"] for r in pictures.leakage_by_step(run)}
    assert rows[10] < 0.05
    assert rows[20] > pictures.LEAKAGE_LIMIT


def test_a_users_run_judges_leakage_by_pixel_drift_not_by_the_demo_characters_look(tmp_path):
    """The demo's measures look for its magenta, yellow-striped character; on a user's run a picture like it is
    only as leaky as its pixels are far from step 0's, in Review and in the live findings alike."""
    run = fake_run(tmp_path, [10, 20], _character_shows_up_at_step_20)
    row = {r["step"]: r for r in pictures.leakage_by_step(run)}[20]
    drift = leakage_scores(render_scene(character_scene("grass"), 64), _world())["drift"]
    assert row["leakage"] == pytest.approx(drift) and row["drift"] == pytest.approx(drift)
    assert row["leakage"] < pictures.LEAKAGE_LIMIT
    assert "leakage" not in {f.signal for f in pictures.sample_findings(run / "samples")}
    write_character_dataset(tmp_path / "demo" / "data", n_images=4)
    demo = fake_run(tmp_path / "demo", [10, 20], _character_shows_up_at_step_20, dataset=tmp_path / "demo" / "data")
    assert "leakage" in {f.signal for f in pictures.sample_findings(demo / "samples")}


def test_recommendation_on_the_demo_character_skips_the_burnt_last_save(tmp_path):
    write_character_dataset(tmp_path / "data", n_images=4)

    def picture(step: int, kind: str) -> Image.Image:
        if kind == "no_trigger" or step == 0:
            return _world()
        if step == 10:  # not there yet
            return _world()
        img = render_scene(character_scene("grass"), 64)
        return _burnt(img) if step == 40 else img

    run = fake_run(tmp_path, [10, 20, 30, 40], picture, dataset=tmp_path / "data")
    measured = {r["step"]: r for r in pictures.measure_steps(run)}
    assert measured[10]["likeness"] < 0.3 < measured[20]["likeness"]
    assert measured[40]["burn"] > pictures.BURN_LIMIT
    rec = review.recommend_checkpoint(run)
    assert rec["step"] in (20, 30)
    assert rec["label"] == f"checkpoints/step-{rec['step']:06d}/lora.safetensors"
    assert "likeness" in words.say(rec["reason"], "en") and "닮" in words.say(rec["reason"], "ko")


def test_likeness_is_ignored_when_the_base_already_looks_like_noise_full_of_magenta(tmp_path):
    write_character_dataset(tmp_path / "data", n_images=4)
    rng = np.random.default_rng(1)
    noise = Image.fromarray(rng.integers(0, 255, (64, 64, 3), dtype=np.uint8))
    run = fake_run(tmp_path, [10, 20], lambda step, kind: noise, dataset=tmp_path / "data")
    assert all(r["likeness"] is None for r in pictures.measure_steps(run))


@pytest.mark.parametrize(("lr", "expected_step"), [(1e-3, 40), (1e-5, 80)])
def test_recommendation_without_measures_follows_the_dose_zone(tmp_path, lr, expected_step):
    # dose at step s = lr × s × (alpha / rank = 1); zone 0.02–0.08 (middle 0.04): 1e-3 → step 40
    run = fake_run(tmp_path, [20, 40, 60, 80], lambda step, kind: _world(), lr=lr, fit=(0.02, 0.08))
    rec = review.recommend_checkpoint(run)
    assert rec["step"] == expected_step
    if lr == 1e-5:
        assert "under" in words.say(rec["reason"], "en")


def test_pixel_drift_raises_no_leakage_where_the_model_measured_the_prior_kept(tmp_path):
    """The no-trigger picture's pixels moved past the line at step 20, but the run's own model measured its prior
    drift there under the verdict's limit: the weaker reading of the same question warns of nothing. Past the
    limit, or with no model measure, it warns as before."""
    from trainer.doctor.verdict import DRIFT_LIMIT

    moved = render_scene(Scene("square", "blue", "sky", "center", "large"), 64)
    run = fake_run(tmp_path, [10, 20], lambda step, kind: moved if step == 20 and kind == "no_trigger" else _world())
    assert {r["step"]: r["leakage"] for r in pictures.leakage_by_step(run)}[20] > pictures.LEAKAGE_LIMIT
    assert "leakage" in {f.signal for f in pictures.sample_findings(run / "samples")}

    def measured(drift: float) -> None:
        subject = {"a.png": {"caption": [0.1], "bare": [0.1], "trigger": [0.1]}}
        rows = [{"step": s, "subject": subject, "base_samples": {"s.png": {"lora": [0.2], "base": [0.2],
                                                                             "move": [drift * 0.2 if s else 0.0]}}}
                for s in (0, 10, 20)]
        atomic_write_text(run / "measures.jsonl", "".join(json.dumps(r) + "\n" for r in rows))

    measured(0.5)
    assert "leakage" not in {f.signal for f in pictures.sample_findings(run / "samples")}
    measured(DRIFT_LIMIT + 0.5)
    assert "leakage" in {f.signal for f in pictures.sample_findings(run / "samples")}


def test_dose_recommendation_stops_before_leakage_starts(tmp_path):
    def picture(step: int, kind: str) -> Image.Image:
        if kind == "no_trigger" and step >= 40:
            return render_scene(character_scene("sand"), 64)
        return _world()

    run = fake_run(tmp_path, [20, 40, 60, 80], picture, lr=1e-3, fit=(0.02, 0.08))
    rec = review.recommend_checkpoint(run)
    assert rec["step"] == 20
    assert "step 40" in words.say(rec["reason"], "en")


def test_the_pictures_are_measured_once_until_a_file_changes(tmp_path, monkeypatch):
    run = fake_run(tmp_path, [10, 20], lambda step, kind: _world())
    calls = []
    real = pictures._measure_steps
    monkeypatch.setattr(pictures, "_measure_steps", lambda root: calls.append(root) or real(root))
    first = pictures.measure_steps(run)
    first[0]["leakage"] = "changed by a caller"  # callers get copies
    assert pictures.measure_steps(run) != first and len(calls) == 1
    no_trigger = run / "samples" / "step-000020" / "03_no_trigger.png"
    _burnt(_world()).save(no_trigger)
    assert pictures.measure_steps(run)[1]["leakage"] > pictures.LEAKAGE_LIMIT and len(calls) == 2


def test_a_folder_that_is_not_a_run_is_a_user_error(tmp_path):
    with pytest.raises(UserError):
        review.recommend_checkpoint(tmp_path)


@pytest.mark.slow
def test_strength_sweep_renders_every_strength_and_prompt_and_reuses_the_result(tmp_path):
    from tests.helpers import tiny_config, write_toy_dataset
    from trainer.run.events import MemorySink
    from trainer.train.loop import run_training

    data = write_toy_dataset(tmp_path / "data", n=4)
    cfg = tiny_config(data, tmp_path / "runs", {"train.max_steps": 3, "optim.lr": 5e-2, "sample.steps": 2})
    result = run_training(cfg, MemorySink())
    assert result.status == "finished", result.message
    calls: list[tuple[float, int, float | None]] = []
    records = strength.strength_sweep(result.run_dir, "final/lora.safetensors", (0.0, 1.2),
                                    progress=lambda done, total, at: calls.append((done, total, at)))
    assert [(r["strength"], r["kind"]) for r in records] == [(s, k) for s in (0.0, 1.2) for k in KINDS]
    assert calls[0] == (0, 8, None) and calls[-1] == (8, 8, 1.2)
    assert (4, 8, 0.0) in calls and any(0 < done < 4 for done, _, _ in calls)  # each denoising step counts
    assert [done for done, _, _ in calls] == sorted(done for done, _, _ in calls)
    first = records[0]["file"]
    assert Path(first).parent == result.run_dir / "review" / "final_lora"
    weak = np.asarray(Image.open(records[0]["file"]), dtype=np.float32)
    strong = np.asarray(Image.open(records[4]["file"]), dtype=np.float32)
    assert np.abs(weak - strong).max() > 0  # the strength changes the picture
    again = strength.strength_sweep(result.run_dir, "final/lora.safetensors", (0.0, 1.2))
    assert again == records


@pytest.mark.slow
def test_sweeps_share_one_loaded_base_and_draw_what_a_fresh_one_draws(tmp_path, monkeypatch):
    """The kept pipeline is loaded once for two checkpoints, and each sweep's pictures equal those of a sweep on
    a freshly loaded base (the first sweep's LoRA and trigger embedding came off again)."""
    import trainer.models.base
    from tests.helpers import tiny_config, write_toy_dataset
    from trainer.run.events import MemorySink
    from trainer.train.loop import run_training

    data = write_toy_dataset(tmp_path / "data", n=4)
    cfg = tiny_config(data, tmp_path / "runs", {"train.max_steps": 4, "save.every_steps": 2, "optim.lr": 5e-2,
                                                "sample.steps": 2, "lora.trigger_embedding": True})
    result = run_training(cfg, MemorySink())
    assert result.status == "finished", result.message
    loads = []
    real_load = trainer.models.base.load_pipeline
    monkeypatch.setattr(trainer.models.base, "load_pipeline", lambda *a, **k: loads.append(1) or real_load(*a, **k))
    kept = strength.SweepPipelines()
    shared = {c: strength.strength_sweep(result.run_dir, c, (0.5, 1.0), pipelines=kept)
              for c in ("checkpoints/step-000002/lora.safetensors", "checkpoints/step-000004/lora.safetensors")}
    assert len(loads) == 1
    for ckpt, records in shared.items():
        kept_pictures = [np.asarray(Image.open(r["file"])) for r in records]
        (Path(records[0]["file"]).parent / "manifest.json").unlink()  # not the cached result: draw again
        fresh = strength.strength_sweep(result.run_dir, ckpt, (0.5, 1.0))
        assert all(np.array_equal(a, np.asarray(Image.open(r["file"]))) for a, r in zip(kept_pictures, fresh)), ckpt
    assert len(loads) == 3
    kept.release()
    strength.strength_sweep(result.run_dir, "final/lora.safetensors", (1.0,), pipelines=kept)
    assert len(loads) == 4


@pytest.mark.slow
def test_more_pictures_of_a_save_start_with_the_runs_own_seeds_and_a_judge_reads_them_all(tmp_path, monkeypatch):
    """Review's "more pictures of this save": every sample prompt at more seeds, the run's own first (the same
    pictures the run drew at that save), kept on disk for the next ask; a judge that applies to the run reads all of
    them against the base model's pictures of the same prompts and seeds."""
    from tests.helpers import tiny_config, write_toy_dataset
    from trainer.doctor import judges
    from trainer.review import more
    from trainer.run.events import MemorySink
    from trainer.train.loop import run_training

    data = write_toy_dataset(tmp_path / "data", n=4)
    cfg = tiny_config(data, tmp_path / "runs", {"train.max_steps": 4, "save.every_steps": 2, "optim.lr": 5e-2,
                                                "sample.enabled": True, "sample.steps": 2,
                                                "sample.images_per_prompt": 2})
    result = run_training(cfg, MemorySink())
    assert result.status == "finished", result.message
    run = result.run_dir
    drawn = more.more_pictures(run, "checkpoints/step-000002/lora.safetensors", per_prompt=3)
    prompts = expand_prompts(cfg.sample.prompts, cfg.dataset.trigger)
    assert [(r["index"], r["seed"]) for r in drawn["samples"]] == [(p["index"], 1234 + k) for p in prompts
                                                                    for k in range(3)]
    assert drawn["judge"] is None and drawn["readings"] == {}  # no judge applies to a toy folder
    own = {(s["index"], s["seed"]): run / "samples" / "step-000002" / s["file"] for s in
           json.loads((run / "samples" / "step-000002" / "manifest.json").read_text())["samples"]}
    for r in drawn["samples"]:
        if (r["index"], r["seed"]) in own:  # the run's own seeds: the pictures the run drew at that save
            a, b = (np.asarray(Image.open(f), dtype=np.int16) for f in (r["file"], own[(r["index"], r["seed"])]))
            assert np.abs(a - b).max() <= 2, r
    assert len(own) == 2 * len(prompts)
    stamp = Path(drawn["samples"][0]["file"]).stat().st_mtime_ns
    assert more.more_pictures(run, "checkpoints/step-000002/lora.safetensors", per_prompt=3) == drawn
    assert Path(drawn["samples"][0]["file"]).stat().st_mtime_ns == stamp  # kept, not drawn again

    def brightness(config, base_pictures):
        assert base_pictures  # decided on the run's step-0 pictures
        return lambda p: {"likeness": float(p.image.mean() / 255), "leakage": float(abs(
            p.image.astype(float) - p.base_image.astype(float)).mean() / 255)}

    monkeypatch.setitem(judges._JUDGES, "brightness", judges.PictureJudge("brightness", brightness))
    judged = more.more_pictures(run, "final/lora.safetensors", per_prompt=3)
    assert judged["judge"] == "brightness"
    base = sorted((run / "review" / "base-more-3").glob("*.png"))
    assert len(base) == 3 * len(prompts)
    pics = [np.asarray(Image.open(r["file"]).convert("RGB"), dtype=np.float64) for r in judged["samples"]]
    refs = [np.asarray(Image.open(f).convert("RGB"), dtype=np.float64)
            for f in json.loads((run / "review" / "base-more-3" / "manifest.json").read_text())["files"]]
    assert judged["readings"]["likeness"] == pytest.approx(np.mean([p.mean() / 255 for p in pics]))
    assert judged["readings"]["leakage"] == pytest.approx(np.mean([np.abs(p - b).mean() / 255
                                                                   for p, b in zip(pics, refs)]))
    assert judged["readings"]["leakage"] > 0  # the LoRA moved the pictures from the base model's
    # the judge's reading of the larger draw stands for that save in the verdict, in place of the run's own few
    final_step = judged["step"]
    assert judged["weights"] == "live" and final_step == 4
    rows = {r["step"]: r for r in pictures.measure_steps(run)}
    assert rows[final_step]["likeness"] == pytest.approx(judged["readings"]["likeness"])
    assert rows[final_step]["judged_per_prompt"] == 3
    assert "judged_per_prompt" not in rows[2]  # drawn when no judge applied: its own samples' reading stays
    # asked again now that a judge applies (one chosen since): the same pictures, not drawn again, are read by it
    again = more.more_pictures(run, "checkpoints/step-000002/lora.safetensors", per_prompt=3)
    assert again["judge"] == "brightness" and again["readings"]["leakage"] > 0
    assert again["samples"] == drawn["samples"] and Path(drawn["samples"][0]["file"]).stat().st_mtime_ns == stamp
    assert {r["step"]: r for r in pictures.measure_steps(run)}[2]["judged_per_prompt"] == 3
    assert more.more_pictures(run, "checkpoints/step-000002/lora.safetensors", per_prompt=3) == again
    lora = run / "final" / "lora.safetensors"
    os.utime(lora, ns=(lora.stat().st_atime_ns, lora.stat().st_mtime_ns + 10**9))  # the save's file changed since
    assert "judged_per_prompt" not in {r["step"]: r for r in pictures.measure_steps(run)}[final_step]


def test_a_picture_cut_short_is_read_as_missing_and_the_grid_shows_the_rest(tmp_path):
    """A run folder copied while a picture was still arriving: the doctor reads the others (the diagnosis, not a
    bare "image file is truncated"), and Review's grid puts a grey tile where that one was."""
    from trainer.doctor.diagnose import diagnose
    from ui.steps.review import grid_html

    run = fake_run(tmp_path, [10, 20], lambda step, kind: _world())
    whole = pictures.measure_steps(run)
    step0 = sorted((run / "samples" / "step-000000").glob("*.png"))
    step20 = sorted((run / "samples" / "step-000020").glob("*.png"))
    for cut in (step0[0], step20[1]):
        cut.write_bytes(cut.read_bytes()[:100])
    rows = pictures.measure_steps(run)
    assert [r["step"] for r in rows] == [r["step"] for r in whole] == [10, 20]
    assert rows[0]["leakage"] is not None and rows[1]["leakage"] is not None
    assert diagnose(run, write=False)["verdict"]["label"] in ("under", "fit", "over", "broken")
    grid = review.review_grid(run)
    page = grid_html(grid, None, "en")
    assert page.count("<img") == len(grid["cells"])  # every cell drawn, the cut ones grey
