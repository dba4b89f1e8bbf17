"""The memory plan: parameter counts from the shipped configs, LoRA and optimizer-state bytes against the real
tensors, the verdict, Fit to memory, and the plan CLI's ``memory`` key."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import words
from tests.helpers import tiny_config, write_toy_dataset
from trainer.config.schema import from_dict
from trainer.plan.memory import (
    GIB,
    TIGHT_SHARE,
    estimate_memory,
    lora_tensors,
    optimizer_bytes,
    shapes_for,
    verdict_for,
)
from trainer.plan.memory_fit import fit_to_memory, parse_bytes

REPO = Path(__file__).resolve().parent.parent
CPU = torch.device("cpu")


def _real(family: str, **train):
    return from_dict({"model": {"base": str(REPO / "trainer" / "models" / "model_configs" / family), "family": family},
                      "train": {"device": "cpu", **train}})


def test_parameter_counts_are_the_real_models_read_from_the_shipped_configs():
    sd15, sdxl = shapes_for(_real("sd15").model), shapes_for(_real("sdxl").model)
    assert (sd15.unet, sd15.vae, sd15.text_encoders) == (859_520_964, 83_653_863, (("clip_l", 123_060_480),))
    assert sdxl.unet == 2_567_463_684 and [k for k, _ in sdxl.text_encoders] == ["clip_l", "clip_g"]
    assert sdxl.text_encoders[1][1] == 694_659_840 and sd15.vae_scale == 8


@pytest.mark.parametrize(("family", "kinds"), [("sd3", ["clip_l", "clip_g", "t5"]), ("flux", ["clip_l", "t5"]),
                                               ("zimage", ["qwen3"])])
def test_text_encoder_kinds_of_the_newer_families_from_their_shipped_configs(family, kinds):
    """The memory plan's text-encoder rows (activations, encode cost, never trained) follow these kinds."""
    assert [k for k, _ in shapes_for(_real(family).model).text_encoders] == kinds


@pytest.mark.parametrize("lora", [
    {"rank": 4, "targets": "attn"},
    {"rank": 8, "targets": "attn_ff", "conv_rank": 2, "conv_blocks": ["up_blocks.1"]},
    {"rank": 4, "targets": "cross_kv", "train_text_encoder": True},
])
@pytest.mark.parametrize("family", ["sd15", "sdxl"])
def test_lora_tensors_match_what_attach_lora_creates(tmp_path, family, lora):
    from trainer.models.lora import attach_lora
    from trainer.models.tiny import build_tiny_pipeline

    cfg = tiny_config(write_toy_dataset(tmp_path / "d", n=1), tmp_path / "o", {f"lora.{k}": v for k, v in lora.items()},
                      base=f"tiny-{family}")
    pipe = build_tiny_pipeline(family)
    mods = attach_lora(pipe, cfg.lora, family, seed=0)
    real = sorted(p.numel() for _, p in mods.named_trainable())
    assert sorted(lora_tensors(cfg, shapes_for(cfg.model))) == real


@pytest.mark.parametrize("optimizer", ["adamw", "adamw8bit", "prodigy"])
def test_optimizer_bytes_match_the_optimizers_real_state(optimizer):
    from trainer.train.optim import build_optimizer

    params = [torch.nn.Parameter(torch.randn(n)) for n in (100, 4096, 5000, 70_000)]
    cfg = from_dict({"optim": {"optimizer": optimizer}})
    opt = build_optimizer([{"params": params}], cfg, CPU)
    for p in params:
        p.grad = torch.randn_like(p)
    opt.step()
    held = sum(t.numel() * t.element_size() for s in opt.state.values() for t in s.values()
               if isinstance(t, torch.Tensor) and t.numel() > 1)
    assert optimizer_bytes(optimizer, [p.numel() for p in params]) == held


def test_verdict_has_a_margin_below_the_free_memory():
    assert verdict_for(int(TIGHT_SHARE * 10 * GIB), 10 * GIB) == "fits"
    assert verdict_for(int(0.95 * 10 * GIB), 10 * GIB) == "tight"
    assert verdict_for(11 * GIB, 10 * GIB) == "spill"
    assert verdict_for(1, None) == "unknown"


def test_plan_parts_follow_the_settings():
    base = estimate_memory(_real("sd15", precision="fp32"), free=None)
    half = estimate_memory(_real("sd15", precision="bf16"), free=None)
    assert base.parts["unet_weights"] == 4 * 859_520_964 and half.parts["unet_weights"] == 2 * 859_520_964
    assert base.parts["activations"] > half.parts["activations"] > 0
    ckpt = estimate_memory(_real("sd15", precision="fp32", gradient_checkpointing=True), free=None)
    assert ckpt.parts["activations"] < base.parts["activations"] / 3
    big = estimate_memory(_real("sd15", precision="fp32", batch_size=4), free=None)
    assert big.parts["activations"] == pytest.approx(4 * base.parts["activations"], rel=0.01)
    assert sum(base.parts.values()) == base.total and base.verdict == "unknown"
    wide = estimate_memory(_real("sd15", precision="fp32"), [{"width": 768, "height": 512, "image_repeats": 3},
                                                             {"width": 512, "height": 512, "image_repeats": 9}], free=None)
    assert wide.resolution == (768, 512) and wide.parts["activations"] > base.parts["activations"]


