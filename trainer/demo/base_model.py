"""The demo base model's parts, untrained.

The demo base is Stable Diffusion 1.5 at toy scale: the same five parts (AutoencoderKL, CLIP text encoder with
the real 49,408-token CLIP tokenizer, UNet2DConditionModel, a DDIM scheduler with SD1.5's betas) and the same
UNet layout (four levels, cross-attention blocks and mid block), shrunk so that a LoRA on it trains in a
minute or two on a laptop CPU. 64 px pictures become 32x32x4 latents. :mod:`trainer.demo.base_training` trains
them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

IMAGE_SIZE = 64
VAE_FACTOR = 2
LATENT_SIZE = IMAGE_SIZE // VAE_FACTOR
LATENT_CHANNELS = 4
TEXT_HIDDEN = 64


def scheduler_config() -> dict[str, Any]:
    """SD1.5's noise schedule (1000 steps, scaled-linear betas 0.00085-0.012), epsilon prediction."""
    return dict(num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                prediction_type="epsilon", clip_sample=False, set_alpha_to_one=False, steps_offset=1)


def build_vae():
    """64x64x3 <-> 32x32x4: two levels (SD's VAE has four: 8x), narrow, one resnet per level.

    Why only 2x: at 4x the decoder needs far longer to learn sharp edges from 4 channels per 4x4 block, and
    the character's 2-pixel stripes were lost. No attention in the mid block (it cost a third of the time and
    flat scenes need no long-range mixing); 4 channels per norm group, since a group norm over one channel
    would erase a flat picture's colour.
    """
    from diffusers import AutoencoderKL

    return AutoencoderKL(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                         up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(16, 32),
                         layers_per_block=1, latent_channels=LATENT_CHANNELS, norm_num_groups=4,
                         sample_size=IMAGE_SIZE, mid_block_add_attention=False)


def build_text_encoder():
    """CLIP's text transformer with the real vocabulary; 64 wide so the 49,408-row embedding stays ~6 MB."""
    from transformers import CLIPTextConfig, CLIPTextModel

    config = CLIPTextConfig(vocab_size=49408, hidden_size=TEXT_HIDDEN, intermediate_size=4 * TEXT_HIDDEN,
                            num_attention_heads=4, num_hidden_layers=2, max_position_embeddings=77,
                            projection_dim=TEXT_HIDDEN, bos_token_id=49406, eos_token_id=49407,
                            pad_token_id=49407, hidden_act="quick_gelu")
    return CLIPTextModel(config)


def build_unet():
    """SD1.5's layout (four levels, cross-attention in the middle ones and the mid block) at 32x32 latents.

    The 32 px level is only 16 channels wide and has no attention: it costs as much as a 16 px level of 32
    channels, so 32x32 latents come almost for free. Attention sits at 16 and 8 px, where the LoRA learns.
    """
    # from its module, not the package: type checkers read diffusers' top level as its no-torch dummies
    from diffusers.models.resnet import ResnetBlock2D
    from diffusers.models.transformers.transformer_2d import Transformer2DModel
    from diffusers.models.unets.unet_2d_condition import UNet2DConditionModel

    unet = UNet2DConditionModel(sample_size=LATENT_SIZE, in_channels=LATENT_CHANNELS, out_channels=LATENT_CHANNELS,
                                block_out_channels=(16, 32, 64, 128), layers_per_block=1,
                                down_block_types=("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D",
                                                  "DownBlock2D"),
                                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
                                cross_attention_dim=TEXT_HIDDEN, attention_head_dim=4, norm_num_groups=8)
    # The original SD code zero-initialises every residual branch's last layer, the attention outputs and the
    # output conv (its ``zero_module``); diffusers does not, since it loads trained weights. From scratch
    # this matters: each block starts as the identity, and the net learns in far fewer steps.
    with torch.no_grad():
        for m in unet.modules():
            if isinstance(m, ResnetBlock2D):
                m.conv2.weight.zero_()
                m.conv2.bias.zero_()  # type: ignore[union-attr]  # built with a bias
            elif isinstance(m, Transformer2DModel):
                m.proj_out.weight.zero_()
                m.proj_out.bias.zero_()
        unet.conv_out.weight.zero_()
        unet.conv_out.bias.zero_()
    return unet


def assemble_pipeline(vae, text_encoder, unet):
    """A StableDiffusionPipeline of the trained parts, with the offline CLIP tokenizer and no safety checker."""
    from diffusers import StableDiffusionPipeline

    from trainer.models.families.unet import ddim_scheduler
    from trainer.models.tokenizer import clip_tokenizer

    pipe = StableDiffusionPipeline(vae=vae, text_encoder=text_encoder, tokenizer=clip_tokenizer(), unet=unet,
                                   scheduler=ddim_scheduler(scheduler_config()), safety_checker=None,
                                   feature_extractor=None, requires_safety_checker=False)
    pipe.set_progress_bar_config(disable=True)  # type: ignore[attr-defined]  # typed as diffusers' no-torch dummy
    return pipe


def save_pipeline_fp16(pipe, out_dir: str | Path) -> int:
    """Save as a diffusers folder with fp16 weights (half the bytes; loaders upcast to fp32). Returns bytes."""
    out = Path(out_dir)
    pipe.to(dtype=torch.float16)
    try:
        pipe.save_pretrained(out, safe_serialization=True)
    finally:
        pipe.to(dtype=torch.float32)
    return sum(p.stat().st_size for p in out.rglob("*") if p.is_file())


def n_params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
