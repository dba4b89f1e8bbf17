"""Validation loss: held-out pictures at fixed timesteps and noise give one comparable number per evaluation."""

from __future__ import annotations

import pytest
import torch
from helpers import tiny_config, write_toy_dataset

from trainer.data.batches import samples_from_report
from trainer.data.holdout import split_holdout
from trainer.data.scan import scan_dataset
from trainer.doctor.held_out import best_so_far
from trainer.errors import UserError
from trainer.plan.steps import make_plan
from trainer.train.validation import build_validation_set, fixed_timesteps, validation_loss


def test_fixed_timesteps_spread_over_the_schedule():
    assert fixed_timesteps(5, 1000) == [100, 300, 500, 700, 900]
    assert fixed_timesteps(1, 1000) == [500]


def test_held_out_pictures_leave_the_plan_and_are_the_same_every_time(tmp_path):
    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=8), tmp_path / "runs")
    report = scan_dataset(cfg.dataset)
    train, held = split_holdout(report, 2, seed=7)
    assert len(held) == 2 and train.images == 6 and train.image_repeats == 6 * 10  # the toy folder is 10_zxc toy
    assert {it.rel for it in held}.isdisjoint(it.rel for it in train.items)
    assert sum(b["images"] for b in train.buckets) == 6
    assert [it.rel for it in split_holdout(scan_dataset(cfg.dataset), 2, seed=7)[1]] == [it.rel for it in held]
    plan, full = make_plan(cfg, train), make_plan(cfg, report)
    assert (plan.images, plan.image_repeats, plan.batches_per_epoch) == (6, 60, 30) and full.batches_per_epoch == 40
    assert split_holdout(report, 0, seed=7) == (report, [])
    with pytest.raises(UserError, match=r"validation\.holdout"):
        split_holdout(report, 8, seed=7)


def test_best_so_far_is_the_lowest_validation_loss():
    rows = [{"step": 1, "loss": 0.3}, {"step": 2, "val_loss": 0.2}, {"step": 4, "val_loss": 0.15},
            {"step": 6, "val_loss": 0.18}, {"step": 7, "val_loss": float("nan")}]
    assert best_so_far(rows) == {"step": 4, "val_loss": 0.15}
    assert best_so_far([{"step": 1}]) is None


@pytest.mark.slow
def test_same_weights_same_number_and_it_moves_when_the_weights_move(tmp_path):
    from trainer.run.events import MemorySink
    from trainer.train.commands import Commands
    from trainer.train.distributed import Dist
    from trainer.train.loop import Hooks, Trainer

    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=6), tmp_path / "runs")
    t = Trainer(cfg, MemorySink(), Commands(), Dist(), Hooks())
    t.prepare_run_folder(resume=None, parent=None)
    t.setup()
    _, held = split_holdout(scan_dataset(cfg.dataset), 2, seed=cfg.train.seed)
    from trainer.data.batches import LatentCache

    encoder = LatentCache(t.models.pipe.vae, t.models.device, t.models.precision.vae_dtype, None)
    vset = build_validation_set(samples_from_report(type("R", (), {"items": held})()), encoder,
                                fixed_timesteps(4, t.models.schedule.num_timesteps), 0, t.models.device)
    modules = list(t.models.lora.models.values())

    def value() -> float:
        return validation_loss(vset, t.models.adapter, t.models.denoiser, t.models.text, t.models.schedule, t.models.precision, modules)

    t.models.denoiser.train()
    rng = torch.get_rng_state()
    first = value()
    assert torch.equal(rng, torch.get_rng_state())  # the training's random stream is untouched
    assert t.models.denoiser.training  # and its mode restored
    assert value() == first  # the same weights give the very same number
    lora_param = next(p for n, p in t.models.denoiser.named_parameters() if "lora_B" in n)
    with torch.no_grad():
        lora_param.add_(0.05)
    moved = value()
    assert moved != first and abs(moved - first) > 1e-6
    with torch.no_grad():
        lora_param.sub_(0.05)
    assert value() == pytest.approx(first, abs=1e-7)


@pytest.mark.slow
def test_a_run_scores_its_held_out_pictures_at_each_save_and_review_reads_them(tmp_path):
    import json

    from trainer.doctor.verdict import checkpoint_verdicts
    from trainer.io import read_jsonl
    from trainer.run.events import MemorySink
    from trainer.train.loop import run_training

    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=6), tmp_path / "runs",
                      {"validation.holdout": 2, "save.every_steps": 3, "train.max_steps": 6})
    result = run_training(cfg, MemorySink())
    assert result.status == "finished"
    plan = json.loads((result.run_dir / "plan.json").read_text())
    assert (plan["images"], plan["held_out"]) == (4, 2)
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    scored = {r["step"]: r["val_loss"] for r in rows if r.get("val_loss") is not None}
    assert set(scored) == {3, 6} and all(0 < v < 10 for v in scored.values())
    # Review's per-checkpoint measures carry the number of that save
    by_step = {cv.step: cv.measures for cv in checkpoint_verdicts(result.run_dir)}
    assert by_step[3]["val_loss"] == pytest.approx(scored[3])
    # and the Review step's measures table shows it, the lowest starred
    from ui.steps.review import measures_table

    table = measures_table(result.run_dir, "en").value
    assert table["headers"][-1] == "validation loss (★ lowest)"
    shown = {row[0]: row[-1] for row in table["data"]}
    best = min(scored, key=scored.get)
    assert shown[best].endswith("★") and shown[best].startswith(f"{scored[best]:.3g}")


