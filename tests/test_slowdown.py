"""The slowdown alarm: a step time that jumps several-fold and stays, named by what the rows measured beside it:
other programs taking the CPU (on any device), VRAM spilling into system memory (on CUDA), or the machine itself
(on a run without a GPU: never a GPU's memory)."""

from __future__ import annotations

import random

import pytest

import words
from tests.helpers import tiny_config, write_toy_dataset
from trainer.doctor.detectors import metric_findings, slowdown_finding
from trainer.doctor.kb import load_kb
from trainer.run.events import StepRow
from trainer.train.measures import CpuShare


def _rows(times, **extra):
    return [StepRow(step=i + 1, loss=0.1, grad_norm=0.5, sec_per_step=t, skipped=False, **extra)
            for i, t in enumerate(times)]


def _cpu_rows(times, slow_from, own, others, **extra):
    """Rows of a run on 2 cores whose CPU shares change where the steps slow down (``own``/``others``: before,
    after); ``extra`` as a CPU run writes it (no device memory)."""
    rows = _rows(times, **extra)
    for i, r in enumerate(rows):
        after = i >= slow_from
        r.cpu_self, r.cpu_others = own[after], others[after]
    return rows


CPU_RUN = {"device_mem_reserved": None, "device_mem_free": None}


def _noisy(n, mean, seed=0):
    rng = random.Random(seed)
    return [mean * rng.uniform(0.8, 1.25) for _ in range(n)]


def test_fires_on_a_recorded_spill_with_the_device_memory_beside_it():
    times = [2.0, 1.2, *_noisy(40, 0.5), *_noisy(30, 4.0, seed=1)]  # 0.5 s/step, then 4 s/step from step 43 on
    rows = _rows(times, device_mem_reserved=11.5 * 2**30, device_mem_free=0.1 * 2**30)
    f = slowdown_finding(rows)
    assert f is not None and f.signal == "step_slowdown" and f.level == "warning"
    assert f.values["from_step"] == 43 and 6 < f.values["factor"] < 10
    assert "11.50 GiB" in words.say(f.message, "en") and "0.10 GiB left free" in words.say(f.message, "en") and "GiB" in words.say(f.message, "ko")
    assert "step_slowdown" in [x.signal for x in metric_findings(rows, {}, tiny_config(".", "."))]


def test_its_prescription_names_the_cause_and_one_memory_change():
    kb = load_kb()
    top = kb.rank_causes({"step_slowdown": 0.6})[0].cause
    assert top.id == "vram_spill" and "shared system memory" in top.text("explanation")
    first = kb.prescriptions_for(top.id)[0]
    assert first.change.key == "train.gradient_checkpointing"
    assert "Sysmem Fallback" in kb.prescription("sysmem_fallback_off").text("detail")


@pytest.mark.parametrize("times", [
    _noisy(80, 0.5),  # healthy, ±25 % noise
    [3.0, 2.5, *_noisy(80, 0.5)],  # slow first steps (allocator growth, kernel choice)
    [*_noisy(30, 0.5), 6.0, *_noisy(30, 0.5), 5.0, *_noisy(20, 0.5)],  # a save or a sample now and then
    [*_noisy(40, 0.5), *_noisy(3, 3.0), *_noisy(40, 0.5)],  # a short stall that recovers
    [*_noisy(40, 0.5), *_noisy(40, 1.0)],  # twice as slow (another process on the GPU), not a spill
    _noisy(8, 0.5),  # too short to judge
])
def test_quiet_on_healthy_rows(times):
    assert slowdown_finding(_rows(times)) is None


@pytest.mark.slow
def test_quiet_on_a_real_tiny_training(tmp_path):
    from trainer.io import read_jsonl
    from trainer.train.loop import run_training

    cfg = tiny_config(write_toy_dataset(tmp_path / "d", n=4), tmp_path / "o", {"train.max_steps": 16, "train.batch_size": 1})
    result = run_training(cfg, None)
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    assert len(rows) == 16 and all("device_mem_reserved" in r for r in rows)
    shares = [(r["cpu_self"], r["cpu_others"]) for r in rows if r["cpu_self"] is not None]
    assert len(shares) >= 12 and all(0 < own <= 1 and 0 <= others <= 1 for own, others in shares)  # it measured itself
    assert slowdown_finding([StepRow.parse(r) for r in rows]) is None


def test_another_program_taking_a_core_is_named_not_a_gpu_spill():
    # what happened on a 2-core machine: one busy program made the run 4.9x slower; the training kept 0.97 of the
    # machine before and 0.55 after, the others went from 0.01 to 0.45
    times = [2.0, 1.2, *_noisy(40, 0.12), *_noisy(30, 0.59, seed=1)]
    rows = _cpu_rows(times, 42, own=(0.97, 0.55), others=(0.01, 0.45), **CPU_RUN)
    f = slowdown_finding(rows)
    assert f is not None and f.signal == "cpu_contention"
    en, ko = words.say(f.message, "en"), words.say(f.message, "ko")
    assert "other programs took 45% of the machine's CPU (before: 1%)" in en and "GPU" not in en
    assert "45%" in ko and "GPU" not in ko
    kb = load_kb()
    top = kb.rank_causes({"cpu_contention": 0.6})[0].cause
    assert top.id == "other_programs" and kb.prescriptions_for(top.id)[0].id == "close_other_programs"


