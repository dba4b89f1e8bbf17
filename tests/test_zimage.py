"""Z-Image as a family: the tiny model from the CLI, a run with rectified-flow training and samples, the training
target against the pipeline's own denoising step, LoRA files diffusers' Z-Image pipeline loads (every key onto a
module) and ComfyUI's layout (its model's names, q/k/v fused exactly), a bitwise resume, the text encoder off the
device, the memory plan at 1024 px, and Turbo refused by its own configs and file metadata."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

import words
from tests.helpers import (
    assert_stopped_run_resumes_bit_for_bit,
    assert_sweeps_and_diagnoses,
    kohya_delta,
    six_step_run,
    tiny_config,
    tiny_model_folder,
    write_toy_dataset,
)
from trainer.errors import UserError
from trainer.io import read_jsonl
from trainer.models.conditioning import CPU, TextConditioner
from trainer.models.family import family
from trainer.run.events import Alert, MemorySink, Started
from trainer.train.loop import run_training

CONFIGS = Path(__file__).resolve().parents[1] / "trainer" / "models" / "model_configs"


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tiny_model_folder(tmp_path_factory, "zimage")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_toy_dataset(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def run(base, dataset, tmp_path_factory):
    return six_step_run(base, dataset, tmp_path_factory.mktemp("runs"))


def _pipe(base):
    from diffusers import ZImagePipeline

    pipe = ZImagePipeline.from_pretrained(str(base))
    pipe.set_progress_bar_config(disable=True)
    return pipe


def test_the_tiny_model_is_a_zimage_pipeline_with_qwen3_and_its_chat_template(base):
    index = json.loads((base / "model_index.json").read_text())
    assert index["_class_name"] == "ZImagePipeline"
    assert index["transformer"] == ["diffusers", "ZImageTransformer2DModel"]
    assert index["text_encoder"] == ["transformers", "Qwen3Model"]
    assert index["tokenizer"] == ["transformers", "Qwen2Tokenizer"]
    assert index["scheduler"] == ["diffusers", "FlowMatchEulerDiscreteScheduler"]
    tokenizer = _pipe(base).tokenizer
    text = tokenizer.apply_chat_template([{"role": "user", "content": "zxc, 잔디 위"}], tokenize=False,
                                         add_generation_prompt=True, enable_thinking=True)
    assert text == "<|im_start|>user\nzxc, 잔디 위<|im_end|>\n<|im_start|>assistant\n"
    ids = tokenizer([text]).input_ids[0]
    assert ids[0] == tokenizer.convert_tokens_to_ids("<|im_start|>") and tokenizer.pad_token == "<|endoftext|>"


def test_six_steps_train_with_flow_matching_and_draw_samples(run):
    result, sink = run
    started = next(e for e in sink.events if isinstance(e, Started))
    assert started.base["family"] == "zimage" and started.base["prediction_type"] == "flow"
    assert not started.base["distilled"]
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert all(math.isfinite(r["loss"]) and r["loss_scale"] is None for r in rows)
    for step in (0, 3, 6):
        manifest = json.loads((result.run_dir / "samples" / f"step-{step:06d}" / "manifest.json").read_text())
        assert manifest["samples"] and all((result.run_dir / "samples" / f"step-{step:06d}" / s["file"]).is_file()
                                           for s in manifest["samples"])
    measures = read_jsonl(result.run_dir / "measures.jsonl")
    assert [m["step"] for m in measures][:1] == [0] and "subject" in measures[0]
    assert any(math.isfinite(r.get("val_loss", math.nan)) for r in rows)


def test_the_conditioning_is_the_pipelines_own_prompt_embedding(base):
    """The trainer's text (chat template, mask, second-to-last layer, padding dropped in predict) is what
    ZImagePipeline.encode_prompt gives, token for token."""
    pipe = _pipe(base)
    captions = ["zxc, on grass", "a much longer caption of a person standing in a city street at night"]
    hidden, mask = TextConditioner(pipe, "zimage", CPU, cache=True)(captions)
    theirs, _ = pipe.encode_prompt(list(captions), device=CPU, do_classifier_free_guidance=False)
    assert hidden.shape == (2, 512, 32) and mask.shape == (2, 512)
    for h, m, t in zip(hidden, mask, theirs):
        assert torch.allclose(h[m > 0.5], t, atol=1e-5)


@pytest.mark.parametrize("index", [120, 600, 950])
def test_the_training_target_is_the_direction_the_pipelines_sampler_integrates(base, index):
    """At a known noise level σ the trainer's prediction is exactly what ZImagePipeline's own Euler step integrates
    (it gives the transformer 1 − σ and negates its output), and the loss is measured against noise − x0: a
    prediction equal to the target would carry the noisy latents to the clean ones in one step."""
    import torch.nn.functional as F

    zimage, pipe = family("zimage"), _pipe(base)
    schedule = zimage.noise_schedule(pipe.scheduler.config, "flow")
    t = torch.tensor([index])
    sigma = float(schedule.model_timesteps(t)[0]) / 1000
    gen = torch.Generator().manual_seed(index)
    x0, noise = torch.randn(1, 16, 32, 32, generator=gen), torch.randn(1, 16, 32, 32, generator=gen)
    noisy, target = schedule.noised(x0, noise, t)
    assert torch.allclose(target, noise - x0)
    prompt = "zxc, on grass"
    hidden, mask = TextConditioner(pipe, "zimage", CPU, cache=False)([prompt])
    with torch.no_grad():
        pred = zimage.predict(pipe.transformer, noisy, schedule.model_timesteps(t), hidden, mask, [(64, 64)])
    # the pipeline, one step from σ to 0 (it shifts the sigmas it is given by its shift: give it the unshifted σ)
    shift = float(pipe.scheduler.config.shift)
    unshifted = sigma / (shift - (shift - 1) * sigma)
    out = pipe(prompt=[prompt], latents=noisy.clone(), sigmas=[unshifted], num_inference_steps=1, guidance_scale=0.0,
               height=64, width=64, output_type="latent").images
    assert abs(float(pipe.scheduler.sigmas[0]) - sigma) < 1e-5 and float(pipe.scheduler.sigmas[-1]) == 0.0
    integrated = (noisy - out) / sigma  # x_next = x + (0 − σ)·v
    assert torch.allclose(pred, integrated, atol=1e-4), float((pred - integrated).abs().max())
    assert torch.allclose(F.mse_loss(pred, target), F.mse_loss(integrated, target), atol=1e-5)
    assert torch.allclose(noisy - sigma * target, x0, atol=1e-5)


def test_the_diffusers_file_loads_into_the_zimage_pipeline_with_every_key_used(run, base):
    result, _ = run
    path = result.run_dir / "final" / "lora_diffusers.safetensors"
    saved = load_file(str(path))
    pipe = _pipe(base)
    before = {k: v.clone() for k, v in pipe.transformer.state_dict().items()}
    pipe.load_lora_weights(str(path.parent), weight_name=path.name, adapter_name="run")
    used = 0
    for key, tensor in saved.items():
        m = re.fullmatch(r"transformer\.(.+)\.lora_([AB])\.weight", key)
        assert m, key
        loaded = getattr(pipe.transformer.get_submodule(m[1]), f"lora_{m[2]}")["run"].weight
        assert torch.equal(loaded.float(), tensor.float()), key
        used += 1
    assert used == len(saved)
    assert {m[1] for m in (re.match(r"transformer\.(\w+)\.", k) for k in saved) if m} == \
        {"layers", "noise_refiner", "context_refiner"}
    pipe.fuse_lora(adapter_names=["run"])
    pipe.unload_lora_weights()
    after = pipe.transformer.state_dict()
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert any(".attention.to_q." in k for k in changed) and any(".feed_forward.w2." in k for k in changed)


def comfy_state_dict(transformer) -> dict[str, torch.Tensor]:
    """The transformer's weights under the original (ComfyUI) names: q, k and v fused into attention.qkv, the output
    as attention.out, the norms of q and k as q_norm / k_norm, the embedder and final layer outside their dicts."""
    sd = transformer.state_dict()
    out = {}
    for key, value in sd.items():
        if ".attention.to_k." in key or ".attention.to_v." in key:
            continue
        if ".attention.to_q." in key:
            out[key.replace(".to_q.", ".qkv.")] = torch.cat([value, sd[key.replace(".to_q.", ".to_k.")],
                                                             sd[key.replace(".to_q.", ".to_v.")]])
            continue
        new = key.replace(".attention.to_out.0.", ".attention.out.").replace(".norm_q.", ".q_norm.")
        new = new.replace(".norm_k.", ".k_norm.").replace("all_final_layer.2-1.", "final_layer.")
        out[new.replace("all_x_embedder.2-1.", "x_embedder.")] = value
    return out


def test_the_comfyui_names_are_the_original_layout_diffusers_converts_back(base):
    """The names the ComfyUI file is written against are the original Z-Image layout: diffusers' own single-file
    converter turns them back into the transformer's state dict, tensor for tensor."""
    from diffusers.loaders.single_file_utils import convert_z_image_transformer_checkpoint_to_diffusers

    transformer = _pipe(base).transformer
    original = {f"model.diffusion_model.{k}": v for k, v in comfy_state_dict(transformer).items()}
    back = convert_z_image_transformer_checkpoint_to_diffusers(original)
    sd = transformer.state_dict()
    assert back.keys() == sd.keys() and all(torch.equal(back[k], sd[k]) for k in sd)