def test_fit_takes_the_careful_order_and_keeps_the_effective_batch():
    cfg = _real("sd15", precision="fp32", batch_size=4, grad_accum=1)
    cfg.dataset.cache_latents = False
    before = estimate_memory(cfg, free=None).total
    budget = 7 * GIB
    assert before > budget  # does not fit as it is
    result = fit_to_memory(cfg, budget, device=CPU)
    keys = [c["key"] for c in result.changes]
    assert result.fits and result.after.total <= TIGHT_SHARE * budget
    order = ["dataset.cache_latents", "train.gradient_checkpointing", "optim.optimizer", "train.batch_size",
             "train.grad_accum", "train.precision"]
    assert keys == sorted(keys, key=order.index) and "train.gradient_checkpointing" in keys
    new = result.config
    assert new.train.batch_size * new.train.grad_accum == 4
    assert result.to_json()["sets"][0] == "train.gradient_checkpointing=true"
    # none of the chosen changes can be left out
    for c in result.changes:
        if c["key"] == "train.grad_accum":
            continue
        undo = new.model_copy(deep=True)
        section, leaf = c["key"].split(".")
        setattr(getattr(undo, section), leaf, c["old"])
        if c["key"] == "train.batch_size":
            undo.train.grad_accum = cfg.train.grad_accum
        assert estimate_memory(undo, free=None).total > TIGHT_SHARE * budget, c["key"]


def test_fit_says_when_nothing_is_enough_and_when_nothing_is_needed():
    cfg = _real("sdxl", precision="fp32")
    hopeless = fit_to_memory(cfg, 2 * GIB, device=CPU)
    assert not hopeless.fits and "does not fit" in words.say(hopeless.message) and hopeless.changes
    easy = fit_to_memory(cfg, 200 * GIB, device=CPU)
    assert easy.fits and easy.changes == [] and easy.config.to_dict() == cfg.to_dict()


def test_fit_reports_a_changed_step_count_with_the_plan(tmp_path, make_image):
    from trainer.plan.steps import plan_from_config

    data = tmp_path / "d"
    for i, size in enumerate(((64, 64), (128, 64))):  # two buckets, one picture each: a batch of 2 makes 2 steps
        make_image(data / "1_zxc" / f"{i}.png", size=size, caption="zxc")  # (one per bucket), batches of 1 make 1
    cfg = tiny_config(data, tmp_path / "o", {"train.batch_size": 2, "train.max_steps": 0, "train.epochs": 1})
    report, plan = plan_from_config(cfg)
    result = fit_to_memory(cfg, estimate_memory(cfg, plan.per_bucket, free=None).total - 1, plan.per_bucket, report,
                           device=CPU)
    assert any(c["key"] == "train.batch_size" for c in result.changes)
    assert result.steps_note is not None and "train.max_steps" in words.say(result.steps_note)


def test_parse_bytes():
    assert parse_bytes("8GiB") == 8 * GIB and parse_bytes("12G") == 12 * GIB and parse_bytes("1000") == 1000
    assert parse_bytes("7.5 GB") == int(7.5 * GIB) and parse_bytes("512MiB") == 512 * 2**20


def test_plan_cli_shows_the_memory_plan_and_the_fit(tmp_path):
    data = write_toy_dataset(tmp_path / "d", n=2)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[model]\nbase = "{REPO / "trainer" / "models" / "model_configs" / "sd15"}"\n[dataset]\npath = "{data}"\n'
                   '[train]\nprecision = "fp32"\nbatch_size = 2\ndevice = "cpu"\n')
    run = lambda *a: subprocess.run([sys.executable, "-m", "trainer", "plan", str(cfg), *a], cwd=REPO,  # noqa: E731
                                    capture_output=True, text=True, timeout=300)
    proc = run("--json", "--fit-memory", "5GiB")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    mem = out["memory"]
    assert set(mem) >= {"parts", "total", "device", "free", "verdict"} and mem["free"] > 0
    assert mem["total"] == sum(mem["parts"].values()) and mem["verdict"] in ("fits", "tight", "spill")
    assert out["memory_fit"]["budget"] == 5 * GIB and out["memory_fit"]["changes"]
    proc = run("--fit-memory", "5GiB")
    assert "peak memory (estimate):" in proc.stdout and "total" in proc.stdout and "  --set train." in proc.stdout


def test_probe_counts_live_tensor_bytes_like_the_allocator():
    """The counting method the calibration rests on, on a case small enough to work out by hand."""
    sys.path.insert(0, str(REPO / "bench"))
    import memory_probe

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024))
    x = torch.randn(256, 1024)
    peaks = memory_probe.peaks(lambda: net(x).square().mean().backward())
    grads = sum(4 * p.numel() for p in net.parameters())
    # the 32 MiB of weight gradients plus one 4 MiB (256 × 4096 fp32) activation or its gradient alive beside them
    assert peaks["tensors"] == pytest.approx(grads + 4 * 2**20, rel=0.01)
    assert peaks["allocator"] == pytest.approx(peaks["tensors"], rel=0.01)
