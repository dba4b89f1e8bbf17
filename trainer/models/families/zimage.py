"""Z-Image (Tongyi-MAI's base and Turbo): a single-stream DiT trained by rectified flow, conditioned on the prompt
as Qwen3-4B reads it (its second-to-last layer, the prompt wrapped in Qwen's chat template, padding dropped).

diffusers' ``ZImagePipeline`` is the reference for every convention here:

- **text**: ``_encode_prompt`` wraps each prompt as one user turn of the chat template (``add_generation_prompt``,
  ``enable_thinking=True``, which adds nothing after the assistant's header), pads to 512 tokens, runs the encoder
  with the attention mask and keeps ``hidden_states[-2]`` at the real tokens only: each prompt is a tensor of its own
  length. Qwen3 is frozen here (it never takes a LoRA), so its embeddings are computed once per caption and cached,
  padded to 512 rows; the token mask travels beside them in the place a pooled embedding takes in other families,
  and :meth:`ZImage.predict` drops the padding as the pipeline does.
- **time and sign**: the pipeline's scheduler runs on ``t = 1000·σ`` (σ the noise level, shifted by the scheduler's
  ``shift``); the transformer is given ``(1000 − t) / 1000 = 1 − σ`` and its output is negated before the Euler step
  integrates it as dx/dσ. So the transformer predicts ``x0 − noise``, and :meth:`ZImage.predict` returns its output
  negated: the velocity ``noise − x0`` that :class:`~trainer.models.families.noise.FlowMatchSchedule` trains towards
  and the sampler integrates (tests/test_zimage.py checks it against the pipeline's own step).
- **samples**: the pipeline's flow-matching Euler sampler itself; with ``sample.guidance`` 0 it draws without the
  negative prompt, as Turbo is meant to be drawn.

Z-Image-Turbo is step-distilled (8 steps, no guidance): its own scheduler config (``shift`` 3.0, where the base
ships 6.0) marks it, and a single file whose metadata names Turbo loads with Turbo's configs; a run refuses it unless
``model.allow_distilled`` (:meth:`ZImage.distilled_reason`, which the plan reads from the configs alone).
"""

from __future__ import annotations

from typing import ClassVar

from trainer.message import msg
from trainer.models.base_files import checkpoint_metadata, metadata_distilled_word
from trainer.models.family import Activations, ModelFamily, TextEncoder, register

MAX_TOKENS = 512  # ZImagePipeline's max_sequence_length (the chat-templated prompt, padded)
TURBO_SHIFT = 3.0  # Z-Image-Turbo's scheduler shift; Z-Image (base) ships 6.0
# A tiny Qwen chat template: one turn per message and the assistant's header, as Qwen3's own template writes them
# for ZImagePipeline (enable_thinking=True adds nothing; false adds an empty think block)
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% if enable_thinking is defined and "
                 "enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}{% endif %}")