def test_the_comfyui_file_names_its_model_and_fuses_qkv_exactly(run, base):
    """Every key maps onto the ComfyUI model as comfy/lora.py maps ``lora_unet_*`` (its ``diffusion_model.``
    weights' names, dots as underscores) with the layer's shape, and the fused q/k/v change is the parts' one."""
    result, _ = run
    comfy = load_file(str(result.run_dir / "final" / "lora.safetensors"))
    peft = load_file(str(result.run_dir / "final" / "lora_diffusers.safetensors"))
    model = {"lora_unet_" + k.removesuffix(".weight").replace(".", "_"): v.shape
             for k, v in comfy_state_dict(_pipe(base).transformer).items() if k.endswith(".weight")}
    names = {k.split(".")[0] for k in comfy}
    assert names and names <= set(model), sorted(names - set(model))[:5]
    assert {k.rsplit(".", 2)[0] if k.endswith(".weight") else k.rsplit(".", 1)[0] for k in comfy} == names
    for name in names:
        down, up = comfy[f"{name}.lora_down.weight"].float(), comfy[f"{name}.lora_up.weight"].float()
        assert (up @ down).shape == model[name] and f"{name}.alpha" in comfy
    assert any(n.endswith("_attention_qkv") for n in names) and not any("_to_q" in n for n in names)

    def delta(prefix: str) -> torch.Tensor:
        return kohya_delta(comfy, prefix)

    rank, alpha = 4, 4.0  # tiny_config's
    for block in ("layers_1", "noise_refiner_0", "context_refiner_0"):
        dotted = block.replace("_0", ".0").replace("_1", ".1")
        fused = delta(f"lora_unet_{block}_attention_qkv")
        parts = [peft[f"transformer.{dotted}.attention.{p}.lora_B.weight"]
                 @ peft[f"transformer.{dotted}.attention.{p}.lora_A.weight"] * (alpha / rank)
                 for p in ("to_q", "to_k", "to_v")]
        assert torch.allclose(fused, torch.cat(parts), atol=2e-3 * float(fused.abs().max()))
    single = delta("lora_unet_layers_0_attention_out")
    own = peft["transformer.layers.0.attention.to_out.0.lora_B.weight"] \
        @ peft["transformer.layers.0.attention.to_out.0.lora_A.weight"] * (alpha / rank)
    assert torch.allclose(single, own, atol=2e-3 * float(own.abs().max()))


