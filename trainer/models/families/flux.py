"""FLUX.1 (dev, schnell, and the de-distilled community bases made from them): a rectified-flow transformer of
double-stream blocks (the pictures' and the text's tokens apart, attending jointly) followed by single-stream blocks
(both streams as one sequence), conditioned on T5-XXL's tokens and CLIP-L's pooled embedding.

The forward pass is the one diffusers' ``FluxPipeline`` and ``examples/dreambooth/train_dreambooth_lora_flux.py``
run: the VAE's 16-channel latents (shifted and scaled by its ``shift_factor`` / ``scaling_factor``, as every family's
latents are in ``trainer/data/batches.py``) are packed into 2×2 patches of 64 channels, one token each, with their
(0, row, column) position ids (``FluxPipeline._prepare_latent_image_ids`` of the patch grid); the text's position ids
are zeros; the timestep goes in as the noise level ``σ = t / 1000``; the prediction is unpacked back to latents and
compared with the velocity ``noise − latents``.

**Guidance.** FLUX.1-dev is guidance-distilled: its transformer takes the guidance scale as an input
(``guidance_embeds``) in place of running twice for classifier-free guidance. Training gives it a fixed value,
``model.guidance`` (1.0 by default). diffusers' dreambooth script gives 3.5 (its ``--guidance_scale`` default);
sd-scripts' recommended Flux settings give 1.0 (``--guidance_scale 1.0``). 1.0 is chosen: the loss's target on real
pictures is the plain conditional velocity, which is what the distilled model was taught to produce at guidance 1,
while training at 3.5 teaches the guided output to become the unguided one and wears the distilled guidance down.
Samples are drawn at the base's usual 3.5 (``FluxPipeline``'s default). A base whose transformer takes no guidance
draws its samples with true classifier-free guidance at ``sample.guidance`` when it was de-distilled, and with none
when it is FLUX.1-schnell.

**Distillation, from the base's own configs** (:func:`distillation`): ``guidance_embeds`` true is FLUX.1-dev's
guidance distillation: training keeps it (at the fixed guidance above), the plan and the run say so and how to avoid
it. No guidance embedding and a scheduler without FLUX.1-dev's resolution-dependent shift (``use_dynamic_shifting``
false and ``shift`` 1.0, FLUX.1-schnell's own scheduler config) is schnell's timestep distillation (1-4 steps):
refused unless ``model.allow_distilled``. No guidance embedding with FLUX.1-dev's dynamic shift is a de-distilled
base (made from dev, its guidance embedding removed and retrained for true guidance): trained as it is. A
de-distilled *schnell* that kept schnell's scheduler config cannot be told from schnell by its configs (set
``model.allow_distilled``).

**Timesteps.** The training noise levels are the scheduler's own training timesteps, drawn logit-normal
(:class:`trainer.models.families.noise.FlowMatchSchedule`). FLUX.1-dev's scheduler (``use_dynamic_shifting``)
applies its shift only when sampling, by the picture's size, so its training timesteps are unshifted: the same
noise levels diffusers' dreambooth script trains at (it draws them uniformly by default).

T5-XXL is not optional here (the transformer has no other text tokens); it overflows in fp16, so it is kept in fp32
when the run's weights are fp16 and always runs outside autocast (:func:`trainer.models.families.sd3.t5_outside_fp16`).
It reads 512 tokens (``FluxPipeline``'s ``max_sequence_length``), 256 for schnell (its model card's).
"""

from __future__ import annotations

import functools
import json
from typing import Any, ClassVar

from trainer.errors import UserError
from trainer.message import msg
from trainer.models.family import Activations, ModelFamily, TextEncoder, register