@register
class ZImage(ModelFamily):
    name = "zimage"
    order = 50
    label = "Z-Image"
    pipeline_class_name = "ZImagePipeline"
    pipeline_marker = "ZImage"
    # the first main block's modulation in the original layout (diffusers' single-file marker for Z-Image; Lumina 2
    # has a SiLU before its modulation, so its key ends .adaLN_modulation.1.)
    checkpoint_marker = "model.diffusion_model.layers.0.adaLN_modulation.0."
    text_encoders = (
        TextEncoder("text_encoder", "tokenizer", "Qwen3Model", "te", "lora_te", "qwen3", max_length=MAX_TOKENS,
                    trainable=False),
    )
    # Z-Image takes no pooled embedding: the second half of the text conditioning is the prompt's token mask (1 at
    # the chat-templated prompt's tokens, 0 at the padding), cached with the hidden states
    pooled_text = True
    # encode_prompt returns two lists of tensors, one per prompt, each its own length
    prompt_embedding_names = ("prompt_embeds", "negative_prompt_embeds")
    # musubi-tuner trains Z-Image (zimage_train_network.py, networks.lora_zimage); sd-scripts has no Z-Image script
    kohya_script = "zimage_train_network.py"
    kohya_network_module = "networks.lora_zimage"
    kohya_layout = "zimage"  # trainer/export/zimage.py: ComfyUI's names, q/k/v fused exactly
    base_model_version = "zimage"
    modelspec_architecture = "z-image/lora"
    denoiser_component = "transformer"
    # Every block (the picture's noise refiner, the text's context refiner and the 30 main blocks) is the same
    # single-stream block: one attention over the picture's and the text's tokens together, and a SwiGLU feed forward.
    denoiser_targets: ClassVar[dict[str, list[str]]] = {
        "attn": ["attention.to_q", "attention.to_k", "attention.to_v", "attention.to_out.0"],
        "attn_ff": ["attention.to_q", "attention.to_k", "attention.to_v", "attention.to_out.0",
                    "feed_forward.w1", "feed_forward.w2", "feed_forward.w3"],
        # A single-stream DiT has no cross-attention: the picture reads the text in the same attention it reads
        # itself with. The nearest there is to "what the picture reads of the text" is that attention's keys and
        # values (every token, text and picture, is read through them).
        "cross_kv": ["attention.to_k", "attention.to_v"],
    }
    # Z-Image at full width on the CPU (bench/memory_depth.py --size zimage): each cell measured on the real
    # refiners (2 picture, 2 text) with 2 and 3 of the 3840-wide main blocks and carried to 30, a caption of 128
    # Qwen3 tokens (a long one; bench/memory_probe.py ZIMAGE_TEXT_TOKENS), rank-16 attention LoRA. fp32 is fitted
    # through the 128 and 256 px batch-1 cells, both checkpointing modes (1815 / 3697 MiB of activations without,
    # 101 / 267 MiB with); every byte is counted per sample (no batch-4 cell was measured: a batch above 1 is
    # over-, never under-estimated by the per-step share). Held out: 192 px, see docs/families.md. The half cells
    # are not measured: fp32's scaled by SD3.5's measured bf16/fp32 ratios (0.744 without checkpointing; 0.512 per
    # sample, 0.473 per pixel with it), so they are provisional and the plan says so.
    activations: ClassVar[Activations] = {
        ("fp32", False): (0.0, 1_188_114_436, 2_450_396.0),
        ("fp32", True): (0.0, 47_837_700, 227_101.0),
        ("half", False): (0.0, 883_957_140, 1_823_094.6),
        ("half", True): (0.0, 24_503_153, 107_516.6),
    }
    provisional_activations: ClassVar[frozenset[tuple[str, bool]]] = frozenset({("half", False), ("half", True)})
    # What the activations scale with across sizes: the blocks' (depth × width); the refiners count as blocks
    reference_widths = (30 + 2 * 2) * 3840
    bf16_native = True
    min_snr = False  # rectified flow: train.min_snr_gamma does not apply

    # ------------------------------------------------------------------------------------------ parts

    def models_from_configs(self, folder):
        import transformers
        from diffusers import AutoencoderKL, ZImageTransformer2DModel

        transformer = ZImageTransformer2DModel.from_config(
            ZImageTransformer2DModel.load_config(str(folder / "transformer")))
        vae = AutoencoderKL.from_config(AutoencoderKL.load_config(str(folder / "vae")))
        config = transformers.AutoConfig.from_pretrained(str(folder / "text_encoder"))
        return transformer, vae, [transformers.Qwen3Model(config)]

    def denoiser_from_config(self, config):
        from diffusers import ZImageTransformer2DModel

        return ZImageTransformer2DModel.from_config(config)

    def activation_width(self, denoiser_config):
        return (int(denoiser_config["n_layers"]) + 2 * int(denoiser_config["n_refiner_layers"])) \
            * int(denoiser_config["dim"])

    def unquantized(self, denoiser):
        # the timestep embedder casts its sinusoidal input to its first Linear's weight dtype
        return (denoiser.t_embedder,)

    def denoiser_blocks(self, denoiser) -> list:
        """The transformer's repeated blocks in the order its forward runs them: the picture's noise refiner, the
        text's context refiner, then the main single-stream blocks (all the same kind of block)."""
        return [*denoiser.noise_refiner, *denoiser.context_refiner, *denoiser.layers]

    # ------------------------------------------------------------------------------------ conditioning

    def tokenize(self, tokenizer, captions, max_length, device):
        """As ``ZImagePipeline._encode_prompt``: each caption one user turn of the chat template, then padded to
        ``max_length``; the ids with their attention mask."""
        texts = [tokenizer.apply_chat_template([{"role": "user", "content": c}], tokenize=False,
                                               add_generation_prompt=True, enable_thinking=True) for c in captions]
        return tokenizer(texts, padding="max_length", max_length=max_length, truncation=True,
                         return_tensors="pt").to(device)

    def encode_text(self, encoders, input_ids):
        tokens = input_ids[0]
        mask = tokens["attention_mask"].bool()
        hidden = encoders[0](input_ids=tokens["input_ids"], attention_mask=mask,
                             output_hidden_states=True).hidden_states[-2]
        return hidden, mask.to(hidden.dtype)

    def encode_prompts(self, pipe, prompts, negative, device):
        """``ZImagePipeline.encode_prompt`` with guidance (its own arguments: no ``num_images_per_prompt``); each of
        its lists of per-prompt tensors kept as a :class:`TensorList`, which moves between devices as a tensor does."""
        out = pipe.encode_prompt(prompt=list(prompts), device=device, do_classifier_free_guidance=True,
                                 negative_prompt=negative, max_sequence_length=MAX_TOKENS)
        return {name: TensorList(embeds) for name, embeds in zip(self.prompt_embedding_names, out, strict=True)}

    # --------------------------------------------------------------------------------- the forward pass

    def noise_schedule(self, scheduler_config, prediction_type):
        from trainer.models.families.noise import FlowMatchSchedule

        return FlowMatchSchedule(scheduler_config)

    def predict(self, denoiser, noisy, timesteps, hidden, pooled, buckets):
        """The velocity ``noise − x0`` at the scheduler's timesteps (1000·σ), as the pipeline's sampler integrates
        it: the transformer is given 1 − σ and its output is negated. ``pooled`` is the token mask: each caption's
        hidden states at its real tokens only, as the pipeline gives them."""
        import torch

        captions = [h[m > 0.5] for h, m in zip(hidden, pooled)]
        out = denoiser(list(noisy.unsqueeze(2).unbind(0)), (1000 - timesteps) / 1000, captions, return_dict=False)[0]
        return -torch.stack(out).squeeze(2)

    def sampling_pipeline(self, pipe, prediction_type):
        return type(pipe)(**pipe.components)  # its own flow-matching Euler sampler: deterministic

    def prediction_type(self, pipe):
        return "flow"

    def distilled_reason(self, configs):
        """Z-Image-Turbo by its own configs: its scheduler's shift is Turbo's 3.0 (the base ships 6.0), or what its
        files record of it names turbo (or another distilled word)."""
        scheduler = configs.scheduler or {}
        if not scheduler.get("use_dynamic_shifting", False) and float(scheduler.get("shift", 0.0)) == TURBO_SHIFT:
            return msg("zimage.distilled_turbo", why=msg("zimage.distilled.shift", shift=TURBO_SHIFT))
        why = super().distilled_reason(configs)
        return msg("zimage.distilled_turbo", why=why) if why else None

    # ----------------------------------------------------------------------------------- tiny model

    def build_tiny(self, seed: int, prediction_type: str):
        import torch
        from diffusers import FlowMatchEulerDiscreteScheduler, ZImagePipeline, ZImageTransformer2DModel
        from transformers import Qwen3Config, Qwen3Model

        from trainer.models.tiny import tiny_vae

        torch.manual_seed(seed)
        transformer = ZImageTransformer2DModel(
            all_patch_size=(2,), all_f_patch_size=(1,), in_channels=16, dim=32, n_layers=2, n_refiner_layers=1,
            n_heads=2, n_kv_heads=2, cap_feat_dim=32, axes_dims=[4, 6, 6], axes_lens=[1536, 512, 512])
        torch.manual_seed(seed + 2)
        qwen = Qwen3Model(Qwen3Config(vocab_size=len(tiny_qwen_vocab()), hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                      max_position_embeddings=MAX_TOKENS, tie_word_embeddings=True))
        return ZImagePipeline(
            transformer=transformer,
            scheduler=FlowMatchEulerDiscreteScheduler(num_train_timesteps=1000, shift=6.0, use_dynamic_shifting=False),
            vae=tiny_vae(seed + 1, latent_channels=16, shift_factor=0.1159, scaling_factor=0.3611,
                         use_quant_conv=False, use_post_quant_conv=False),
            text_encoder=qwen,
            tokenizer=tiny_qwen_tokenizer(),
        )

    def checkpoint_config_dir(self, path):
        """Turbo's configs for a file whose own metadata names Turbo (or another distilled word), else the base's."""
        if distilled_word_in_metadata(path):
            return self.config_dir.with_name("zimage-turbo")
        return self.config_dir


