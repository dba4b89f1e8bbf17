"""Flux.1 as a family: the tiny model from the CLI, a run with rectified-flow training (packed latents, a fixed
guidance) and samples, LoRA files diffusers' Flux pipeline loads (every key onto a module) and sd-scripts' layout with
q, k, v (and the single blocks' MLP input) fused exactly; T5 kept out of fp16; the distillation rule read from the
base's configs (dev trained with a note, schnell refused, a de-distilled base trained as it is)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import words
from tests.helpers import (
    Overflow,
    assert_stopped_run_resumes_bit_for_bit,
    assert_sweeps_and_diagnoses,
    kohya_delta,
    lora_modules,
    tiny_config,
    tiny_model_folder,
    write_toy_dataset,
)
from trainer.errors import UserError
from trainer.io import read_jsonl
from trainer.run.events import Alert, MemorySink, Started
from trainer.train.hooks import Hooks
from trainer.train.loop import run_training

CONFIGS = Path(__file__).resolve().parents[1] / "trainer" / "models" / "model_configs"


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tiny_model_folder(tmp_path_factory, "flux")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_toy_dataset(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def run(base, dataset, tmp_path_factory):
    cfg = tiny_config(dataset, tmp_path_factory.mktemp("runs"), {
        "train.max_steps": 6, "save.every_steps": 3, "sample.enabled": True, "lora.targets": "attn_ff",
        "lora.train_text_encoder": True, "measure.enabled": True, "validation.holdout": 2,
    }, base=str(base))
    sink = MemorySink()
    result = run_training(cfg, sink)
    assert result.status == "finished", result.message
    return result, sink


def _flux_base(folder: Path, guidance_embeds: bool, schnell: bool) -> Path:
    """The tiny model with another transformer (with or without the guidance embedding) and FLUX.1-dev's scheduler
    or FLUX.1-schnell's (no dynamic shift, shift 1), saved as a diffusers folder."""
    from diffusers import FlowMatchEulerDiscreteScheduler, FluxTransformer2DModel

    from trainer.models.tiny import build_tiny_pipeline

    pipe = build_tiny_pipeline("flux")
    config = dict(pipe.transformer.config)
    config["guidance_embeds"] = guidance_embeds
    torch.manual_seed(1)
    pipe.transformer = FluxTransformer2DModel.from_config(config)
    if schnell:
        pipe.scheduler = FlowMatchEulerDiscreteScheduler(num_train_timesteps=1000, shift=1.0, use_dynamic_shifting=False)
    pipe.save_pretrained(folder)
    return folder


def test_the_tiny_model_is_a_flux_pipeline(base):
    index = json.loads((base / "model_index.json").read_text())
    assert index["_class_name"] == "FluxPipeline"
    assert index["transformer"] == ["diffusers", "FluxTransformer2DModel"]
    assert index["text_encoder"] == ["transformers", "CLIPTextModel"]
    assert index["text_encoder_2"] == ["transformers", "T5EncoderModel"]
    assert json.loads((base / "transformer" / "config.json").read_text())["guidance_embeds"] is True


def test_six_steps_train_with_flow_matching_and_draw_samples(run):
    result, sink = run
    started = next(e for e in sink.events if isinstance(e, Started))
    assert started.base["family"] == "flux" and started.base["prediction_type"] == "flow"
    assert not started.base["distilled"]  # dev is trained (with the note below), not refused
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert all(math.isfinite(r["loss"]) for r in rows)
    for step in (0, 3, 6):
        manifest = json.loads((result.run_dir / "samples" / f"step-{step:06d}" / "manifest.json").read_text())
        assert manifest["samples"] and all((result.run_dir / "samples" / f"step-{step:06d}" / s["file"]).is_file()
                                           for s in manifest["samples"])
    measures = read_jsonl(result.run_dir / "measures.jsonl")
    assert [m["step"] for m in measures][:1] == [0] and "subject" in measures[0]
    assert any(math.isfinite(r.get("val_loss", math.nan)) for r in rows)
    [note] = [e for e in sink.events if isinstance(e, Alert) and e.kind == "distilled_base"]
    for lang in ("en", "ko"):
        said = words.say(note.message, lang)
        assert "model.guidance" in said and "FLUX.1-dev" in said and "1" in said


def test_the_forward_pass_is_flux_pipelines(base):
    """The adapter's prediction is the transformer called as FluxPipeline calls it: packed latents, the patch
    grid's ids, zero text ids, σ = t / 1000 and the run's guidance, unpacked back."""
    from diffusers import FluxPipeline

    from trainer.models.family import family

    pipe = FluxPipeline.from_pretrained(str(base))
    flux = family("flux")
    gen = torch.Generator().manual_seed(0)
    noisy, hidden = torch.randn(2, 16, 8, 6, generator=gen), torch.randn(2, 512, 64, generator=gen)
    pooled, t = torch.randn(2, 32, generator=gen), torch.tensor([250.0, 900.0])
    with torch.no_grad():
        ours = flux.predict(pipe.transformer, noisy, t, hidden, pooled, [(48, 64)] * 2)
        direct = pipe.transformer(
            hidden_states=FluxPipeline._pack_latents(noisy, 2, 16, 8, 6), timestep=t / 1000,
            guidance=torch.full((2,), 1.0), pooled_projections=pooled, encoder_hidden_states=hidden,
            txt_ids=torch.zeros(512, 3), img_ids=FluxPipeline._prepare_latent_image_ids(2, 4, 3, "cpu", torch.float32),
            return_dict=False)[0]
    assert ours.shape == noisy.shape
    assert torch.equal(ours, FluxPipeline._unpack_latents(direct, 64, 48, 8))
    # model.guidance reaches the transformer: another value, another prediction
    flux.apply_model_settings(pipe, type("M", (), {"guidance": 3.5})())
    with torch.no_grad():
        assert not torch.equal(flux.predict(pipe.transformer, noisy, t, hidden, pooled, []), ours)
    with pytest.raises(UserError, match="multiple of 16"):
        flux.predict(pipe.transformer, torch.randn(1, 16, 7, 8), t[:1], hidden[:1], pooled[:1], [])


def test_the_diffusers_file_loads_into_the_flux_pipeline_with_every_key_used(run, base):
    from diffusers import FluxPipeline

    result, _ = run
    path = result.run_dir / "final" / "lora_diffusers.safetensors"
    saved = load_file(str(path))
    pipe = FluxPipeline.from_pretrained(str(base))
    before = {k: v.clone() for k, v in pipe.transformer.state_dict().items()}
    pipe.load_lora_weights(str(path.parent), weight_name=path.name, adapter_name="run")
    components = {"transformer": pipe.transformer, "text_encoder": pipe.text_encoder}
    used = 0
    for key, tensor in saved.items():
        m = re.fullmatch(r"(transformer|text_encoder)\.(.+)\.lora_([AB])\.weight", key)
        assert m, key
        layer = components[m[1]].get_submodule(m[2])
        loaded = getattr(layer, f"lora_{m[3]}")["run"].weight
        assert torch.equal(loaded.float(), tensor.float()), key
        used += 1
    assert used == len(saved)
    assert any(k.startswith("text_encoder.") for k in saved)  # CLIP-L's LoRA went with it
    # every adapted layer of attn_ff, and the final layer (named proj_out as the single blocks' output) left alone
    adapted = set(lora_modules(pipe.transformer))
    assert {"single_transformer_blocks.1.proj_out", "single_transformer_blocks.0.proj_mlp",
            "transformer_blocks.1.ff_context.net.2", "single_transformer_blocks.0.attn.to_k"} <= adapted
    assert "proj_out" not in adapted
    pipe.fuse_lora(adapter_names=["run"])
    pipe.unload_lora_weights()
    after = pipe.transformer.state_dict()
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert any("single_transformer_blocks.0.proj_mlp." in k for k in changed)
    assert any(".attn.add_q_proj." in k for k in changed)