def test_keys_and_values_alone_fuse_with_zero_queries():
    """lora.targets = "cross_kv" trains the joint attention's keys and values: the fused layer's query rows are 0."""
    from trainer.export.zimage import zimage_state_dict

    a = {p: torch.randn(4, 32) for p in ("to_k", "to_v")}
    b = {p: torch.randn(32, 4) for p in a}
    state = {f"layers.1.attention.{p}.lora_{x}.weight": (a if x == "A" else b)[p] for p in a for x in "AB"}
    out = zimage_state_dict(state, lambda module: (4, 2.0), dtype=torch.float32)
    name = "lora_unet_layers_1_attention_qkv"
    down, up, alpha = out[f"{name}.lora_down.weight"], out[f"{name}.lora_up.weight"], float(out[f"{name}.alpha"])
    assert down.shape == (8, 32) and up.shape == (96, 8) and alpha == 4.0
    full = up @ down * (alpha / down.shape[0])
    assert torch.equal(full[:32], torch.zeros(32, 32))
    assert torch.allclose(full[32:64], b["to_k"] @ a["to_k"] * 0.5, atol=1e-6)
    assert torch.allclose(full[64:], b["to_v"] @ a["to_v"] * 0.5, atol=1e-6)


def test_a_stopped_zimage_run_resumes_bit_for_bit(base, dataset, tmp_path):
    assert_stopped_run_resumes_bit_for_bit(str(base), dataset, tmp_path)