class TensorList(list):
    """A list of tensors (one prompt's embeddings each, of its own length, as ZImagePipeline takes them) that moves
    to a device or dtype as a tensor does."""

    def to(self, *args, **kwargs) -> TensorList:
        return TensorList(t.to(*args, **kwargs) for t in self)


def distilled_word_in_metadata(path) -> str | None:
    """A distilled word (turbo, lightning, …) in a ``.safetensors`` file's own metadata (its header's
    ``__metadata__``: modelspec.title, modelspec.architecture, …), never its name; None without one."""
    found = metadata_distilled_word(checkpoint_metadata(path))
    return found[1] if found else None


def tiny_qwen_vocab() -> dict[str, int]:
    """A byte-level vocabulary (GPT-2's 256 byte characters, no merges) and Qwen's three special tokens."""
    from trainer.models.tokenizer import _bytes_to_unicode

    vocab = {c: i for i, c in enumerate(_bytes_to_unicode().values())}
    for special in ("<|endoftext|>", "<|im_start|>", "<|im_end|>"):
        vocab[special] = len(vocab)
    return vocab


def tiny_qwen_tokenizer():
    """A ``Qwen2Tokenizer`` for tiny test models, offline: Qwen's class, special tokens (pad = <|endoftext|>) and
    chat template over a byte-level vocabulary, so any caption (any language) tokenizes, a byte a token."""
    from transformers import Qwen2Tokenizer

    tokenizer = Qwen2Tokenizer(vocab=tiny_qwen_vocab(), merges=[], model_max_length=131072)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer
