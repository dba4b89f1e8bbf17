"""Tiny Stable Diffusion pipelines built offline from configs (SD1.5- and SDXL-shaped, for tests and the CLI's
``make-tiny``), SD1.5's own architecture at a fraction of its widths (for benchmarks), and saving a pipeline as a
diffusers folder or a single file. Nothing here downloads anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from trainer.models.family import family as model_family


def tiny_text_encoder(projection: bool, seed: int):
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

    config = CLIPTextConfig(
        vocab_size=49408,
        hidden_size=32,
        intermediate_size=64,
        num_attention_heads=4,
        num_hidden_layers=2,
        max_position_embeddings=77,
        projection_dim=32,
        bos_token_id=49406,
        eos_token_id=49407,
        pad_token_id=49407,
        hidden_act="quick_gelu",
    )
    torch.manual_seed(seed)
    cls = CLIPTextModelWithProjection if projection else CLIPTextModel
    return cls(config)


def tiny_unet(seed: int, **family_args):
    """A tiny UNet (two levels of 32 and 64 channels) with the family's blocks and conditioning."""
    from diffusers import UNet2DConditionModel

    torch.manual_seed(seed)
    return UNet2DConditionModel(sample_size=32, in_channels=4, out_channels=4, block_out_channels=(32, 64),
                                layers_per_block=2, norm_num_groups=32, **family_args)


def _tiny_vae(seed: int):
    from diffusers import AutoencoderKL

    torch.manual_seed(seed)
    return AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        block_out_channels=(32, 64),
        layers_per_block=1,
        latent_channels=4,
        norm_num_groups=32,
        sample_size=64,
    )


def _train_scheduler_config(prediction_type: str = "epsilon") -> dict[str, Any]:
    return dict(
        num_train_timesteps=1000,
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        prediction_type=prediction_type,
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
    )


def build_tiny_pipeline(family: str = "sd15", seed: int = 0, prediction_type: str = "epsilon"):
    """A tiny SD1.5- or SDXL-shaped pipeline (64×64 images, ~2 M params) with a real CLIP tokenizer; the
    family's adapter (:meth:`trainer.models.family.ModelFamily.build_tiny`) holds its UNet."""
    from diffusers import DDIMScheduler

    adapter = model_family(family)
    scheduler = DDIMScheduler(**_train_scheduler_config(prediction_type))
    return adapter.build_tiny(_tiny_vae(seed + 1), scheduler, seed)


def build_scaled_sd15(divisor: int = 8, seed: int = 0):
    """SD1.5 itself, every width divided by ``divisor``, random weights (for benchmarks).

    Read from the shipped SD1.5 configs: the same blocks, depths, head counts, 8x VAE with its mid attention,
    12-layer text encoder, scheduler and tokenizer; only channel widths shrink (norm groups follow so each
    group keeps SD1.5's channels per group where possible). Unlike ``tiny-sd15``, whose VAE is ~5% of a
    training step on a CPU, its VAE encode costs a share of the step close to the real model's.
    """
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    from trainer.models.tokenizer import clip_tokenizer

    folder = model_family("sd15").config_dir

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


def save_pipeline(pipe, out_dir: str | Path, single_file: bool = False) -> Path:
    """Save as a diffusers folder, or as ``model.safetensors`` plus a ``config/`` folder of the configs."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if not single_file:
        pipe.save_pretrained(out, safe_serialization=True)
        return out
    from trainer.models.single_file import save_single_file, write_config_folder

    write_config_folder(pipe, out / "config")
    path = out / "model.safetensors"
    save_single_file(pipe, path)
    return path


def save_tiny_clip_judge(out_dir: str | Path, seed: int = 0) -> Path:
    """A random-weight ``CLIPModel`` of the real class with its processor (the offline CLIP tokenizer, a 32 px image
    processor), saved as a folder ``measure.judge`` loads the way it loads a real one from the hub."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    from trainer.models.tokenizer import clip_tokenizer

    torch.manual_seed(seed)
    config = CLIPConfig(
        text_config={"hidden_size": 32, "intermediate_size": 37, "num_attention_heads": 4, "num_hidden_layers": 2,
                     "vocab_size": 49408, "max_position_embeddings": 77},
        vision_config={"hidden_size": 32, "intermediate_size": 37, "num_attention_heads": 4, "num_hidden_layers": 2,
                       "image_size": 32, "patch_size": 8},
        projection_dim=16,
    )
    out = Path(out_dir)
    CLIPModel(config).save_pretrained(out)
    images = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    CLIPProcessor(image_processor=images, tokenizer=clip_tokenizer()).save_pretrained(out)
    return out