def test_review_sweeps_strength_and_the_doctor_diagnoses_a_zimage_run(run):
    assert_sweeps_and_diagnoses(run[0].run_dir)


def test_the_text_encoder_off_the_device_trains_and_draws_the_same(dataset, tmp_path):
    """model.offload_text_encoders: the captions and the sample prompts (the pipeline's lists of per-prompt
    tensors) encoded before training give the same losses and the same pictures, byte for byte."""
    import hashlib

    def one(out: Path, offload: bool):
        cfg = tiny_config(dataset, out, {
            "model.offload_text_encoders": offload, "train.max_steps": 2, "validation.holdout": 1,
            "sample.enabled": True, "sample.steps": 2, "sample.negative_prompt": "blurry"}, base="tiny-zimage")
        result = run_training(cfg, MemorySink())
        assert result.status == "finished", result.message
        pictures = {p.name: hashlib.sha1(p.read_bytes()).hexdigest()
                    for p in sorted((result.run_dir / "samples").rglob("*.png"))}
        return [(r["loss"], r.get("val_loss")) for r in read_jsonl(result.run_dir / "metrics.jsonl")], pictures

    off, on = one(tmp_path / "off", False), one(tmp_path / "on", True)
    assert on == off and on[1]


def test_the_memory_plan_sizes_zimage_at_1024_px():
    from trainer.config.schema import from_dict
    from trainer.plan.memory import estimate_memory

    gib = 2**30
    cfg = from_dict({"model": {"base": str(CONFIGS / "zimage"), "family": "zimage"}, "dataset": {"resolution": 1024},
                     "lora": {"rank": 16, "alpha": 16.0}, "train": {"precision": "bf16", "device": "cpu"}})
    plan = estimate_memory(cfg, free=24 * gib)
    assert [w.code for w in plan.warnings] == ["memory.warn.provisional"]  # bf16's cells are fp32's scaled
    assert 11 * gib < plan.parts["unet_weights"] < 13 * gib  # 6.15 B parameters in bf16
    assert 7 * gib < plan.parts["text_encoder_weights"] < 8.5 * gib  # Qwen3-4B
    assert plan.parts["activations"] > 4 * gib  # 1024 px: 4,096 picture tokens through 34 blocks of 3840
    cfg.train.gradient_checkpointing = True
    checkpointed = estimate_memory(cfg, free=24 * gib)
    assert plan.parts["activations"] / 40 < checkpointed.parts["activations"] < plan.parts["activations"] / 5
    cfg.lora.train_text_encoder = True  # Qwen3 never takes a LoRA here: nothing more to hold
    assert estimate_memory(cfg, free=24 * gib).parts["lora_weights"] == checkpointed.parts["lora_weights"]
    # the Hub ids go by the shipped configs: Turbo's the same architecture
    turbo = from_dict({"model": {"base": "Tongyi-MAI/Z-Image-Turbo", "allow_distilled": True},
                       "dataset": {"resolution": 1024}, "train": {"precision": "bf16", "device": "cpu"}})
    assert estimate_memory(turbo, free=None).parts["unet_weights"] == plan.parts["unet_weights"]


# ------------------------------------------------------------------------------------------ distilled


def _save_with_shift(base: Path, out: Path, shift: float, name_or_path: str | None = None) -> Path:
    """The tiny base copied to ``out`` with its scheduler's shift set (Turbo ships 3.0, the base 6.0)."""
    import shutil

    shutil.copytree(base, out)
    path = out / "scheduler" / "scheduler_config.json"
    config = json.loads(path.read_text())
    config["shift"] = shift
    path.write_text(json.dumps(config))
    return out


def test_a_base_with_the_step_distilled_shift_is_refused_whatever_its_folder_is_called(base, dataset, tmp_path):
    folder = _save_with_shift(base, tmp_path / "my-model", 3.0)  # no distilled word in the name
    cfg = tiny_config(dataset, tmp_path / "out", {"train.max_steps": 1}, base=str(folder))
    with pytest.raises(UserError) as e:
        run_training(cfg, MemorySink())
    for lang in ("en", "ko"):
        said = words.say(e.value.msg, lang)
        assert "3.0" in said and "Tongyi-MAI/Z-Image" in said and "model.allow_distilled" in said, said
    assert "generic" in words.say(e.value.msg, "en") and "Turbo" in words.say(e.value.msg, "en")