def test_contention_is_named_on_a_gpu_run_too():
    times = [2.0, 1.2, *_noisy(40, 0.5), *_noisy(30, 4.0, seed=1)]
    rows = _cpu_rows(times, 42, own=(0.3, 0.2), others=(0.02, 0.4), device_mem_reserved=3 * 2**30,
                     device_mem_free=8 * 2**30)
    assert slowdown_finding(rows).signal == "cpu_contention"


def test_a_cpu_run_that_slows_alone_is_the_machine_never_a_gpu_spill():
    times = [2.0, 1.2, *_noisy(40, 0.5), *_noisy(30, 4.0, seed=1)]
    rows = _cpu_rows(times, 42, own=(0.95, 0.3), others=(0.02, 0.02), **CPU_RUN)  # waiting on swap: idle, not taken
    f = slowdown_finding(rows)
    assert f is not None and f.signal == "step_slowdown_cpu"
    assert "GPU" in words.say(f.message, "en") and "spill" not in words.say(f.message, "en")
    assert load_kb().rank_causes({"step_slowdown_cpu": 0.6})[0].cause.id == "machine_slowed"


def test_a_cuda_run_without_contention_still_points_at_its_memory():
    times = [2.0, 1.2, *_noisy(40, 0.5), *_noisy(30, 4.0, seed=1)]
    rows = _cpu_rows(times, 42, own=(0.3, 0.3), others=(0.02, 0.03), device_mem_reserved=11.5 * 2**30,
                     device_mem_free=0.1 * 2**30)
    assert slowdown_finding(rows).signal == "step_slowdown"


def test_cpu_share_measures_this_process_and_the_others():
    import time

    share = CpuShare()
    end = time.process_time() + 0.3
    while time.process_time() < end:  # this process busy on one core
        pass
    got = share()
    assert got["cpu_self"] is not None and 0 < got["cpu_self"] <= 1 and 0 <= got["cpu_others"] <= 1


def test_a_cpu_run_beside_a_program_busy_all_along_is_contention_not_the_machine():
    """What happened beside a second training on 2 cores: the others held half the machine before and after, and the
    run slowed 5.6x: their shares did not move, so it is not named the machine slowing by itself."""
    times = [2.0, 1.2, *_noisy(40, 0.68), *_noisy(30, 3.8, seed=1)]
    rows = _cpu_rows(times, 42, own=(0.5, 0.5), others=(0.5, 0.5), **CPU_RUN)
    f = slowdown_finding(rows)
    assert f is not None and f.signal == "cpu_contention"
    en, ko = words.say(f.message, "en"), words.say(f.message, "ko")
    assert "kept 50% of the machine's CPU (before: 50%)" in en and "far more than their shares show" in en
    assert "50%" in ko and "닫고" in ko
    quiet = _cpu_rows(times, 42, own=(0.95, 0.3), others=(0.02, 0.02), **CPU_RUN)
    assert slowdown_finding(quiet).signal == "step_slowdown_cpu"  # alone: the machine itself, as before


def test_a_slowdown_that_passed_is_said_as_passed_live_and_at_the_runs_end():
    """Live, a slowdown warns while it lasts; at the first reading that no longer finds it (the steps came back to
    their speed) the Train step's word for it says so instead of keeping the warning; at the run's end a warning
    the end's reading no longer finds is said so too. Found again, it warns again."""
    from trainer.config.schema import Config
    from trainer.doctor.registry import Reported, RunInputs, collect

    times = [2.0, 1.2, *_noisy(40, 0.12), *_noisy(30, 0.59, seed=1), *_noisy(300, 0.12, seed=2)]
    rows = _cpu_rows(times, 42, own=(0.97, 0.55), others=(0.01, 0.45), **CPU_RUN)
    for r in rows[72:]:
        r.cpu_self, r.cpu_others = 0.97, 0.01
    plan = {"dose_zone": "fit"}
    reported = Reported()

    def said(n: int, end: bool) -> list[tuple[str, str]]:
        found = collect(RunInputs(Config(), plan, rows[:n], stopped=end), "numbers")
        return [(f.signal, f.level) for f in reported.news(found, ("numbers",), rows[n - 1].step, end)]

    assert said(75, False) == [("cpu_contention", "warning")] and said(76, False) == []  # still slow
    assert said(150, False) == [("cpu_contention", "info")]
    last = reported.said["cpu_contention"].message
    assert words.say(last, "en").startswith("no longer so at step 150; earlier: steps became")
    assert words.say(last, "ko").startswith("150스텝에서는 더 이상 그렇지 않음. 앞서: ")
    assert said(200, False) == [] and said(len(rows), True) == []  # said once, live and at the end
    # passed only at the end: said with the run's end
    reported = Reported()
    assert said(75, False) == [("cpu_contention", "warning")]
    assert said(len(rows), True) == [("cpu_contention", "info")]
    last = reported.said["cpu_contention"].message
    assert words.say(last, "en").startswith("no longer so at the run's end (step 372); earlier: steps became")
    assert words.say(last, "ko").startswith("실행이 끝날 때(372스텝)는 더 이상 그렇지 않음")
    # a warning the end's reading still finds stays as it was
    reported = Reported()
    assert said(75, False) == [("cpu_contention", "warning")] and said(75, True) == []