def test_the_kohya_file_names_sd_scripts_flux_modules_and_fuses_exactly(run, base):
    result, _ = run
    kohya = load_file(str(result.run_dir / "final" / "lora.safetensors"))
    peft = load_file(str(result.run_dir / "final" / "lora_diffusers.safetensors"))
    unet = {k.split(".")[0] for k in kohya if k.startswith("lora_unet_")}
    expected = {f"lora_unet_double_blocks_{i}_{m}" for i in range(2)
                for m in ("img_attn_qkv", "img_attn_proj", "img_mlp_0", "img_mlp_2",
                          "txt_attn_qkv", "txt_attn_proj", "txt_mlp_0", "txt_mlp_2")}
    expected |= {f"lora_unet_single_blocks_{i}_{m}" for i in range(2) for m in ("linear1", "linear2")}
    assert unet == expected
    assert {k.split("_")[1] for k in kohya if not k.startswith("lora_unet_")} == {"te1"}
    rank, alpha = 4, 4.0  # tiny_config's

    def trained(module: str) -> torch.Tensor:
        return peft[f"transformer.{module}.lora_B.weight"] @ peft[f"transformer.{module}.lora_A.weight"] * (alpha / rank)

    def close(a, b):
        return torch.allclose(a, b, atol=2e-3 * float(b.abs().max()))

    fused = kohya_delta(kohya, "lora_unet_double_blocks_1_txt_attn_qkv")
    assert close(fused, torch.cat([trained(f"transformer_blocks.1.attn.{p}")
                                   for p in ("add_q_proj", "add_k_proj", "add_v_proj")]))
    linear1 = kohya_delta(kohya, "lora_unet_single_blocks_0_linear1")
    assert linear1.shape == (3 * 32 + 4 * 32, 32) and float(kohya["lora_unet_single_blocks_0_linear1.alpha"]) == 16
    assert close(linear1, torch.cat([trained(f"single_transformer_blocks.0.{p}")
                                     for p in ("attn.to_q", "attn.to_k", "attn.to_v", "proj_mlp")]))
    assert close(kohya_delta(kohya, "lora_unet_single_blocks_1_linear2"), trained("single_transformer_blocks.1.proj_out"))
    assert close(kohya_delta(kohya, "lora_unet_double_blocks_0_img_mlp_0"), trained("transformer_blocks.0.ff.net.0.proj"))


def test_diffusers_kohya_loader_reads_the_double_blocks_and_clip(run, base):
    """diffusers' own sd-scripts Flux converter (what FluxPipeline.load_lora_weights does with such a file) puts the
    double-stream blocks' and CLIP-L's LoRA back onto the modules they trained, with the same change. (Its
    single-stream split has FLUX.1's widths written in: the full-width test, test_flux_real_shape.py, loads those.)"""
    from diffusers import FluxPipeline

    result, _ = run
    kohya = load_file(str(result.run_dir / "final" / "lora.safetensors"))
    peft = load_file(str(result.run_dir / "final" / "lora_diffusers.safetensors"))
    pipe = FluxPipeline.from_pretrained(str(base))
    pipe.load_lora_weights({k: v.float() for k, v in kohya.items() if not k.startswith("lora_unet_single_blocks_")},
                           adapter_name="kohya")
    trained = {k.rsplit(".", 2)[0] for k in peft if ".single_transformer_blocks." not in k}
    loaded = {f"transformer.{n}" for n in lora_modules(pipe.transformer)}
    loaded |= {f"text_encoder.{n}" for n in lora_modules(pipe.text_encoder)}
    assert loaded == trained
    for module in sorted(trained):
        component, name = module.split(".", 1)
        layer = getattr(pipe, component).get_submodule(name)
        theirs = layer.lora_B["kohya"].weight @ layer.lora_A["kohya"].weight * layer.scaling["kohya"]
        ours = peft[f"{module}.lora_B.weight"] @ peft[f"{module}.lora_A.weight"] * (4.0 / 4)  # tiny_config's alpha / rank
        assert torch.allclose(theirs, ours, atol=2e-3 * float(ours.abs().max())), module