def test_a_step_distilled_base_trains_when_allowed_and_the_doctor_says_why(base, dataset, tmp_path):
    from trainer.doctor.diagnose import diagnose

    folder = _save_with_shift(base, tmp_path / "my-model", 3.0)
    cfg = tiny_config(dataset, tmp_path / "out", {"train.max_steps": 1, "model.allow_distilled": True},
                      base=str(folder))
    sink = MemorySink()
    result = run_training(cfg, sink)
    assert result.status == "finished", result.message
    [alert] = [e for e in sink.events if isinstance(e, Alert) and e.kind == "distilled_base"]
    assert "Z-Image-Turbo" in words.say(alert.message, "en") and "Z-Image-Turbo" in words.say(alert.message, "ko")
    report = diagnose(result.run_dir, write=False)
    [observed] = [f for f in report["observed"] if f["signal"] == "distilled_base"]
    assert "Tongyi-MAI/Z-Image" in str(observed) and any(c["id"] == "distilled_base" for c in report["causes"])


def test_the_base_is_not_distilled_and_turbos_configs_are_its_own():
    from trainer.models.base_files import BaseConfigs
    from trainer.models.families.zimage import ZImage

    def configs_of(folder: str) -> BaseConfigs:
        config = json.loads((CONFIGS / folder / "scheduler" / "scheduler_config.json").read_text())
        transformer = json.loads((CONFIGS / folder / "transformer" / "config.json").read_text())
        return BaseConfigs(scheduler=config, denoiser=transformer)

    zimage = ZImage()
    assert zimage.distilled_reason(configs_of("zimage")) is None
    assert zimage.distilled_reason(configs_of("zimage-turbo")).code == "zimage.distilled_turbo"
    # the two differ in their scheduler's shift alone (and the diffusers version that wrote them)
    for part in ("transformer/config.json", "vae/config.json", "text_encoder/config.json"):
        a, b = (json.loads((CONFIGS / f / part).read_text()) for f in ("zimage", "zimage-turbo"))
        a.pop("_diffusers_version", None)
        b.pop("_diffusers_version", None)
        assert a == b, part


def test_a_single_file_is_turbo_by_its_metadata_not_its_name(tmp_path):
    from trainer.models.families.zimage import distilled_word_in_metadata

    zimage = family("zimage")
    tensor = {"model.diffusion_model.layers.0.adaLN_modulation.0.weight": torch.zeros(2, 2)}
    titled = tmp_path / "model.safetensors"
    save_file(tensor, str(titled), metadata={"modelspec.title": "Z-Image Turbo", "modelspec.architecture": "zimage"})
    named = tmp_path / "z_image_turbo_bf16.safetensors"
    save_file(tensor, str(named), metadata={"modelspec.architecture": "zimage"})
    assert distilled_word_in_metadata(titled) == "turbo" and distilled_word_in_metadata(named) is None
    assert zimage.checkpoint_config_dir(titled) == CONFIGS / "zimage-turbo"
    assert zimage.checkpoint_config_dir(named) == CONFIGS / "zimage"
    from trainer.models.base_files import checkpoint_keys
    from trainer.models.family import family_of_checkpoint_keys

    assert family_of_checkpoint_keys(checkpoint_keys(named)).name == "zimage"


def test_the_24_gb_preset_fits_a_24_gb_card_with_qwen3_off_it(tmp_path):
    """zimage-character on a 24 GiB GPU: Qwen3 encodes first (its 7.5 GiB alone on the card), then the 6 B
    transformer trains with gradient checkpointing; both phases within the plan's 85 %."""
    from trainer.config.presets import preset_config
    from trainer.plan.memory import TIGHT_SHARE, estimate_memory

    gib = 2**30
    cfg = preset_config("zimage-character")
    cfg.model.base = str(CONFIGS / "zimage")
    plan = estimate_memory(cfg, device=torch.device("cuda"), free=24 * gib, device_name="24 GiB GPU", bf16=True)
    assert plan.encode is not None and plan.parts["text_encoder_weights"] == 0
    assert plan.total <= TIGHT_SHARE * 24 * gib and plan.verdict == "fits", plan.total / gib
    cfg.model.offload_text_encoders = False  # with Qwen3 kept on the card it is tight or worse
    assert estimate_memory(cfg, device=torch.device("cuda"), free=24 * gib, bf16=True).total > plan.total + 7 * gib
