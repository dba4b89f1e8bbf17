"""Stable Diffusion 1.x: one CLIP-L text encoder, the UNet conditioned on its last hidden state alone."""

from __future__ import annotations

from typing import Any, ClassVar

from trainer.models.families.unet import UNetFamily
from trainer.models.family import Activations, TextEncoder, register


@register
class SD15(UNetFamily):
    name = "sd15"
    order = 10
    label = "SD 1.5"
    pipeline_class_name = "StableDiffusionPipeline"
    text_encoders = (TextEncoder("text_encoder", "tokenizer", "CLIPTextModel", "te", "lora_te", "emb_params"),)
    kohya_script = "train_network.py"
    base_model_version = "sd_v1"
    modelspec_architecture = "stable-diffusion-v1/lora"
    # Measured on the CPU at the allocator (live tensor bytes), SDPA attention, rank-16 attention LoRA, fitted on
    # the 256 and 320 px cells at batch 1 and 128 px at batch 4 (bench/bench_memory.py --fit); the table in
    # docs/memory.md holds every cell. The per-step term is minus the LoRA gradients: they are part of the
    # per-sample bytes.
    activations: ClassVar[Activations] = {
        ("fp32", False): (-12_754_940, 7_859_968, 407_368.9),
        ("fp32", True): (-12_754_940, 216_448, 118_184.0),
        ("half", False): (-7_194_620, 7_714_688, 226_462.9),
        ("half", True): (-12_611_580, 344_768, 61_692.0),
    }
    # Fitted through the 64 px cells at batch 1 and 2 and the 128 px cell at batch 1 (bench_memory.py --fit); the
    # 96, 112 and 160 px cells and 64 px at batch 4 are held out.
    small_latent_activations: ClassVar[Activations] = {
        ("fp32", True): (-770_044, -593_195, 74_530.7),
        ("half", True): (-579_324, 326_933, 33_448.7),
    }
    reference_widths = 320 + 640 + 1280 + 1280

    def load_kwargs(self):
        return {"safety_checker": None, "requires_safety_checker": False}

    def build_tiny(self, seed: int, prediction_type: str):
        from diffusers import StableDiffusionPipeline

        from trainer.models.families.unet import ddim_scheduler
        from trainer.models.tiny import tiny_text_encoder, tiny_unet, tiny_vae, train_scheduler_config
        from trainer.models.tokenizer import clip_tokenizer

        unet = tiny_unet(
            seed,
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
            cross_attention_dim=32,
            attention_head_dim=8,
        )
        return StableDiffusionPipeline(
            vae=tiny_vae(seed + 1),
            text_encoder=tiny_text_encoder(False, seed + 2),
            tokenizer=clip_tokenizer(),
            unet=unet,
            scheduler=ddim_scheduler(train_scheduler_config(prediction_type)),
            safety_checker=None,
            feature_extractor=None,
            requires_safety_checker=False,
        )

    def encode_text(self, encoders, input_ids):
        return encoders[0](input_ids[0])[0], None


def build_scaled(divisor: int = 8, seed: int = 0):
    """SD1.5 itself, every width divided by ``divisor``, random weights (for benchmarks).

    Read from the shipped SD1.5 configs: the same blocks, depths, head counts, 8x VAE with its mid attention,
    12-layer text encoder, scheduler and tokenizer; only channel widths shrink (norm groups follow so each
    group keeps SD1.5's channels per group where possible). Unlike ``tiny-sd15``, whose VAE is ~5% of a
    training step on a CPU, its VAE encode costs a share of the step close to the real model's.
    """
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    from trainer.models.family import family
    from trainer.models.tokenizer import clip_tokenizer

    folder = family("sd15").config_dir

    def narrow(cfg: dict[str, Any]) -> dict[str, Any]:
        widths = [c // divisor for c in cfg["block_out_channels"]]
        groups = max(g for g in (32, 16, 8, 4, 2, 1) if all(w % g == 0 for w in widths))
        return {**cfg, "block_out_channels": widths, "norm_num_groups": groups}

    torch.manual_seed(seed)
    unet_cfg = narrow(UNet2DConditionModel.load_config(str(folder / "unet")))
    unet_cfg["cross_attention_dim"] //= divisor
    unet = UNet2DConditionModel.from_config(unet_cfg)
    vae = AutoencoderKL.from_config(narrow(AutoencoderKL.load_config(str(folder / "vae"))))
    te_cfg = CLIPTextConfig.from_pretrained(str(folder / "text_encoder"))
    te_cfg.hidden_size //= divisor
    te_cfg.intermediate_size //= divisor
    assert te_cfg.projection_dim is not None  # SD's text encoder configs set it
    te_cfg.projection_dim //= divisor
    te_cfg.num_attention_heads = max(1, te_cfg.num_attention_heads // divisor)  # SD1.5's head width kept
    scheduler = DDIMScheduler.from_config(DDIMScheduler.load_config(str(folder / "scheduler")))
    return StableDiffusionPipeline(vae=vae, text_encoder=CLIPTextModel(te_cfg), tokenizer=clip_tokenizer(),
                                   unet=unet, scheduler=scheduler, safety_checker=None, feature_extractor=None,
                                   requires_safety_checker=False)
