"""Stable Diffusion 3.5 as a family: the tiny model from the CLI, a run with rectified-flow training and samples,
and LoRA files diffusers' SD3 pipeline loads (every key onto a module) and sd-scripts' layout with q, k and v
fused exactly; T5 kept out of fp16."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.helpers import (
    Overflow,
    assert_stopped_run_resumes_bit_for_bit,
    assert_sweeps_and_diagnoses,
    kohya_delta,
    six_step_run,
    tiny_config,
    tiny_model_folder,
    write_toy_dataset,
)
from trainer.io import read_jsonl
from trainer.run.events import MemorySink, Started
from trainer.train.loop import run_training


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tiny_model_folder(tmp_path_factory, "sd3")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_toy_dataset(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def run(base, dataset, tmp_path_factory):
    return six_step_run(base, dataset, tmp_path_factory.mktemp("runs"), {"lora.train_text_encoder": True})


def test_the_tiny_model_is_an_sd3_pipeline_with_t5(base):
    index = json.loads((base / "model_index.json").read_text())
    assert index["_class_name"] == "StableDiffusion3Pipeline"
    assert index["transformer"] == ["diffusers", "SD3Transformer2DModel"]
    assert index["text_encoder_3"] == ["transformers", "T5EncoderModel"]
    assert index["scheduler"] == ["diffusers", "FlowMatchEulerDiscreteScheduler"]


def test_six_steps_train_with_flow_matching_and_draw_samples(run):
    result, sink = run
    started = next(e for e in sink.events if isinstance(e, Started))
    assert started.base["family"] == "sd3" and started.base["prediction_type"] == "flow"
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert all(math.isfinite(r["loss"]) and r["loss_scale"] is None for r in rows)  # fp32: no loss scaler
    for step in (0, 3, 6):
        manifest = json.loads((result.run_dir / "samples" / f"step-{step:06d}" / "manifest.json").read_text())
        assert manifest["samples"] and all((result.run_dir / "samples" / f"step-{step:06d}" / s["file"]).is_file()
                                           for s in manifest["samples"])
    measures = read_jsonl(result.run_dir / "measures.jsonl")
    assert [m["step"] for m in measures][:1] == [0] and "subject" in measures[0]
    assert any(math.isfinite(r.get("val_loss", math.nan)) for r in rows)  # the validation loss on 2 held-out pictures


def test_the_diffusers_file_loads_into_the_sd3_pipeline_with_every_key_used(run, base):
    from diffusers import StableDiffusion3Pipeline

    result, _ = run
    path = result.run_dir / "final" / "lora_diffusers.safetensors"
    saved = load_file(str(path))
    pipe = StableDiffusion3Pipeline.from_pretrained(str(base))
    before = {k: v.clone() for k, v in pipe.transformer.state_dict().items()}
    pipe.load_lora_weights(str(path.parent), weight_name=path.name, adapter_name="run")
    components = {"transformer": pipe.transformer, "text_encoder": pipe.text_encoder,
                  "text_encoder_2": pipe.text_encoder_2}
    used = 0
    for key, tensor in saved.items():
        m = re.fullmatch(r"(transformer|text_encoder|text_encoder_2)\.(.+)\.lora_([AB])\.weight", key)
        assert m, key
        layer = components[m[1]].get_submodule(m[2])
        loaded = getattr(layer, f"lora_{m[3]}")["run"].weight
        assert torch.equal(loaded.float(), tensor.float()), key
        used += 1
    assert used == len(saved)
    assert any(k.startswith("text_encoder_2.") for k in saved)  # the text encoders' LoRA went with it
    pipe.fuse_lora(adapter_names=["run"])
    pipe.unload_lora_weights()
    after = pipe.transformer.state_dict()
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert any(".attn.to_q." in k for k in changed) and any(".ff_context." in k for k in changed)


def test_the_kohya_file_names_the_mmdit_modules_and_fuses_qkv_exactly(run):
    result, _ = run
    kohya = load_file(str(result.run_dir / "final" / "lora.safetensors"))
    peft = load_file(str(result.run_dir / "final" / "lora_diffusers.safetensors"))
    unet = {k.split(".")[0] for k in kohya if k.startswith("lora_unet_")}
    assert unet and all(re.fullmatch(r"lora_unet_joint_blocks_\d+_(x|context)_block_(attn2?_(qkv|proj)|mlp_fc[12])", n)
                        for n in unet), sorted(unet)[:5]
    assert {k.split("_")[1] for k in kohya if not k.startswith("lora_unet_")} == {"te1", "te2"}

    def delta(prefix: str) -> torch.Tensor:
        return kohya_delta(kohya, prefix)

    fused = delta("lora_unet_joint_blocks_0_x_block_attn_qkv")
    rank, alpha = 4, 4.0  # tiny_config's
    parts = [peft[f"transformer.transformer_blocks.0.attn.{p}.lora_B.weight"]
             @ peft[f"transformer.transformer_blocks.0.attn.{p}.lora_A.weight"] * (alpha / rank)
             for p in ("to_q", "to_k", "to_v")]
    assert torch.allclose(fused, torch.cat(parts), atol=2e-3 * float(fused.abs().max()))
    single = delta("lora_unet_joint_blocks_0_context_block_mlp_fc1")
    own = peft["transformer.transformer_blocks.0.ff_context.net.0.proj.lora_B.weight"] \
        @ peft["transformer.transformer_blocks.0.ff_context.net.0.proj.lora_A.weight"] * (alpha / rank)
    assert torch.allclose(single, own, atol=2e-3 * float(own.abs().max()))


def test_a_run_on_the_keys_and_values_only_fuses_them_with_zero_queries(base, dataset, tmp_path):
    from trainer.export.mmdit import mmdit_state_dict

    a = {p: torch.randn(4, 32) for p in ("add_k_proj", "add_v_proj")}
    b = {p: torch.randn(32, 4) for p in a}
    state = {f"transformer_blocks.1.attn.{p}.lora_{x}.weight": (a if x == "A" else b)[p] for p in a for x in "AB"}
    out = mmdit_state_dict(state, lambda module: (4, 2.0), dtype=torch.float32)
    down = out["lora_unet_joint_blocks_1_context_block_attn_qkv.lora_down.weight"]
    up = out["lora_unet_joint_blocks_1_context_block_attn_qkv.lora_up.weight"]
    alpha = float(out["lora_unet_joint_blocks_1_context_block_attn_qkv.alpha"])
    assert down.shape == (8, 32) and up.shape == (96, 8) and alpha == 4.0
    full = up @ down * (alpha / down.shape[0])
    assert torch.equal(full[:32], torch.zeros(32, 32))  # no query LoRA
    assert torch.allclose(full[32:64], b["add_k_proj"] @ a["add_k_proj"] * 0.5, atol=1e-6)
    assert torch.allclose(full[64:], b["add_v_proj"] @ a["add_v_proj"] * 0.5, atol=1e-6)


def test_t5_never_runs_in_fp16_and_the_scaler_skips_overflow(base, dataset, tmp_path):
    """fp16 on the CPU (autocast runs the matmuls in fp16, as on a GPU; the frozen weights stay fp32 there): the
    transformer's layers compute in fp16, T5's outside autocast in its own dtype, and the loss scaler works."""
    cfg = tiny_config(dataset, tmp_path, {"train.precision": "fp16", "train.max_steps": 3}, base=str(base))
    seen: dict[str, set] = {"t5": set(), "transformer": set()}

    class Watch(Overflow):
        hooked = False

        def batch_latents(self, trainer, latents):
            if not self.hooked:
                self.hooked = True
                for name, layer in (("t5", trainer.models.pipe.text_encoder_3.encoder.block[0].layer[0].SelfAttention.q),
                                    ("transformer", trainer.models.denoiser.transformer_blocks[0].ff.net[2])):
                    layer.register_forward_hook(lambda m, i, out, name=name: seen[name].add(out.dtype))
            return super().batch_latents(trainer, latents)

    result = run_training(cfg, MemorySink(), hooks=Watch((1, 2)))
    assert result.status == "finished", result.message
    assert seen == {"t5": {torch.float32}, "transformer": {torch.float16}}
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    assert all(r["loss_scale"] is not None for r in rows) and any(r["skipped"] for r in rows)
    assert [r["step"] for r in rows if not r["skipped"]] == [1, 2, 3]


def test_fp16_weights_keep_t5_in_fp32():
    from trainer.models.family import family
    from trainer.models.tiny import build_tiny_pipeline

    pipe = build_tiny_pipeline("sd3")
    pipe.to(torch.float16)
    family("sd3").prepare_weights(pipe, torch.float16)
    assert pipe.text_encoder_3.dtype == torch.float32 and pipe.transformer.dtype == torch.float16


def test_a_base_without_t5_conditions_on_zeros_in_its_place(base, dataset, tmp_path):
    from trainer.models.conditioning import TextConditioner
    from trainer.models.tiny import build_tiny_pipeline

    pipe = build_tiny_pipeline("sd3")
    with_t5 = TextConditioner(pipe, "sd3", torch.device("cpu"), cache=False)
    hidden, pooled = with_t5(["zxc, on grass"])
    pipe.text_encoder_3, pipe.tokenizer_3 = None, None
    without = TextConditioner(pipe, "sd3", torch.device("cpu"), cache=False)
    hidden0, pooled0 = without(["zxc, on grass"])
    assert hidden0.shape == hidden.shape == (1, 77 + 256, 64) and torch.equal(pooled0, pooled)
    assert torch.equal(hidden0[:, :77], hidden[:, :77]) and not hidden0[:, 77:].any()


def test_a_stopped_sd3_run_resumes_bit_for_bit(base, dataset, tmp_path):
    assert_stopped_run_resumes_bit_for_bit(str(base), dataset, tmp_path)


def test_review_sweeps_strength_and_the_doctor_diagnoses_an_sd3_run(run):
    assert_sweeps_and_diagnoses(run[0].run_dir)


def test_the_memory_plan_sizes_sd35_medium_and_large_and_warns_what_is_provisional(monkeypatch):
    from trainer.config.schema import from_dict
    from trainer.models.families.sd3 import SD3
    from trainer.plan.memory import estimate_memory

    gib = 2**30
    for size, denoiser_gib in (("sd3", 4.0), ("sd3-large", 15.0)):
        folder = Path(__file__).resolve().parents[1] / "trainer" / "models" / "model_configs" / size
        cfg = from_dict({"model": {"base": str(folder), "family": "sd3"}, "dataset": {"resolution": 1024},
                         "lora": {"rank": 16, "alpha": 16.0}, "train": {"precision": "bf16", "device": "cpu"}})
        plan = estimate_memory(cfg, free=24 * gib)
        assert plan.parts["unet_weights"] > denoiser_gib * gib  # 2.5 B / 8.1 B parameters in bf16
        assert plan.parts["text_encoder_weights"] > 10 * gib  # T5-XXL alone is 4.7 B
        assert plan.warnings == [] and plan.parts["activations"] > 8 * gib  # 1024 px: 4,096 picture tokens
        cfg.train.gradient_checkpointing = True  # each block keeps its inputs; one block's recompute at a time
        checkpointed = estimate_memory(cfg, free=24 * gib)
        assert checkpointed.warnings == []  # measured (bench/memory_depth.py), not derived
        assert plan.parts["activations"] / 20 < checkpointed.parts["activations"] < plan.parts["activations"] / 8
    # a (precision, checkpointing) cell whose figures are derived rather than measured is said to be so
    monkeypatch.setattr(SD3, "provisional_activations", frozenset({("half", True)}))
    plan = estimate_memory(cfg, free=24 * gib)
    assert [w.code for w in plan.warnings] == ["memory.warn.provisional"]


def test_min_snr_on_a_flow_family_is_said_to_do_nothing_not_silently_dropped():
    from trainer.config.schema import from_dict
    from trainer.models.families.noise import FlowMatchSchedule
    from trainer.plan.memory import estimate_memory

    configs = Path(__file__).resolve().parents[1] / "trainer" / "models" / "model_configs"
    codes = {}
    for family in ("sd3", "sd15"):
        cfg = from_dict({"model": {"base": str(configs / family), "family": family}, "dataset": {"resolution": 512},
                         "train": {"precision": "bf16", "device": "cpu", "min_snr_gamma": 5.0}})
        codes[family] = [w.code for w in estimate_memory(cfg, free=None).warnings]
    assert "memory.warn.min_snr" in codes["sd3"] and "memory.warn.min_snr" not in codes["sd15"]
    schedule = FlowMatchSchedule({"num_train_timesteps": 1000, "shift": 3.0})
    assert schedule.weights(torch.tensor([3, 500]), 5.0) is None  # and the loss ignores it indeed
