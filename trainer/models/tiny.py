"""Tiny pipelines built offline from configs (each family's adapter assembles its own from the parts here, for
tests and the CLI's ``tiny-model``), SD1.5's own architecture at a fraction of its widths (for benchmarks), and saving a pipeline as a
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


def tiny_vae(seed: int, latent_channels: int = 4, **vae_args):
    from diffusers import AutoencoderKL

    torch.manual_seed(seed)
    return AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        block_out_channels=(32, 64),
        layers_per_block=1,
        latent_channels=latent_channels,
        norm_num_groups=32,
        sample_size=64,
        **vae_args,
    )


def train_scheduler_config(prediction_type: str = "epsilon") -> dict[str, Any]:
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
    """A tiny pipeline of ``family`` (64×64 images, a few M params) with real tokenizers; the family's adapter
    (:meth:`trainer.models.family.ModelFamily.build_tiny`) builds it."""
    return model_family(family).build_tiny(seed, prediction_type)


def build_scaled_sd15(divisor: int = 8, seed: int = 0):
    """SD1.5 itself, every width divided by ``divisor``, random weights (for benchmarks): see
    :func:`trainer.models.families.sd15.build_scaled`."""
    from trainer.models.families.sd15 import build_scaled

    return build_scaled(divisor, seed)


def save_pipeline(pipe, out_dir: str | Path, single_file: bool = False) -> Path:
    """Save as a diffusers folder, or as ``model.safetensors`` plus a ``config/`` folder of the configs."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if not single_file:
        pipe.save_pretrained(out, safe_serialization=True)
        return out
    from trainer.models.families.ldm import save_single_file, write_config_folder

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