def test_attention_only_fuses_linear1_with_zero_mlp_rows():
    """``lora.targets = "attn"`` trains the single blocks' q, k and v but not proj_mlp: linear1 still has the layer's
    full shape (ComfyUI adds it to the weight), with zeros in the MLP's rows; cross_kv fuses keys and values only."""
    from trainer.export.flux import flux_state_dict

    config = {"num_attention_heads": 2, "attention_head_dim": 8}  # width 16, the MLP 64
    a = {p: torch.randn(4, 16) for p in ("attn.to_q", "attn.to_k", "attn.to_v")}
    b = {p: torch.randn(16, 4) for p in a}
    state = {f"single_transformer_blocks.3.{p}.lora_{x}.weight": (a if x == "A" else b)[p] for p in a for x in "AB"}
    state |= {f"transformer_blocks.0.attn.add_{p}_proj.lora_{x}.weight": (a if x == "A" else b)[f"attn.to_{p}"]
              for p in ("k", "v") for x in "AB"}
    out = flux_state_dict(state, lambda module: (4, 2.0), config, dtype=torch.float32)
    full = kohya_delta(out, "lora_unet_single_blocks_3_linear1")
    assert full.shape == (3 * 16 + 64, 16) and float(out["lora_unet_single_blocks_3_linear1.alpha"]) == 6.0
    for i, p in enumerate(("attn.to_q", "attn.to_k", "attn.to_v")):
        assert torch.allclose(full[16 * i:16 * (i + 1)], b[p] @ a[p] * 0.5, atol=1e-6)
    assert torch.equal(full[48:], torch.zeros(64, 16))
    kv = kohya_delta(out, "lora_unet_double_blocks_0_txt_attn_qkv")
    assert kv.shape == (48, 16) and torch.equal(kv[:16], torch.zeros(16, 16))
    assert torch.allclose(kv[32:], b["attn.to_v"] @ a["attn.to_v"] * 0.5, atol=1e-6)


def test_fp16_weights_keep_t5_in_fp32_and_outside_autocast():
    from trainer.models.family import family
    from trainer.models.tiny import build_tiny_pipeline

    pipe = build_tiny_pipeline("flux")
    pipe.to(torch.float16)
    family("flux").prepare_weights(pipe, torch.float16)
    assert pipe.text_encoder_2.dtype == torch.float32 and pipe.transformer.dtype == torch.float16
    ids = torch.ones(1, 8, dtype=torch.long)
    with torch.autocast("cpu", dtype=torch.float16):
        assert pipe.text_encoder_2(ids)[0].dtype == torch.float32


def test_t5_never_runs_in_fp16_and_the_transformer_does(base, dataset, tmp_path):
    cfg = tiny_config(dataset, tmp_path, {"train.precision": "fp16", "train.max_steps": 2}, base=str(base))
    seen: dict[str, set] = {"t5": set(), "transformer": set()}

    class Watch(Overflow):
        hooked = False

        def batch_latents(self, trainer, latents):
            if not self.hooked:
                self.hooked = True
                for name, layer in (("t5", trainer.models.pipe.text_encoder_2.encoder.block[0].layer[0].SelfAttention.q),
                                    ("transformer", trainer.models.denoiser.single_transformer_blocks[0].proj_mlp)):
                    layer.register_forward_hook(lambda m, i, out, name=name: seen[name].add(out.dtype))
            return super().batch_latents(trainer, latents)

    result = run_training(cfg, MemorySink(), hooks=Watch(()))
    assert result.status == "finished", result.message
    assert seen == {"t5": {torch.float32}, "transformer": {torch.float16}}


def test_a_stopped_flux_run_resumes_bit_for_bit(base, dataset, tmp_path):
    assert_stopped_run_resumes_bit_for_bit(str(base), dataset, tmp_path)


def test_review_sweeps_strength_and_the_doctor_diagnoses_a_flux_run(run):
    report = assert_sweeps_and_diagnoses(run[0].run_dir)
    [note] = [o for o in report["observed"] if o["signal"] == "distilled_base"]  # the run's alert, in both languages
    assert "model.guidance" in note["message"]["en"] and "model.guidance" in note["message"]["ko"]


