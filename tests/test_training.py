"""The training engine on tiny models (CPU): metrics, checkpoints, files other tools load, fp16, resume, EMA."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from tests.helpers import Overflow, StopAt, images_of_both_formats, lora_image, tiny_config, write_toy_dataset
from trainer.doctor.pictures import dose_by_step
from trainer.io import read_jsonl
from trainer.models.tiny import build_tiny_pipeline
from trainer.run.events import MemorySink, Started
from trainer.train.loop import Hooks, run_training

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_toy_dataset(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def run30(dataset, tmp_path_factory):
    """30 optimizer steps with checkpoints every 10 and samples at each."""
    out = tmp_path_factory.mktemp("runs")
    cfg = tiny_config(dataset, out, {
        "train.max_steps": 30, "save.every_steps": 10, "sample.enabled": True, "optim.max_grad_norm": 0.01,
        "lora.rank": 8, "lora.alpha": 4.0,
    })
    sink = MemorySink()
    result = run_training(cfg, sink)
    assert result.status == "finished", result.message
    return result, sink


def test_thirty_steps_write_the_run_folder_contract(run30):
    result, sink = run30
    run = result.run_dir
    rows = read_jsonl(run / "metrics.jsonl")
    assert [r["step"] for r in rows] == list(range(1, 31))
    assert all(math.isfinite(r["loss"]) for r in rows)
    for field in ("step", "epoch", "loss", "grad_norm", "grad_norm_clipped", "lr", "loss_scale", "skipped",
                  "nonfinite", "sec_per_step"):
        assert field in rows[0]
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step-000010", "step-000020", "step-000030"]
    for step in (10, 20, 30):
        assert (run / "checkpoints" / f"step-{step:06d}" / "state.pt").is_file()
    assert sorted(p.name for p in (run / "samples").iterdir()) == [
        "step-000000", "step-000010", "step-000020", "step-000030"]
    manifest = json.loads((run / "samples" / "step-000010" / "manifest.json").read_text())
    assert [s["kind"] for s in manifest["samples"]] == ["trigger", "trigger_unseen", "trigger_outfit", "no_trigger"]
    assert (run / "final" / "lora.safetensors").is_file()
    kinds = [e.type for e in sink.events]
    assert kinds[0] in ("progress", "started") and "started" in kinds and kinds[-1] == "finished"
    started = next(e for e in sink.events if isinstance(e, Started))
    assert started.trainable_params > 0 and started.precision["trainable_dtype"] == "float32"


def test_clipping_clips(run30):
    rows = read_jsonl(run30[0].run_dir / "metrics.jsonl")
    clipped_rows = [r for r in rows if r["grad_norm"] > 0.01]
    assert clipped_rows, "max_grad_norm 0.01 should clip some steps"
    for r in clipped_rows:
        assert r["grad_norm_clipped"] <= 0.01 + 1e-6


def test_kohya_file_loads_in_diffusers_with_the_real_alpha(run30, tmp_path):
    final = run30[0].run_dir / "final"
    with safe_open(str(final / "lora.safetensors"), "pt") as f:
        meta = f.metadata()
        keys = list(f.keys())
        alpha_key = next(k for k in keys if k.endswith(".alpha"))
        assert float(f.get_tensor(alpha_key)) == 4.0
        assert f.get_tensor(keys[1]).dtype == torch.float16
    assert all(k.startswith("lora_unet_") for k in keys)
    for key in ("ss_network_module", "ss_network_dim", "ss_network_alpha", "ss_base_model_version", "ss_resolution",
                "ss_num_train_images", "ss_tag_frequency", "ss_steps", "ss_epoch", "ss_learning_rate",
                "ss_training_started_at"):
        assert key in meta, key
    assert meta["ss_network_dim"] == "8" and float(meta["ss_network_alpha"]) == 4.0
    assert "zxc" in json.loads(meta["ss_tag_frequency"])["10_zxc toy"]

    base = lora_image(build_tiny_pipeline("sd15"))
    images = images_of_both_formats(final, "sd15")
    assert np.abs(images["lora.safetensors"] - images["lora_diffusers.safetensors"]).max() <= 1e-3
    assert np.abs(images["lora.safetensors"] - base).max() > 1e-3

    # The same file with alpha = rank (what diffusers' own converter writes) must look different:
    tensors = load_file(str(final / "lora.safetensors"))
    wrong = {k: (torch.tensor(8.0, dtype=v.dtype) if k.endswith(".alpha") else v) for k, v in tensors.items()}
    save_file(wrong, str(tmp_path / "wrong.safetensors"))
    pipe = build_tiny_pipeline("sd15")
    pipe.load_lora_weights(str(tmp_path), weight_name="wrong.safetensors")
    assert np.abs(lora_image(pipe) - images["lora.safetensors"]).max() > 1e-3


def test_fp16_on_cpu_reports_a_moving_loss_scale_and_skips_overflow(dataset, tmp_path):
    cfg = tiny_config(dataset, tmp_path, {"train.precision": "fp16", "train.max_steps": 3})
    result = run_training(cfg, MemorySink(), hooks=Overflow((1, 2)))
    assert result.status == "finished", result.message
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    scales = [r["loss_scale"] for r in rows]
    assert all(s is not None for s in scales)
    assert len(set(scales)) > 1, scales
    assert any(r["skipped"] for r in rows)
    assert all(r["nonfinite"] is None for r in rows)  # the scaler's ordinary overflow is not a failure
    assert [r["step"] for r in rows if not r["skipped"]] == [1, 2, 3]
    weights = load_file(str(result.run_dir / "final" / "lora_diffusers.safetensors"))
    assert all(torch.isfinite(t).all() for t in weights.values())


@pytest.mark.parametrize("cached", [True, False])
def test_resume_matches_an_uninterrupted_run(dataset, tmp_path, cached):
    from trainer.train.commands import Commands

    over = {"train.max_steps": 20, "dataset.shuffle_tags": True, "dataset.caption_dropout": 0.2,
            "train.noise_offset": 0.05, "ema.enabled": True, "dataset.cache_latents": cached,
            "dataset.flip": not cached}
    straight = run_training(tiny_config(dataset, tmp_path / "a", over), MemorySink())
    commands = Commands()
    first = run_training(tiny_config(dataset, tmp_path / "b", over), MemorySink(), commands,
                         hooks=StopAt(10, commands))
    assert first.status == "stopped" and first.exit_code == 130
    resumed = run_training(tiny_config(dataset, tmp_path / "b", over), MemorySink(), resume=first.run_dir)
    assert resumed.status == "finished" and resumed.run_dir == first.run_dir
    a = read_jsonl(straight.run_dir / "metrics.jsonl")
    b = read_jsonl(resumed.run_dir / "metrics.jsonl")
    assert [r["step"] for r in b] == list(range(1, 21))
    for ra, rb in zip(a, b):
        assert abs(ra["loss"] - rb["loss"]) <= 1e-6, (ra["step"], ra["loss"], rb["loss"])
        assert abs(ra["grad_norm"] - rb["grad_norm"]) <= 1e-6
    la = load_file(str(straight.run_dir / "final" / "lora_diffusers.safetensors"))
    lb = load_file(str(resumed.run_dir / "final" / "lora_diffusers.safetensors"))
    assert la.keys() == lb.keys()
    for k in la:
        assert torch.allclose(la[k], lb[k], atol=1e-6), k


class CaptureEMA(Hooks):
    def after_step(self, trainer):
        self.trainer = trainer


def test_ema_is_fp32_over_trainable_params_only_and_saved_beside(dataset, tmp_path):
    hooks = CaptureEMA()
    cfg = tiny_config(dataset, tmp_path, {"ema.enabled": True, "ema.decay": 0.9, "train.max_steps": 5,
                                          "train.precision": "bf16"})
    result = run_training(cfg, MemorySink(), hooks=hooks)
    assert result.status == "finished", result.message
    t = hooks.trainer
    assert all(s.dtype == torch.float32 for s in t.state.ema.shadow)
    assert len(t.state.ema.shadow) == len(t.models.trainable)
    assert sum(s.numel() for s in t.state.ema.shadow) == sum(p.numel() for p in t.models.trainable)
    assert sum(s.numel() for s in t.state.ema.shadow) < sum(p.numel() for p in t.models.denoiser.parameters()) / 10
    live = load_file(str(result.run_dir / "final" / "lora.safetensors"))
    ema = load_file(str(result.run_dir / "final" / "lora_ema.safetensors"))
    assert live.keys() == ema.keys()
    assert any(not torch.equal(live[k], ema[k]) for k in live if "lora_up" in k)
    # the EMA weights in diffusers' layout too (each module's alpha in its metadata), the same weights
    ema_diffusers = load_file(str(result.run_dir / "final" / "lora_ema_diffusers.safetensors"))
    live_diffusers = load_file(str(result.run_dir / "final" / "lora_diffusers.safetensors"))
    assert ema_diffusers.keys() == live_diffusers.keys()
    b = "unet.down_blocks.0.attentions.0.transformer_blocks.0.attn1.to_k.lora_B.weight"
    up = "lora_unet_down_blocks_0_attentions_0_transformer_blocks_0_attn1_to_k.lora_up.weight"
    assert torch.equal(ema_diffusers[b].to(ema[up].dtype), ema[up])  # the kohya file is fp16, this one fp32
    assert not torch.equal(ema_diffusers[b], live_diffusers[b])


def test_metrics_log_the_lr_each_step_used_and_the_plans_dose_is_the_runs(dataset, tmp_path):
    cfg = tiny_config(dataset, tmp_path, {"optim.scheduler": "cosine", "optim.warmup_steps": 2,
                                          "train.max_steps": 8})
    result = run_training(cfg, MemorySink())
    assert result.status == "finished", result.message
    lrs = [r["lr"] for r in read_jsonl(result.run_dir / "metrics.jsonl")]
    # diffusers' warmup starts at 0: the first step learns nothing, and the log says so
    assert lrs[0] == 0.0 and lrs[1] == pytest.approx(5e-4) and lrs[2] == pytest.approx(1e-3)
    assert lrs[3:] == sorted(lrs[3:], reverse=True) and lrs[-1] > 0
    plan = json.loads((result.run_dir / "plan.json").read_text())
    assert plan["schedule_mean"] == pytest.approx(sum(lrs) / 8 / 1e-3)
    assert dose_by_step(result.run_dir)[8] == pytest.approx(plan["dose"])


def test_sdxl_with_text_encoders_exports_te1_and_te2(dataset, tmp_path):
    cfg = tiny_config(dataset, tmp_path, {"lora.train_text_encoder": True, "train.max_steps": 5,
                                          "optim.te_lr": 5e-4}, base="tiny-sdxl")
    result = run_training(cfg, MemorySink())
    assert result.status == "finished", result.message
    with safe_open(str(result.run_dir / "final" / "lora.safetensors"), "pt") as f:
        keys = list(f.keys())
        assert f.metadata()["ss_base_model_version"] == "sdxl_base_v1-0"
    assert any(k.startswith("lora_te1_text_model_encoder_layers_") for k in keys)
    assert any(k.startswith("lora_te2_text_model_encoder_layers_") for k in keys)
    assert any(k.startswith("lora_unet_input_blocks_") for k in keys)
    pipe = build_tiny_pipeline("sdxl")
    base = lora_image(pipe)
    pipe.load_lora_weights(str(result.run_dir / "final"), weight_name="lora.safetensors")
    assert np.abs(lora_image(pipe) - base).max() > 1e-4


def test_torchrun_two_processes_write_one_run_folder(dataset, tmp_path):
    cfg = tiny_config(dataset, tmp_path / "runs", {"train.max_steps": 3})
    cfg_path = tmp_path / "cfg.toml"
    cfg_path.write_text(cfg.to_toml())
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29533",
         "-m", "trainer", "train", str(cfg_path), "--quiet"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = [p for p in (tmp_path / "runs" / "lora").iterdir() if p.is_dir()]
    assert len(runs) == 1
    rows = read_jsonl(runs[0] / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert (runs[0] / "final" / "lora.safetensors").is_file()


def test_tag_dropout_keeps_the_trigger_and_drops_the_other_tags_at_its_rate():
    import random

    from trainer.config.schema import DatasetConfig
    from trainer.data.batches import captions_are_augmented, process_caption

    cfg = DatasetConfig(tag_dropout=0.5, keep_tokens=1)
    rng = random.Random(0)
    caption = "zxc, wearing a red hat, on grass, left, small"
    outs = [process_caption(caption, cfg, rng) for _ in range(2000)]
    assert all(o.split(", ")[0] == "zxc" for o in outs)
    kept = sum(len(o.split(", ")) - 1 for o in outs) / (4 * len(outs))
    assert 0.45 < kept < 0.55
    tags = caption.split(", ")
    assert all(o.split(", ") == [t for t in tags if t in o.split(", ")] for o in outs)  # in order, none added
    assert captions_are_augmented(cfg) and not captions_are_augmented(DatasetConfig())
    assert process_caption(caption, DatasetConfig(), rng) == caption
