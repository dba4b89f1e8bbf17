"""The benchmark scripts run (figures are printed by them, never asserted here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_gpu_benchmark_smoke_runs_on_cpu():
    proc = subprocess.run([sys.executable, "bench/bench_gpu.py", "--smoke", "--steps", "1", "--json"], cwd=REPO,
                          capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["device"] == "cpu (smoke)"
    assert {(r["batch"], r["grad_ckpt"]) for r in out["results"]} == {(1, False), (1, True)}
    for r in out["results"]:
        assert r["ours"][0] > 0 and r["reference"][0] > 0