T5_TOKENS = 512  # FluxPipeline's max_sequence_length (FLUX.1-dev)
SCHNELL_T5_TOKENS = 256  # FLUX.1-schnell's (its model card draws with max_sequence_length=256)
SAMPLE_GUIDANCE = 3.5  # FluxPipeline's guidance_scale default: FLUX.1-dev's usual embedded guidance
MAX_SINGLE_BLOCKS = 38  # FLUX.1's single-stream blocks (the most any FLUX.1 base has)
MLP_RATIO = 4  # FluxSingleTransformerBlock's MLP width over the model's width (diffusers' default, FLUX.1's)
GUIDANCE_ATTRIBUTE = "_lora_doctor_guidance"  # where the run's model.guidance waits on the transformer

# the picture stream's and the text stream's joint attention in the double blocks; the single blocks' q, k and v
ATTENTION = ["attn.to_q", "attn.to_k", "attn.to_v", "attn.to_out.0",
             "attn.add_q_proj", "attn.add_k_proj", "attn.add_v_proj", "attn.to_add_out"]
# the single blocks' output projection is named as the transformer's final layer (``proj_out``): by index, so peft's
# suffix match reaches the blocks' and never the final layer's
SINGLE_OUT = [f"single_transformer_blocks.{i}.proj_out" for i in range(MAX_SINGLE_BLOCKS)]


def distillation(transformer_config, scheduler_config) -> str | None:
    """"guidance" (FLUX.1-dev: a guidance embedding), "timestep" (FLUX.1-schnell: no guidance embedding, a
    scheduler without the dynamic shift and no shift of its own) or None (a de-distilled base), from the configs."""
    if transformer_config.get("guidance_embeds"):
        return "guidance"
    if not scheduler_config.get("use_dynamic_shifting", False) and float(scheduler_config.get("shift", 1.0)) == 1.0:
        return "timestep"
    return None


