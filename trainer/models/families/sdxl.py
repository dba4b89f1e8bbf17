"""SDXL: CLIP-L and OpenCLIP-G text encoders (penultimate layers concatenated), and the UNet also conditioned on
the pooled text embedding and the picture's size and crop (``added_cond_kwargs``)."""

from __future__ import annotations

from typing import ClassVar

from trainer.models.families.unet import UNetFamily
from trainer.models.family import Activations, TextEncoder, register


@register
class SDXL(UNetFamily):
    name = "sdxl"
    order = 20
    label = "SDXL"
    pipeline_class_name = "StableDiffusionXLPipeline"
    pipeline_marker = "XL"
    checkpoint_marker = "conditioner.embedders.1"  # the second (OpenCLIP) text encoder
    text_encoders = (
        TextEncoder("text_encoder", "tokenizer", "CLIPTextModel", "te1", "lora_te1", "clip_l"),
        TextEncoder("text_encoder_2", "tokenizer_2", "CLIPTextModelWithProjection", "te2", "lora_te2", "clip_g"),
    )
    pooled_text = True
    # the pipeline's encode_prompt also returns both pooled embeddings; with no negative prompt its negative halves are
    # zeros (force_zeros_for_empty_prompt), which encode_prompts gets from that same code
    prompt_embedding_names = ("prompt_embeds", "negative_prompt_embeds", "pooled_prompt_embeds",
                              "negative_pooled_prompt_embeds")
    kohya_unet_original_names = True
    kohya_script = "sdxl_train_network.py"
    kohya_sdxl = True
    base_model_version = "sdxl_base_v1-0"
    modelspec_architecture = "stable-diffusion-xl-v1-base/lora"
    # Measured in bf16 and fp32 (its fp32 UNet alone is ~10 GB) on the CPU at the allocator, fitted on the 256 and
    # 320 px cells at batch 1 and 128 px at batch 4 (bench/bench_memory.py --fit). fp32 was first scaled by SD1.5's
    # fp32 / bf16 ratios; measured, that read 14-127 % high without checkpointing.
    activations: ClassVar[Activations] = {
        ("half", False): (-46_448_640, 70_136_832, 396_154.0),
        ("half", True): (-2_220_028, 835_520, 16_415.0),
        ("fp32", False): (-92_897_280, 51_963_904, 689_108.0),
        ("fp32", True): (-2_841_710, 409_472, 30_561.1),
    }
    reference_widths = 320 + 640 + 1280

    def single_file_kwargs(self, path, config_dir, torch_dtype):
        # diffusers picks te2's weights by a te1 key whenever the two widths match (true of tiny models):
        # load te2 from its own OpenCLIP tensors so it can never receive te1's.
        from trainer.models.families.ldm import load_open_clip_text_encoder

        return {"text_encoder_2": load_open_clip_text_encoder(path, config_dir, torch_dtype)}

    def build_tiny(self, seed: int, prediction_type: str):
        from diffusers import StableDiffusionXLPipeline

        from trainer.models.families.unet import ddim_scheduler
        from trainer.models.tiny import tiny_text_encoder, tiny_unet, tiny_vae, train_scheduler_config
        from trainer.models.tokenizer import clip_tokenizer

        unet = tiny_unet(
            seed,
            down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
            up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
            attention_head_dim=(2, 4),
            use_linear_projection=True,
            addition_embed_type="text_time",
            addition_time_embed_dim=8,
            transformer_layers_per_block=(1, 2),
            projection_class_embeddings_input_dim=80,  # 32 (pooled text) + 6 × 8 (time ids)
            cross_attention_dim=64,  # te1 (32) and te2 (32) hidden states concatenated
        )
        return StableDiffusionXLPipeline(
            vae=tiny_vae(seed + 1),
            text_encoder=tiny_text_encoder(False, seed + 2),
            text_encoder_2=tiny_text_encoder(True, seed + 3),
            tokenizer=clip_tokenizer(),
            tokenizer_2=clip_tokenizer(pad_token="!"),
            unet=unet,
            scheduler=ddim_scheduler(train_scheduler_config(prediction_type)),
            force_zeros_for_empty_prompt=True,
        )

    def encode_text(self, encoders, input_ids):
        import torch

        states, pooled = [], None
        for enc, ids in zip(encoders, input_ids):
            out = enc(ids, output_hidden_states=True)
            states.append(out.hidden_states[-2])  # SDXL conditions on the penultimate layer of both encoders
            if hasattr(out, "text_embeds"):
                pooled = out.text_embeds
        return torch.cat(states, dim=-1), pooled

    def added_cond_kwargs(self, pooled, buckets, device):
        import torch

        # (original h, w, crop top, left, target h, w): we train at the bucket size with a centre crop.
        time_ids = torch.tensor([[h, w, 0, 0, h, w] for (w, h) in buckets], dtype=torch.float32, device=device)
        return {"text_embeds": pooled, "time_ids": time_ids}
