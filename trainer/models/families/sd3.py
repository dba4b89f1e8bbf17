"""Stable Diffusion 3.5 (Medium and Large): an MMDiT transformer trained by rectified flow, conditioned on CLIP-L
and OpenCLIP-G (penultimate layers, side by side, padded to T5's width) followed by T5-XXL's tokens, and on both
CLIPs' pooled embeddings.

T5-XXL is optional, as in diffusers' pipeline: a base loaded without it conditions on zeros in its place (the
model was trained with T5 dropped out, so it still works, with less prompt adherence). T5 overflows in fp16
(diffusers' SD3 documentation says so): it is kept in fp32 when the run's weights are fp16 and always runs outside
autocast. The text encoders are frozen by default, so their embeddings are computed once per caption and cached.
"""

from __future__ import annotations

from typing import ClassVar

from trainer.message import msg
from trainer.models.base_files import checkpoint_keys
from trainer.models.family import Activations, ModelFamily, TextEncoder, register

T5_TOKENS = 256  # diffusers' SD3 pipeline's max_sequence_length, and sd-scripts' default for SD3


@register
class SD3(ModelFamily):
    name = "sd3"
    order = 30
    label = "SD 3.5"
    pipeline_class_name = "StableDiffusion3Pipeline"
    pipeline_marker = "StableDiffusion3"
    checkpoint_marker = "model.diffusion_model.joint_blocks."  # the MMDiT's joint blocks, in the original layout
    text_encoders = (
        TextEncoder("text_encoder", "tokenizer", "CLIPTextModelWithProjection", "te1", "lora_te1", "clip_l"),
        TextEncoder("text_encoder_2", "tokenizer_2", "CLIPTextModelWithProjection", "te2", "lora_te2", "clip_g"),
        TextEncoder("text_encoder_3", "tokenizer_3", "T5EncoderModel", "te3", "lora_te3", "t5", max_length=T5_TOKENS,
                    optional=True, trainable=False),
    )
    pooled_text = True
    # encode_prompt pads the CLIPs' states to T5's width and puts T5's 256 tokens after them, as encode_text does
    prompt_embedding_names = ("prompt_embeds", "negative_prompt_embeds", "pooled_prompt_embeds",
                              "negative_pooled_prompt_embeds")
    kohya_script = "sd3_train_network.py"
    kohya_layout = "mmdit"
    kohya_network_module = "networks.lora_sd3"
    base_model_version = "sd3"
    modelspec_architecture = "stable-diffusion-v3-medium/lora"
    denoiser_component = "transformer"
    denoiser_targets: ClassVar[dict[str, list[str]]] = {
        # the joint attention of both streams (the pictures' to_*, the text's add_*), as diffusers' SD3 trainer
        "attn": ["to_q", "to_k", "to_v", "to_out.0", "add_q_proj", "add_k_proj", "add_v_proj", "to_add_out"],
        "attn_ff": ["to_q", "to_k", "to_v", "to_out.0", "add_q_proj", "add_k_proj", "add_v_proj", "to_add_out",
                    "ff.net.0.proj", "ff.net.2", "ff_context.net.0.proj", "ff_context.net.2"],
        # what the picture reads of the text: the text stream's keys and values in the joint attention
        "cross_kv": ["add_k_proj", "add_v_proj"],
    }
    # SD3.5 Medium at full width on the CPU (bench/memory_depth.py): each cell measured on 2 and 3 blocks of each
    # kind (the last block is always the lighter one that leaves the text alone, as in the real model) and carried
    # to 13 dual-attention + 11 plain blocks; 333 text tokens a sample. fp32 is fitted through the 256 and 320 px
    # batch-1 and 128 px batch-4 cells, both checkpointing modes; held out 128 and 192 px, 256 px batch 2 and
    # 384 px are within 0.3 %. bf16 without checkpointing is fp32's scaled by the bf16/fp32 ratio measured at
    # 128 px (0.744): 128 px -0.3 %, and against bf16 cells measured apart at 256 and 320 px +2.7 %, +2.1 %.
    # bf16 with checkpointing is fitted per pixel through its own 256 and 320 px cells, split between step and
    # sample as fp32's: held out 128 px -4.0 %, 128 px batch 4 -4.3 %.
    activations: ClassVar[Activations] = {
        ("fp32", False): (-51_196_581, 685_654_297, 673_414.0),
        ("fp32", True): (-46_768_124, 91_081_464, 69_498.0),
        ("half", False): (-38_104_243, 510_314_120, 501_204.0),
        ("half", True): (-23_955_301, 46_653_227, 32_902.5),
    }
    # What the activations scale with across sizes: the blocks' (depth × width) plus the parts outside them (patch
    # embedding, text projections, final layer, loss), which grow with the width alone and weigh as 12 blocks. Large
    # measured on its own blocks (memory_depth.py --size sd3-large, fp32, 128 and 256 px, both checkpointing modes)
    # is 2.03-2.43× Medium; (depth + 12) × width gives 2.20 (depth × width alone gave 2.51: up to +17 %).
    reference_widths = (24 + 12) * 1536  # SD3.5 Medium: 24 blocks of 1536 channels
    bf16_native = True
    min_snr = False  # rectified flow: train.min_snr_gamma does not apply (the plan and the run say so)

    # ------------------------------------------------------------------------------------------ parts

    def models_from_configs(self, folder):
        import transformers
        from diffusers import AutoencoderKL, SD3Transformer2DModel

        transformer = SD3Transformer2DModel.from_config(SD3Transformer2DModel.load_config(str(folder / "transformer")))
        vae = AutoencoderKL.from_config(AutoencoderKL.load_config(str(folder / "vae")))
        encoders = []
        for te in self.text_encoders:
            if (folder / te.component / "config.json").is_file():
                config_class = transformers.AutoConfig.from_pretrained(str(folder / te.component))
                encoders.append(getattr(transformers, te.model_class)(config_class))
        return transformer, vae, encoders

    def denoiser_from_config(self, config):
        from diffusers import SD3Transformer2DModel

        return SD3Transformer2DModel.from_config(config)

    def denoiser_blocks(self, denoiser):
        return list(denoiser.transformer_blocks)  # the joint (MMDiT) blocks, called one after another

    def activation_width(self, denoiser_config):
        return (int(denoiser_config["num_layers"]) + 12) * int(denoiser_config["num_attention_heads"]) \
            * int(denoiser_config["attention_head_dim"])

    def prepare_weights(self, pipe, weight_dtype) -> None:
        t5_outside_fp16(getattr(pipe, "text_encoder_3", None), weight_dtype)

    # ------------------------------------------------------------------------------------ conditioning

    def encode_text(self, encoders, input_ids):
        import torch

        states, pooled = [], []
        for enc, ids in zip(encoders[:2], input_ids[:2]):
            out = enc(ids, output_hidden_states=True)
            states.append(out.hidden_states[-2])  # the penultimate layer, as diffusers' SD3 pipeline
            pooled.append(out.text_embeds)
        clip = torch.cat(states, dim=-1)
        t5, t5_ids = encoders[2], input_ids[2]
        if isinstance(t5, NoT5):
            t5_states = torch.zeros((clip.shape[0], T5_TOKENS, t5.width), dtype=clip.dtype, device=clip.device)
        else:
            with torch.autocast(t5_ids.device.type, enabled=False):  # T5 never runs in fp16
                t5_states = t5(t5_ids)[0]
            t5_states = t5_states.to(clip.dtype)
        clip = torch.nn.functional.pad(clip, (0, t5_states.shape[-1] - clip.shape[-1]))
        return torch.cat([clip, t5_states], dim=-2), torch.cat(pooled, dim=-1)

    def encode_prompt_kwargs(self):
        # the second and third prompts default to the first, as the pipeline's __call__ leaves them
        return {"prompt_2": None, "prompt_3": None}

    def text_pairs(self, pipe):
        pairs = super().text_pairs(pipe)
        if pairs[2][1] is None:  # loaded without T5: zeros of the transformer's text width in its place
            pairs[2] = (None, NoT5(int(self.denoiser(pipe).config.joint_attention_dim)))
        return pairs

    # --------------------------------------------------------------------------------- the forward pass

    def noise_schedule(self, scheduler_config, prediction_type):
        from trainer.models.families.noise import FlowMatchSchedule

        return FlowMatchSchedule(scheduler_config)

    def predict(self, denoiser, noisy, timesteps, hidden, pooled, buckets):
        return denoiser(hidden_states=noisy, timestep=timesteps, encoder_hidden_states=hidden,
                        pooled_projections=pooled, return_dict=False)[0]

    def sampling_pipeline(self, pipe, prediction_type):
        # the base's own flow-matching Euler sampler: deterministic
        return type(pipe)(**pipe.components)

    def prediction_type(self, pipe):
        return "flow"

    def distilled_reason(self, configs):
        """SD3.5 Large Turbo ships SD3.5 Large's scheduler and transformer configs: only what its files record of it
        (its name in a saved copy's configs, a single file's metadata) tells it apart, besides the name it is given."""
        why = super().distilled_reason(configs)
        return msg("sd3.distilled_turbo", why=why) if why else None

    # ----------------------------------------------------------------------------------- tiny model

    def build_tiny(self, seed: int, prediction_type: str):
        import torch
        from diffusers import FlowMatchEulerDiscreteScheduler, SD3Transformer2DModel, StableDiffusion3Pipeline
        from transformers import T5Config, T5EncoderModel

        from trainer.models.tiny import tiny_text_encoder, tiny_vae
        from trainer.models.tokenizer import clip_tokenizer, tiny_t5_tokenizer

        torch.manual_seed(seed)
        transformer = SD3Transformer2DModel(
            sample_size=32, patch_size=1, in_channels=16, out_channels=16, num_layers=2, attention_head_dim=8,
            num_attention_heads=4, caption_projection_dim=32, joint_attention_dim=64, pooled_projection_dim=64,
            pos_embed_max_size=96, dual_attention_layers=(0,), qk_norm="rms_norm")
        torch.manual_seed(seed + 4)
        t5 = T5EncoderModel(T5Config(vocab_size=128, d_model=64, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                                     pad_token_id=0, eos_token_id=1))
        return StableDiffusion3Pipeline(
            transformer=transformer,
            scheduler=FlowMatchEulerDiscreteScheduler(num_train_timesteps=1000, shift=3.0),
            vae=tiny_vae(seed + 1, latent_channels=16, shift_factor=0.0609, scaling_factor=1.5305,
                         use_quant_conv=False, use_post_quant_conv=False),
            text_encoder=tiny_text_encoder(True, seed + 2),
            tokenizer=clip_tokenizer(),
            text_encoder_2=tiny_text_encoder(True, seed + 3),
            tokenizer_2=clip_tokenizer(pad_token="!"),
            text_encoder_3=t5,
            tokenizer_3=tiny_t5_tokenizer(T5_TOKENS),
        )

    def checkpoint_config_dir(self, path):
        """SD3.5 Large (38 joint blocks) or Medium (24), by the file's own tensor names."""
        if any(k.startswith(self.checkpoint_marker + "37.") for k in checkpoint_keys(path)):
            return self.config_dir.with_name("sd3-large")
        return self.config_dir

    def single_file_kwargs(self, path, config_dir, torch_dtype):
        # the shipped configs hold no T5 tokenizer (its vocabulary is the model's, not ours to ship): without a
        # tokenizer_3 folder beside the file, or without T5 weights in it, the base loads without T5
        has_tokenizer = (config_dir / "tokenizer_3").is_dir()
        has_t5 = any(k.startswith("text_encoders.t5xxl.") for k in checkpoint_keys(path))
        return {} if has_tokenizer and has_t5 else {"text_encoder_3": None, "tokenizer_3": None}


def t5_outside_fp16(t5, weight_dtype) -> None:
    """T5 overflows in fp16: its weights stay fp32 when the run's are fp16, and it always runs outside autocast
    (in training, and inside diffusers' pipeline when the run draws its samples under autocast). None: no T5."""
    import torch

    if t5 is None:
        return
    if weight_dtype == torch.float16:
        t5.to(torch.float32)
    if not getattr(t5, "_outside_autocast", False):
        forward = t5.forward

        def plain_forward(*args, **kwargs):
            with torch.autocast(t5.device.type, enabled=False):
                return forward(*args, **kwargs)

        t5.forward = plain_forward
        t5._outside_autocast = True


class NoT5:
    """Where a base loaded without T5 has it: its tokens are zeros of ``width`` channels, as diffusers' pipeline
    conditions such a base."""

    def __init__(self, width: int):
        self.width = width
