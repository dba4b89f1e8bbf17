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
def test_gpu_benchmark_smoke_runs_on_cpu(tmp_path):
    """The GPU script's whole path (SD1.5 from its configs saved as bf16, both sides in their own processes,
    every cell) on SD1.5 at 1/16 of its widths on the CPU."""
    proc = subprocess.run([sys.executable, "bench/bench_gpu.py", "--smoke", "--steps", "1", "--rounds", "1", "--json",
                           "--work", str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["device"] == "cpu (smoke)"
    assert [(r["batch"], r["grad_ckpt"]) for r in out["results"]] == [(1, False), (2, False), (1, True), (2, True)]
    for r in out["results"]:
        assert r["ours"]["it_s"] > 0 and r["reference"]["it_s"] > 0
    assert json.loads((tmp_path / "sd15-random-16" / "unet" / "config.json").read_text())["block_out_channels"] == [
        20, 40, 80, 80]
    assert list(tmp_path.rglob("config.toml")), "ours is our Trainer: it wrote a run folder"


def test_scaled_sd15_is_sd15_narrowed():
    """The benchmark's ``sd15-quarter`` model: SD1.5's blocks and depths, widths divided, an 8x VAE."""
    import torch

    from trainer.models.base import MODEL_CONFIG_DIR
    from trainer.models.tiny import build_scaled_sd15

    pipe = build_scaled_sd15(16)
    real = json.loads((MODEL_CONFIG_DIR / "sd15" / "unet" / "config.json").read_text())
    assert list(pipe.unet.config.block_out_channels) == [c // 16 for c in real["block_out_channels"]]
    assert list(pipe.unet.config.down_block_types) == real["down_block_types"]
    assert pipe.unet.config.cross_attention_dim == pipe.text_encoder.config.hidden_size == 768 // 16
    assert pipe.text_encoder.config.num_hidden_layers == 12
    with torch.no_grad():
        latents = pipe.vae.encode(torch.zeros(1, 3, 64, 64)).latent_dist.mean
        hidden = pipe.text_encoder(torch.zeros(1, 77, dtype=torch.long))[0]
        out = pipe.unet(latents, torch.tensor([10]), hidden).sample
    assert latents.shape == (1, 4, 8, 8) and out.shape == latents.shape


def test_real_sd15_flop_shares():
    """The VAE encode's share of a reference SD1.5 step at 512 px, counted without weights."""
    sys.path.insert(0, str(REPO / "bench"))
    from run_all import real_sd15_shares

    shares = real_sd15_shares()
    assert 0.3 < shares["vae"] < 0.5 and shares["te"] < 0.02
    assert abs(shares["vae"] + shares["te"] + shares["unet"] - 1) < 1e-9


def test_reference_step_trains_its_lora_and_clips(tmp_path):
    """The recipe ours is timed against does a real step: its LoRA weights move, the clip bounds the gradient."""
    import torch
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    sys.path.insert(0, str(REPO / "bench"))
    import steppers

    from tests.helpers import tiny_config, write_toy_dataset

    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=4), tmp_path / "out", {"optim.max_grad_norm": 1e-3})
    step, unet = steppers.reference(cfg)
    lora = {n: p for n, p in unet.named_parameters() if p.requires_grad}
    assert lora and all("lora_" in n for n in lora) and all(p.dtype == torch.float32 for p in lora.values())
    before = {n: p.detach().clone() for n, p in lora.items()}
    seen = []
    handle = register_optimizer_step_pre_hook(
        lambda opt, *_: seen.append(torch.nn.utils.get_total_norm([p.grad for p in lora.values()]).item()))
    try:
        step()
        step(1)
    finally:
        handle.remove()
    assert len(seen) == 2 and all(0 < g <= 1e-3 * 1.001 for g in seen)  # clipped to max_grad_norm
    assert any(not torch.equal(before[n], p) for n, p in lora.items())
    assert all(p.grad is None for p in lora.values())


def test_scan_benchmark_runs_and_finds_every_copy():
    proc = subprocess.run([sys.executable, "bench/bench_scan.py", "--pictures", "3", "--size", "512", "384", "--rounds",
                           "1"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "near copies named 3 (of 3)" in proc.stdout and "on / off (medians)" in proc.stdout