def test_the_memory_plan_sizes_flux1_dev_at_1024_px_and_says_it_is_guidance_distilled():
    from trainer.config.schema import from_dict
    from trainer.plan.memory import estimate_memory

    gib = 2**30
    cfg = from_dict({"model": {"base": str(CONFIGS / "flux"), "family": "flux"}, "dataset": {"resolution": 1024},
                     "lora": {"rank": 16, "alpha": 16.0}, "train": {"precision": "bf16", "device": "cpu"}})
    plan = estimate_memory(cfg, free=24 * gib)
    assert 22 * gib < plan.parts["unet_weights"] < 23 * gib  # 11.9 B parameters in bf16
    assert plan.parts["text_encoder_weights"] > 9 * gib  # T5-XXL's 4.7 B and CLIP-L
    assert plan.parts["activations"] > 20 * gib  # 4,096 picture tokens and 512 text tokens through 57 blocks
    assert [w.code for w in plan.warnings] == ["memory.warn.provisional", "flux.note.guidance_distilled"]
    cfg.train.gradient_checkpointing = True
    checkpointed = estimate_memory(cfg, free=24 * gib)
    assert checkpointed.parts["activations"] < plan.parts["activations"] / 8
    # a de-distilled base's configs (no guidance embedding, dev's scheduler) say nothing of distillation
    from trainer.models.family import family

    config = json.loads((CONFIGS / "flux" / "transformer" / "config.json").read_text())
    assert family("flux").distillation_note({**config, "guidance_embeds": False}, cfg.model) is None


def test_a_few_step_base_is_refused_unless_allowed_and_trains_with_256_t5_tokens(dataset, tmp_path):
    few_step = _flux_base(tmp_path / "few-step", guidance_embeds=False, schnell=True)  # its configs alone tell
    cfg = tiny_config(dataset, tmp_path / "runs", {"train.max_steps": 1}, base=str(few_step))
    with pytest.raises(UserError) as e:
        run_training(cfg, MemorySink())
    for lang in ("en", "ko"):
        said = words.say(e.value.msg, lang)
        assert "model.allow_distilled" in said and "FLUX.1-schnell" in said and "use_dynamic_shifting" in said
    cfg = tiny_config(dataset, tmp_path / "runs", {"train.max_steps": 1, "model.allow_distilled": True,
                                                   "sample.enabled": True}, base=str(few_step))
    seen = []

    class Tokens(Hooks):
        def before_step(self, trainer):
            seen.append(trainer.models.text.max_lengths)

    sink = MemorySink()
    result = run_training(cfg, sink, hooks=Tokens())
    assert result.status == "finished", result.message
    assert seen[0] == [77, 256]
    assert [e.kind for e in sink.events if isinstance(e, Alert) and e.kind == "distilled_base"] == ["distilled_base"]


def test_a_de_distilled_base_trains_without_a_note_and_samples_with_true_guidance(dataset, tmp_path, monkeypatch):
    """No guidance embedding and FLUX.1-dev's dynamic shift: trained as it is, no distillation alert; its samples are
    drawn with true classifier-free guidance at sample.guidance (the negative prompt's embeddings encoded up front
    with the prompts' when the text encoders leave the device)."""
    from diffusers import FluxPipeline

    base = _flux_base(tmp_path / "dedistilled", guidance_embeds=False, schnell=False)
    scales = []
    call = FluxPipeline.__call__

    def spy(self, *args, **kwargs):
        scales.append((kwargs.get("true_cfg_scale"), kwargs.get("negative_prompt_embeds") is not None))
        return call(self, *args, **kwargs)

    monkeypatch.setattr(FluxPipeline, "__call__", spy)
    cfg = tiny_config(dataset, tmp_path / "runs", {"train.max_steps": 1, "sample.enabled": True,
                                                   "model.offload_text_encoders": True}, base=str(base))
    sink = MemorySink()
    result = run_training(cfg, sink)
    assert result.status == "finished", result.message
    assert not [e for e in sink.events if isinstance(e, Alert) and e.kind == "distilled_base"]
    assert scales and set(scales) == {(3.0, True)}  # tiny_config's sample.guidance, a negative half