@register
class Flux(ModelFamily):
    name = "flux"
    order = 40
    label = "Flux.1"
    pipeline_class_name = "FluxPipeline"
    pipeline_marker = "FluxPipeline"  # not "Flux": FLUX.2's Flux2Pipeline is another architecture
    checkpoint_marker = "double_blocks."  # Black Forest Labs' own transformer files (flux1-dev.safetensors)
    text_encoders = (
        TextEncoder("text_encoder", "tokenizer", "CLIPTextModel", "te1", "lora_te1", "clip_l"),
        TextEncoder("text_encoder_2", "tokenizer_2", "T5EncoderModel", "te3", "lora_te3", "t5", max_length=T5_TOKENS,
                    trainable=False),
    )
    pooled_text = True
    # FluxPipeline.encode_prompt: T5's states, CLIP's pooled embedding (and the text's position ids, which __call__
    # makes itself); no negative half unless true classifier-free guidance is drawn (a de-distilled base)
    prompt_embedding_names = ("prompt_embeds", "pooled_prompt_embeds")
    kohya_script = "flux_train_network.py"
    kohya_layout = "flux"
    kohya_network_module = "networks.lora_flux"
    base_model_version = "flux1"
    modelspec_architecture = "flux-1-dev/lora"
    denoiser_component = "transformer"
    denoiser_targets: ClassVar[dict[str, list[str]]] = {
        "attn": ATTENTION,
        # + the MLPs: the double blocks' of each stream, the single blocks' (proj_mlp in, proj_out out)
        "attn_ff": [*ATTENTION, "ff.net.0.proj", "ff.net.2", "ff_context.net.0.proj", "ff_context.net.2", "proj_mlp",
                    *SINGLE_OUT],
        # what the picture reads of the text apart from it: the text stream's keys and values in the double blocks
        # (the single blocks see one joined sequence, with no projection of the text's own)
        "cross_kv": ["attn.add_k_proj", "attn.add_v_proj"],
    }
    # FLUX.1-dev at full width on the CPU (bench/memory_depth.py --size flux): each cell measured on 2 double + 2
    # single blocks, one double more and one single more, and carried to 19 + 38 blocks; 512 T5 tokens a sample,
    # rank-16 attention LoRA. Measured, fp32, bytes of the step's transient beyond the LoRA gradients: without
    # checkpointing 256 px 6,671,784,968, 320 px 7,941,307,976, 128 px batch 4 20,766,266,144 (fitted through all
    # three: no cell held out); with checkpointing 256 px 661,170,180 and 320 px 804,788,868 (per pixel through both;
    # all of the rest counted per sample, as the blocks' saved inputs and the one block recomputed are: its batch
    # split is not measured). A block keeps, per sample, 123 MB at 256 px without checkpointing and exactly its
    # inputs with it (768 tokens × 3072 × 4 bytes = 9,437,184). Not measured (a bf16 cell takes about six times an
    # fp32 one on this CPU): half without checkpointing is fp32's × 0.744 (SD3.5's measured bf16/fp32 ratio), half
    # with it fp32's × 0.5 (the saved inputs in 2 bytes instead of 4); those and fp32's checkpointed batch split are
    # provisional, and the plan says so.
    activations: ClassVar[Activations] = {
        ("fp32", False): (-283_305_216, 4_698_160_392, 2_204_033.0),
        ("fp32", True): (0, 405_848_068, 249_338.0),
        ("half", False): (-210_779_081, 3_495_431_332, 1_639_800.6),
        ("half", True): (0, 202_924_034, 124_669.0),
    }
    provisional_activations = frozenset({("fp32", True), ("half", False), ("half", True)})
    reference_widths = (19 + 38 + 1) * 3072  # FLUX.1-dev: 19 double and 38 single blocks of 3072 channels
    bf16_native = True
    min_snr = False  # rectified flow

    # ------------------------------------------------------------------------------------------ parts

    def models_from_configs(self, folder):
        import transformers
        from diffusers import AutoencoderKL

        transformer = self.denoiser_from_config(json.loads((folder / "transformer" / "config.json").read_text()))
        vae = AutoencoderKL.from_config(AutoencoderKL.load_config(str(folder / "vae")))
        encoders = [getattr(transformers, te.model_class)(transformers.AutoConfig.from_pretrained(str(folder / te.component)))
                    for te in self.text_encoders]
        return transformer, vae, encoders

    def denoiser_from_config(self, config):
        from diffusers import FluxTransformer2DModel

        return FluxTransformer2DModel.from_config(config)

    def activation_width(self, denoiser_config):
        # a double block (two streams apart) and a single block (one joined sequence, a wider MLP) keep about as much
        # for the backward (measured at full width, 256 px: 123 and 114 MB), the parts outside the blocks about one
        # block more: (double + single + 1) blocks of the model's width
        return (int(denoiser_config["num_layers"]) + int(denoiser_config["num_single_layers"]) + 1) \
            * int(denoiser_config["num_attention_heads"]) * int(denoiser_config["attention_head_dim"])

    def latent_channels(self, pipe):
        return int(self.denoiser(pipe).config.in_channels) // 4  # 2×2 patches of the VAE's channels

    def denoiser_blocks(self, denoiser) -> list:
        """The transformer's repeated blocks in forward order: the double-stream blocks, then the single-stream."""
        return [*denoiser.transformer_blocks, *denoiser.single_transformer_blocks]

    def prepare_weights(self, pipe, weight_dtype) -> None:
        from trainer.models.families.sd3 import t5_outside_fp16

        t5_outside_fp16(getattr(pipe, "text_encoder_2", None), weight_dtype)

    def apply_model_settings(self, pipe, model_cfg) -> None:
        setattr(self.denoiser(pipe), GUIDANCE_ATTRIBUTE, float(model_cfg.guidance))

    # -------------------------------------------------------------------------------- distillation

    def distillation_of(self, pipe) -> str | None:
        return distillation(self.denoiser(pipe).config, pipe.scheduler.config)

    def distilled_reason(self, configs):
        """FLUX.1-schnell by its configs (:func:`distillation`: both are needed, a missing scheduler says nothing)."""
        if configs.denoiser is not None and configs.scheduler is not None \
                and distillation(configs.denoiser, configs.scheduler) == "timestep":
            return msg("flux.distilled.timestep", shift=configs.scheduler.get("shift", 1.0))
        return super().distilled_reason(configs)

    def distillation_note(self, denoiser_config, model_cfg):
        if denoiser_config.get("guidance_embeds"):
            return msg("flux.note.guidance_distilled", guidance=float(model_cfg.guidance), sample=SAMPLE_GUIDANCE)
        return None

    # ------------------------------------------------------------------------------------ conditioning

    def t5_tokens(self, pipe) -> int:
        return SCHNELL_T5_TOKENS if self.distillation_of(pipe) == "timestep" else T5_TOKENS

    def text_max_lengths(self, pipe):
        return [None, self.t5_tokens(pipe)]

    def encode_text(self, encoders, input_ids):
        import torch

        pooled = encoders[0](input_ids[0], output_hidden_states=False).pooler_output  # as FluxPipeline: CLIP's pooled
        t5_ids = input_ids[1]
        with torch.autocast(t5_ids.device.type, enabled=False):  # T5 never runs in fp16
            states = encoders[1](t5_ids, output_hidden_states=False)[0]
        return states.to(pooled.dtype), pooled

    def encode_prompts(self, pipe, prompts, negative, device):
        """FluxPipeline's own ``encode_prompt`` of the prompts; of the negative prompts too (an empty one when there
        is none, as the pipeline needs one) when the samples are drawn with true guidance (a de-distilled base)."""
        tokens = self.t5_tokens(pipe)

        def encode(texts):
            embeds, pooled, _ = pipe.encode_prompt(prompt=texts, prompt_2=None, device=device, num_images_per_prompt=1,
                                                   max_sequence_length=tokens)
            return embeds, pooled

        out = dict(zip(self.prompt_embedding_names, encode(prompts), strict=True))
        if self.distillation_of(pipe) is None:
            embeds, pooled = encode(negative or [""] * len(prompts))
            out |= {"negative_prompt_embeds": embeds, "negative_pooled_prompt_embeds": pooled}
        return out

    # --------------------------------------------------------------------------------- the forward pass

    def noise_schedule(self, scheduler_config, prediction_type):
        from trainer.models.families.noise import FlowMatchSchedule

        return FlowMatchSchedule(scheduler_config)

    def predict(self, denoiser, noisy, timesteps, hidden, pooled, buckets):
        import torch
        from diffusers import FluxPipeline

        b, c, h, w = noisy.shape
        if h % 2 or w % 2:  # 2×2 patches: the pictures' sides must be multiples of twice the VAE's factor
            raise UserError(msg("error.flux.odd_latents", height=h, width=w))
        packed = FluxPipeline._pack_latents(noisy, b, c, h, w)
        img_ids = FluxPipeline._prepare_latent_image_ids(b, h // 2, w // 2, noisy.device, noisy.dtype)
        txt_ids = torch.zeros(hidden.shape[1], 3, device=noisy.device, dtype=noisy.dtype)
        guidance = None
        if denoiser.config.guidance_embeds:
            value = getattr(denoiser, GUIDANCE_ATTRIBUTE, 1.0)  # model.guidance's default when the run set none
            guidance = torch.full((b,), value, device=noisy.device, dtype=torch.float32)
        out = denoiser(hidden_states=packed, timestep=timesteps / 1000, guidance=guidance, pooled_projections=pooled,
                       encoder_hidden_states=hidden, txt_ids=txt_ids, img_ids=img_ids, return_dict=False)[0]
        # _unpack_latents takes the picture's pixels and the VAE's factor: 8 × the latents' side, 8
        return FluxPipeline._unpack_latents(out, h * 8, w * 8, 8)

    def sampling_pipeline(self, pipe, prediction_type):
        sampler = _sampler_class()(**pipe.components)
        sampler.flux_guidance = self.distillation_of(pipe)
        sampler.t5_tokens = self.t5_tokens(pipe)
        return sampler

    def prediction_type(self, pipe):
        return "flow"

    # ----------------------------------------------------------------------------------- tiny model

    def build_tiny(self, seed: int, prediction_type: str):
        import torch
        from diffusers import FlowMatchEulerDiscreteScheduler, FluxPipeline, FluxTransformer2DModel
        from transformers import T5Config, T5EncoderModel

        from trainer.models.tiny import tiny_text_encoder, tiny_vae
        from trainer.models.tokenizer import clip_tokenizer, tiny_t5_tokenizer

        torch.manual_seed(seed)
        transformer = FluxTransformer2DModel(
            patch_size=1, in_channels=64, num_layers=2, num_single_layers=2, attention_head_dim=8,
            num_attention_heads=4, joint_attention_dim=64, pooled_projection_dim=32, guidance_embeds=True,
            axes_dims_rope=(2, 2, 4))
        torch.manual_seed(seed + 4)
        t5 = T5EncoderModel(T5Config(vocab_size=128, d_model=64, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                                     pad_token_id=0, eos_token_id=1))
        return FluxPipeline(
            transformer=transformer,
            # FLUX.1-dev's scheduler config
            scheduler=FlowMatchEulerDiscreteScheduler(num_train_timesteps=1000, shift=3.0, use_dynamic_shifting=True,
                                                      base_shift=0.5, max_shift=1.15, base_image_seq_len=256,
                                                      max_image_seq_len=4096),
            vae=tiny_vae(seed + 1, latent_channels=16, shift_factor=0.1159, scaling_factor=0.3611,
                         use_quant_conv=False, use_post_quant_conv=False),
            text_encoder=tiny_text_encoder(False, seed + 2),
            tokenizer=clip_tokenizer(),
            text_encoder_2=t5,
            tokenizer_2=tiny_t5_tokenizer(T5_TOKENS),
        )

    def single_file_kwargs(self, path, config_dir, torch_dtype):
        # a FLUX.1 file holds the transformer alone (Black Forest Labs') or with VAE and text encoders in ComfyUI's
        # layout; the shipped configs hold no T5 tokenizer, and the T5 weights would have to come from elsewhere
        raise UserError(msg("error.flux.single_file", path=path))


@functools.cache
def _sampler_class():
    """``FluxPipeline`` as the run's sampler calls it (built on first use: importing diffusers is slow)."""
    from diffusers import FluxPipeline

    class FluxSampler(FluxPipeline):
        """Starting latents given as the VAE's (B, 16, h, w), packed here; the guidance each kind of base draws with:
        FLUX.1-dev its embedded 3.5 (the run's ``sample.guidance`` is the other families' CFG scale), a de-distilled
        base true classifier-free guidance at ``sample.guidance`` with the negative prompt (or an empty one),
        schnell none."""

        flux_guidance: str | None = "guidance"
        t5_tokens: int = T5_TOKENS

        def __call__(self, *args: Any, latents=None, guidance_scale: float = SAMPLE_GUIDANCE, **kwargs: Any):
            if latents is not None and latents.ndim == 4:
                b, c, h, w = latents.shape
                latents = FluxPipeline._pack_latents(latents, b, c, h, w)
            true_cfg = 1.0
            if self.flux_guidance == "guidance":
                guidance_scale = SAMPLE_GUIDANCE
                kwargs.pop("negative_prompt", None)
            elif self.flux_guidance is None:
                true_cfg = guidance_scale
                if kwargs.get("prompt") is not None and kwargs.get("negative_prompt") is None:
                    kwargs["negative_prompt"] = [""] * len(kwargs["prompt"])
            else:
                kwargs.pop("negative_prompt", None)
            return FluxPipeline.__call__(self, *args, latents=latents, guidance_scale=guidance_scale,
                                         true_cfg_scale=true_cfg, max_sequence_length=self.t5_tokens, **kwargs)

    return FluxSampler