def test_a_validation_loss_that_turns_up_points_to_overfitting_and_steers_the_pick():
    import words
    from trainer.doctor.evidence import decide
    from trainer.doctor.held_out import lowest_validation, validation_observation
    from trainer.doctor.verdict import CheckpointVerdict

    values = {100: 0.30, 200: 0.21, 300: 0.20, 400: 0.26}
    assert validation_observation(100, values) is None  # nothing earlier to compare with, far from the lowest
    rising = validation_observation(400, values)
    assert rising is not None and rising.points_to == "over"
    assert rising.text.values["best_step"] == 300
    # still falling: the lowest, and a save near it, say so in lines that point nowhere and never move a verdict
    lowest, near = validation_observation(300, values), validation_observation(200, values)
    assert (lowest.points_to, near.points_to) == (None, None)
    assert words.say(near.line(), "en") == ("validation loss 0.2100, within 5% of the lowest (0.2000 at step 300)"
                                            " (weak evidence)")
    assert decide([near, rising]) == "over" and decide([near]) == decide([]) == "fit"
    assert not words.say(near.line(), "en").startswith("outweighed")
    assert validation_observation(300, {300: 0.2}) is None  # one number compares with nothing

    def cv(step, val):
        return CheckpointVerdict(step, "fit", [], 1.0, {"val_loss": val} if val is not None else {}, ())

    fits = [cv(200, 0.21), cv(300, 0.20), cv(400, 0.26)]
    assert [c.step for c in lowest_validation(fits)] == [200, 300]  # within 5 % of the lowest
    assert lowest_validation([cv(200, 0.21), cv(300, None)]) == [cv(200, 0.21), cv(300, None)]


def test_the_live_loss_chart_draws_the_validation_loss_and_stars_its_lowest():
    from trainer.run.events import StepRow
    from ui.plots import changes_shape, live_carry, loss_figure

    rows = [StepRow(step=s, loss=0.3 - s / 100, grad_norm=1.0) for s in range(1, 7)]
    rows[2].val_loss, rows[5].val_loss = 0.21, 0.24
    fig = loss_figure(rows, "en")
    val = next(tr for tr in fig["data"] if tr["name"] == "Validation loss")
    assert (val["x"], val["y"]) == ([3, 6], [0.21, 0.24])
    star = next(tr for tr in fig["data"] if tr["name"] == "lowest validation loss")
    assert (star["x"], star["y"]) == ([3], [0.21])
    assert "검증 손실" in {tr["name"] for tr in loss_figure(rows, "ko")["data"]}
    assert not any(tr["name"] == "Validation loss" for tr in loss_figure(rows[:2], "en")["data"])
    # a row with a validation point makes the page take whole figures (the point is not a line's next point)
    assert changes_shape([rows[5]], live_carry(rows[:5])) and not changes_shape([rows[4]], live_carry(rows[:4]))


@pytest.mark.slow
def test_fp16_with_loss_scaling_scores_what_fp32_scores_on_the_same_weights(tmp_path):
    """A GPU without bf16 trains in fp16 with a loss scaler: the held-out pictures are scored under fp16 autocast
    (no scaler: nothing is backpropagated), overflowed steps are skipped and scored where they land, and the
    number agrees with an fp32 scoring of the same final weights."""
    from helpers import Overflow

    from trainer.io import read_jsonl
    from trainer.run.events import MemorySink
    from trainer.train.commands import Commands
    from trainer.train.distributed import Dist
    from trainer.train.loop import Hooks, Trainer, run_training

    data = write_toy_dataset(tmp_path / "data", n=6)
    cfg = tiny_config(data, tmp_path / "runs", {"train.precision": "fp16", "validation.holdout": 2,
                                                 "save.every_steps": 2, "train.max_steps": 4})
    class Keep(Overflow):
        def after_step(self, trainer):
            self.final = trainer.models.lora.state_dicts()  # after the last step: the weights scored at step 4

    hooks = Keep((2,))  # the second backward pass overflows
    result = run_training(cfg, MemorySink(), hooks=hooks)
    assert result.status == "finished", result.message
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    assert any(r["skipped"] for r in rows)
    scored = {r["step"]: r["val_loss"] for r in rows if r.get("val_loss") is not None}
    assert sorted(scored) == [2, 4] and all(0 < v < 10 for v in scored.values())

    fp32 = cfg.model_copy(deep=True)
    fp32.train.precision = "fp32"
    fp32.save.output_dir = str(tmp_path / "check")
    t = Trainer(fp32, MemorySink(), Commands(), Dist(), Hooks())
    t.prepare_run_folder(resume=None, parent=None)
    t.setup()
    untrained = t.validator.loss()
    t.models.lora.load_state_dicts(hooks.final)
    scored_fp32 = t.validator.loss()
    # fp16's rounding moves the number by less than a tenth of what four steps of training moved it (measured:
    # 1.196326 untrained, 1.192940 in fp32, 1.192940 in fp16)
    assert abs(scored_fp32 - scored[4]) < abs(scored_fp32 - untrained) / 10


def test_the_train_step_names_the_lowest_validation_loss_so_far():
    from trainer.run.events import StepRow
    from trainer.train.runner import Runner
    from ui.live import status_line

    runner = Runner()
    for step, val in [(1, None), (2, 0.2), (3, None), (4, 0.15), (6, 0.18), (7, float("nan"))]:
        runner._on_event(StepRow(step=step, loss=0.1, skipped=False, sec_per_step=0.5, val_loss=val))
        if step == 2:
            assert runner.snapshot().best_val == {"step": 2, "val_loss": 0.2}
    snap = runner.snapshot(rows_from=6)  # a poller holding every row still gets the best of them all
    assert snap.best_val == {"step": 4, "val_loss": 0.15}
    assert "lowest validation loss 0.15 at step 4" in status_line(snap, "en")
    assert "가장 낮은 검증 손실 0.15 (4 스텝)" in status_line(snap, "ko")
    assert Runner().snapshot().best_val is None and "validation" not in status_line(Runner().snapshot(), "en")


def test_the_terminal_prints_each_validation_loss_beside_the_lowest_so_far(capsys):
    from trainer.run.events import StepRow
    from trainer.train.console import ConsoleSink

    sink = ConsoleSink(quiet=True)
    for step, val in [(1, None), (2, 0.2), (4, 0.15), (6, 0.18)]:
        sink(StepRow(step=step, loss=0.1, lr=1e-4, skipped=False, val_loss=val))
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["validation loss: 0.2 at step 2 (lowest so far 0.2 at step 2)",
                     "validation loss: 0.15 at step 4 (lowest so far 0.15 at step 4)",
                     "validation loss: 0.18 at step 6 (lowest so far 0.15 at step 4)"]


def test_the_plan_says_when_the_held_out_pictures_are_scored(tmp_path):
    from ui.steps.plan import render_plan

    data = write_toy_dataset(tmp_path / "data", n=6)
    base = {"save.every_steps": 3, "train.max_steps": 10, "sample.enabled": True, "sample.every_steps": 5}

    def plan(**over):
        cfg = tiny_config(data, tmp_path / "runs", {**base, **over})
        return make_plan(cfg, split_holdout(scan_dataset(cfg.dataset), cfg.validation.holdout, 0)[0])

    at_saves = plan(**{"validation.holdout": 2})
    assert at_saves.validation_steps() == [3, 5, 6, 9, 10]  # every save and sample point, and the end
    assert [s for s in range(0, 11) if at_saves.validates_at(s)] == at_saves.validation_steps()
    assert plan(**{"validation.holdout": 2, "validation.every_steps": 4}).validation_steps() == [4, 8, 10]
    assert plan().validation_steps() == [] and not plan().validates_at(10)
    assert at_saves.to_json()["validation_steps"] == [3, 5, 6, 9, 10]
    assert "Validation loss on the held-out pictures at steps 3, 5, 6, 9, 10." in render_plan(at_saves, "en")["plan_formula"]
    assert "Validation loss" not in render_plan(plan(), "en")["plan_formula"]


def test_a_wrong_validation_folder_is_refused_before_any_run_folder_or_model(tmp_path):
    from trainer.run.events import MemorySink
    from trainer.train.loop import run_training

    data = write_toy_dataset(tmp_path / "data", n=4)
    (tmp_path / "empty").mkdir()
    for folder, said in [(tmp_path / "nope", "validation folder not found"),
                         (tmp_path / "empty", "no images")]:
        cfg = tiny_config(data, tmp_path / "runs", {"validation.path": str(folder)})
        with pytest.raises(UserError) as refused:
            run_training(cfg, MemorySink())
        assert said in str(refused.value) and "validation.path" in str(refused.value)
        assert "validation.path" in refused.value.say("ko") and "그림" in refused.value.say("ko")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("config.toml"))
