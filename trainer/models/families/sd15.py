"""Stable Diffusion 1.x: one CLIP-L text encoder, the UNet conditioned on its last hidden state alone."""

from __future__ import annotations

from typing import ClassVar

from trainer.models.family import Activations, ModelFamily, TextEncoder, register


@register
class SD15(ModelFamily):
    name = "sd15"
    label = "SD 1.5"
    pipeline_class_name = "StableDiffusionPipeline"
    text_encoders = (TextEncoder("text_encoder", "tokenizer", "CLIPTextModel", "te", "lora_te", "emb_params"),)
    kohya_script = "train_network.py"
    base_model_version = "sd_v1"
    modelspec_architecture = "stable-diffusion-v1/lora"
    # Measured on the CPU at the allocator (live tensor bytes), SDPA attention, rank-16 attention LoRA, fitted on
    # the 256 and 320 px cells at batch 1 and 128 px at batch 4 (bench/bench_memory.py --fit); the README's table
    # holds every cell. The per-step term is minus the LoRA gradients: they are part of the per-sample bytes.
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

    def build_tiny(self, vae, scheduler, seed: int):
        from diffusers import StableDiffusionPipeline

        from trainer.models.tiny import tiny_text_encoder, tiny_unet
        from trainer.models.tokenizer import clip_tokenizer

        unet = tiny_unet(
            seed,
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
            cross_attention_dim=32,
            attention_head_dim=8,
        )
        return StableDiffusionPipeline(
            vae=vae,
            text_encoder=tiny_text_encoder(False, seed + 2),
            tokenizer=clip_tokenizer(),
            unet=unet,
            scheduler=scheduler,
            safety_checker=None,
            feature_extractor=None,
            requires_safety_checker=False,
        )

    def encode_text(self, encoders, input_ids):
        return encoders[0](input_ids[0])[0], None
