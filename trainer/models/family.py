"""What differs between model families, in one object per family, chosen once by name.

A :class:`ModelFamily` holds everything the rest of the trainer would otherwise ask ``family == ...`` about:
the diffusers pipeline class and how to load it, the text encoders and the roles they play (LoRA role, kohya
key prefix, textual-inversion key), the UNet's extra conditioning (SDXL's pooled text and size ids), the kohya
and modelspec names, the shipped config folder, and the measured memory coefficients. Each family is one
adapter module in this package (:mod:`trainer.models.families.sd15`, :mod:`trainer.models.families.sdxl`) that subclasses it
and calls :func:`register`; the rest of the trainer only calls :func:`family`.

Nothing here imports torch or diffusers at import time: the config validates family names through it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from trainer.errors import UserError
from trainer.message import Msg, chained, msg
from trainer.models.base_files import BaseConfigs, recorded_distilled_word

AUTO = "auto"  # model.family's "detect it from the base" value
MODEL_CONFIG_DIR = Path(__file__).resolve().parent / "model_configs"
# (precision kind, checkpointing) → (bytes per step, bytes per sample, bytes per sample and latent pixel): the UNet
# step's transient beyond the LoRA gradients is ``per_step + batch × (per_sample + per_pixel × latent pixels)``
Activations = dict[tuple[str, bool], tuple[float, float, float]]


@dataclass(frozen=True)
class TextEncoder:
    """One text encoder of a family and the names it goes by."""

    component: str  # the pipeline attribute: text_encoder, then text_encoder_N
    tokenizer: str  # its tokenizer's pipeline attribute
    model_class: str  # the transformers class its config builds
    lora_role: str  # the role of its LoRA in LoraModules and the run's files: te | te1 | te2
    kohya_prefix: str  # sd-scripts' key prefix of that LoRA: lora_te | lora_te1 | lora_te2
    embedding_key: str  # the textual-inversion key of its trigger vectors: emb_params | clip_l | clip_g
    max_length: int | None = None  # tokens per caption (None: the tokenizer's model_max_length)
    optional: bool = False  # a base may come without it (SD3.5's T5): the family conditions without it
    trainable: bool = True  # it can take a LoRA and a trained trigger embedding (SD3.5's T5 cannot, here)


class ModelFamily:
    """The base of every family adapter. Subclasses set the class attributes and override what differs."""

    name: ClassVar[str]  # model.family's value, and the shipped config folder's name
    order: ClassVar[int] = 100
    """Where it is listed among the families (the built-in ones by age, then the rest as registered); a subclass
    that does not set its own is listed with the rest."""
    label: ClassVar[str]  # for people: "SD 1.5"
    pipeline_class_name: ClassVar[str]  # diffusers' pipeline class
    pipeline_marker: ClassVar[str | None] = None  # a pipeline class or hub id containing it is of this family
    checkpoint_marker: ClassVar[str | None] = None  # a single-file key prefix only this family's checkpoints hold
    text_encoders: ClassVar[tuple[TextEncoder, ...]]
    pooled_text: ClassVar[bool] = False  # the UNet also takes the pooled text embedding
    kohya_unet_original_names: ClassVar[bool] = False  # sd-scripts names UNet blocks input_blocks.N (SDXL)
    # how lora.safetensors names the denoiser: "unet" | "mmdit" (SD3.5) | "flux" | "zimage"
    kohya_layout: ClassVar[str] = "unet"
    kohya_script: ClassVar[str]  # sd-scripts' training script
    kohya_network_module: ClassVar[str] = "networks.lora"  # sd-scripts' network module for this family's LoRA
    kohya_sdxl: ClassVar[bool] = False  # sd-scripts' ``sdxl`` switch
    base_model_version: ClassVar[str]  # sd-scripts' ss_base_model_version
    modelspec_architecture: ClassVar[str]  # modelspec.architecture of a LoRA of it
    activations: ClassVar[Activations]
    """UNet activation bytes of one sample, ``c0 + c1 × latent pixels``, by (fp32 | half, gradient checkpointing)."""
    small_latent_activations: ClassVar[Activations] = {}
    """A second regime, by the same keys: with gradient checkpointing, under about 24×24 latents, the step's peak
    sits where the linear fit through the larger cells runs out (its per-step term is negative). The plan takes
    the larger of the two; a key left out has one regime."""
    reference_widths: ClassVar[int]  # the summed UNet block widths ``activations`` were measured on
    # the (precision, gradient checkpointing) cells of ``activations`` derived rather than measured at full width
    provisional_activations: ClassVar[frozenset[tuple[str, bool]]] = frozenset()
    min_snr: ClassVar[bool] = True  # min-SNR loss weighting applies (DDPM); flow matching weights its own way
    bf16_native: ClassVar[bool] = False  # trained and released in bf16: fp16 overflows more readily (plan warns)

    # -------------------------------------------------------------------------------------- names

    @property
    def config_dir(self) -> Path:
        """The family's shipped diffusers configs (no weights): for single files and hub ids."""
        return MODEL_CONFIG_DIR / self.name

    @property
    def trainable_text_encoders(self) -> tuple[TextEncoder, ...]:
        """The text encoders that can take a LoRA or a trigger embedding."""
        return tuple(te for te in self.text_encoders if te.trainable)

    @property
    def embedding_keys(self) -> tuple[str, ...]:
        return tuple(te.embedding_key for te in self.trainable_text_encoders)

    @property
    def text_encoder_roles(self) -> tuple[str, ...]:
        return tuple(te.lora_role for te in self.trainable_text_encoders)

    def text_encoder(self, role: str) -> TextEncoder:
        """The text encoder whose LoRA has ``role``."""
        for te in self.text_encoders:
            if te.lora_role == role:
                return te
        raise KeyError(f"{self.name} has no text encoder with the LoRA role {role!r}")

    # ------------------------------------------------------------------------------------ loading

    def pipeline_class(self):
        import diffusers

        return getattr(diffusers, self.pipeline_class_name)

    def checkpoint_config_dir(self, path: Path) -> Path:
        """The shipped configs a single-file checkpoint of this family loads with (a family with several model
        sizes reads which one from the file)."""
        return self.config_dir

    def load_kwargs(self) -> dict[str, Any]:
        """Extra arguments for ``from_pretrained`` / ``from_single_file``."""
        return {}

    def single_file_kwargs(self, path: Path, config_dir: Path, torch_dtype) -> dict[str, Any]:
        """Extra arguments for ``from_single_file`` beyond :meth:`load_kwargs`."""
        return {}

    def build_tiny(self, seed: int, prediction_type: str):
        """The tiny offline pipeline of this family (``tiny-<name>``): random weights, real classes."""
        raise NotImplementedError

    # ----------------------------------------------------------------------------------- the parts

    denoiser_component: ClassVar[str]  # the pipeline attribute of the model the LoRA trains, and its LoRA role
    denoiser_targets: ClassVar[dict[str, list[str]]]
    """The denoiser's LoRA target modules (peft's ``target_modules``) for each ``lora.targets`` choice."""
    text_encoder_targets: ClassVar[dict[str, list[str]]] = {
        "attn": ["q_proj", "k_proj", "v_proj", "out_proj"],
        "attn_ff": ["q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2"],
        "cross_kv": ["q_proj", "k_proj", "v_proj", "out_proj"],  # a text encoder has no cross-attention
    }
    """A (CLIP) text encoder's LoRA targets for each ``lora.targets`` choice."""
    conv_lora: ClassVar[bool] = False  # the denoiser has resnet convolutions that can take LoRA (LoCon)
    writes_single_file: ClassVar[bool] = False  # a pipeline of it can be written as one original-layout file

    def lora_targets(self, role: str, choice: str) -> list[str]:
        """The target modules of the LoRA of ``role`` (the denoiser's or a text encoder's) for ``choice``."""
        if role == self.denoiser_component:
            return list(self.denoiser_targets[choice])
        return list(self.text_encoder_targets[choice])

    def denoiser(self, pipe):
        """The model that denoises the latents (the UNet, or a transformer) in ``pipe``."""
        return getattr(pipe, self.denoiser_component)

    def frozen_components(self, pipe) -> list:
        """Every model of ``pipe`` whose weights a run keeps frozen: the denoiser, the VAE, the text encoders."""
        names = (self.denoiser_component, "vae", *(te.component for te in self.text_encoders))
        return [m for m in (getattr(pipe, n, None) for n in names) if m is not None]

    def text_pairs(self, pipe) -> list[tuple]:
        """(tokenizer, text encoder) of each of the family's text encoders, in its order; an encoder the
        pipeline was loaded without (SD3.5's optional T5) is (None, None)."""
        return [(getattr(pipe, te.tokenizer, None), getattr(pipe, te.component, None)) for te in self.text_encoders]

    def distilled_reason(self, configs: BaseConfigs) -> Msg | None:
        """Why the base's own configs say it is a few-step (timestep-distilled) model, which a run refuses unless
        ``model.allow_distilled``; None when they do not. Every family reads a distilled word in what the files
        record of the base (:func:`recorded_distilled_word`); a family adds what its distilled models' own configs
        carry."""
        return recorded_distilled_word(configs, self.denoiser_component)

    def configs_of(self, pipe) -> BaseConfigs:
        """What a loaded ``pipe``'s own configs say (its configs as loaded, defaults filled in)."""
        return BaseConfigs(pipeline=type(pipe).__name__, scheduler_class=type(pipe.scheduler).__name__,
                           scheduler=dict(pipe.scheduler.config), denoiser=dict(self.denoiser(pipe).config))

    def distillation_note(self, denoiser_config, model_cfg) -> Msg | None:
        """A distillation training keeps rather than undoes (FLUX.1-dev's guidance, trained at a fixed value), read
        from the denoiser's config: never refused, the memory plan and the run's alerts say it with the advice."""
        return None

    def unquantized(self, denoiser) -> tuple:
        """The denoiser's modules whose Linear layers ``model.base_quant`` leaves in the run's dtype (one that casts
        its input to its own weight's dtype would cast it to int8 or fp8)."""
        return ()

    def prepare_weights(self, pipe, weight_dtype) -> None:
        """After the base is loaded in the run's ``weight_dtype``: give any part the dtype it needs instead."""

    def apply_model_settings(self, pipe, model_cfg) -> None:
        """The run's ``model.*`` settings the family's forward pass reads (FLUX.1-dev's ``model.guidance``), set on
        the pipeline's own parts once it is loaded."""

    def latent_channels(self, pipe) -> int:
        """The channels of the denoiser's latents (4 for SD1.5/SDXL, 16 for SD3.5)."""
        return int(self.denoiser(pipe).config.in_channels)

    def models_from_configs(self, folder: Path) -> tuple[Any, Any, list]:
        """The denoiser, the VAE and the text encoders of a diffusers folder's configs (no weights: build them under
        ``torch.device("meta")``)."""
        raise NotImplementedError

    def activation_width(self, denoiser_config) -> int:
        """What the denoiser's activations scale with (compared with :attr:`reference_widths`)."""
        raise NotImplementedError

    def denoiser_from_config(self, config: dict[str, Any]):
        """The denoiser built from its config (under ``torch.device("meta")``: no memory)."""
        raise NotImplementedError

    def denoiser_blocks(self, denoiser) -> list | None:
        """The denoiser's repeated blocks in forward order, which ``model.block_swap`` may keep in CPU memory between
        uses (each must be called once per forward, taking and returning tensors); None: this family cannot swap."""
        return None

    def denoiser_config(self, pipe) -> dict[str, Any]:
        """The denoiser's config, as the run's LoRA files record it."""
        return dict(self.denoiser(pipe).config)

    # -------------------------------------------------------------------------------- conditioning

    def text_max_lengths(self, pipe) -> list[int | None]:
        """Tokens per caption of each text encoder of ``pipe`` (None: its tokenizer's ``model_max_length``)."""
        return [te.max_length for te in self.text_encoders]

    def tokenize(self, tokenizer, captions: list[str], max_length: int, device):
        """What :meth:`encode_text` takes from ``tokenizer`` for ``captions``: their token ids, padded to
        ``max_length`` (a family whose pipeline wraps the caption first, or needs the attention mask, overrides it)."""
        return tokenizer(captions, padding="max_length", max_length=max_length, truncation=True,
                         return_tensors="pt").input_ids.to(device)

    def encode_text(self, encoders: list, input_ids: list) -> tuple[Any, Any | None]:
        """``encoder_hidden_states`` and the pooled embedding (None if the denoiser takes none), from each text
        encoder's token ids."""
        raise NotImplementedError

    prompt_embedding_names: ClassVar[tuple[str, ...]]
    """What the family's pipeline's ``encode_prompt`` returns, in its order, named as its ``__call__`` takes them in
    place of ``prompt`` and ``negative_prompt``."""

    def encode_prompt_kwargs(self) -> dict[str, Any]:
        """Arguments the family's ``encode_prompt`` needs beyond the ones every family's takes."""
        return {}

    def encode_prompts(self, pipe, prompts: list[str], negative: list[str] | None, device) -> dict[str, Any]:
        """What ``pipe(prompt=prompts, negative_prompt=negative)`` encodes before it denoises, by the pipeline's own
        ``encode_prompt`` (with guidance, so the negative half is there whenever the pipeline would use it), as the
        keyword arguments (:attr:`prompt_embedding_names`) that draw the same pictures without the text encoders."""
        out = pipe.encode_prompt(prompt=prompts, device=device, num_images_per_prompt=1,
                                 do_classifier_free_guidance=True, negative_prompt=negative,
                                 **self.encode_prompt_kwargs())
        return dict(zip(self.prompt_embedding_names, out, strict=True))

    def added_cond_kwargs(self, pooled, buckets: list[tuple[int, int]], device) -> dict | None:
        """The UNet's ``added_cond_kwargs`` for pictures trained at ``buckets`` ((w, h) each), or None."""
        return None

    # ---------------------------------------------------------------------------- the forward pass

    def noise_schedule(self, scheduler_config, prediction_type: str):
        """How this family's denoiser is trained (a :class:`trainer.models.families.noise.NoiseSchedule`), from the
        base's scheduler config."""
        raise NotImplementedError

    def predict(self, denoiser, noisy, timesteps, hidden, pooled, buckets: list[tuple[int, int]]):
        """The denoiser's prediction for ``noisy`` latents at (model) ``timesteps``, conditioned on the text's
        ``hidden`` states (and ``pooled`` embedding), for pictures trained at ``buckets``."""
        raise NotImplementedError

    def sampling_pipeline(self, pipe, prediction_type: str):
        """A pipeline over the same modules that draws the run's samples, deterministic and in few steps."""
        raise NotImplementedError

    def prediction_type(self, pipe) -> str:
        """What the base's denoiser predicts ("auto" resolves to this)."""
        raise NotImplementedError


# ----------------------------------------------------------------------------------------- registry

_REGISTRY: dict[str, ModelFamily] = {}
_discovered = False
DEFAULT = "sd15"  # what a base that shows no family's marker is


def register(adapter: type[ModelFamily]) -> type[ModelFamily]:
    """Add a family (use as a class decorator in its adapter module)."""
    _REGISTRY[adapter.name] = adapter()
    return adapter


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def discover() -> None:
    """Import every adapter module in ``trainer/models/families/`` (each registers its family), by file name."""
    import pkgutil

    from trainer.models import families

    for info in sorted(pkgutil.iter_modules(families.__path__), key=lambda m: m.name):
        importlib.import_module(f"{families.__name__}.{info.name}")


def _registry() -> dict[str, ModelFamily]:
    global _discovered
    if not _discovered:
        _discovered = True
        discover()
    return dict(sorted(_REGISTRY.items(), key=lambda item: vars(type(item[1])).get("order", ModelFamily.order)))


class _Names:
    """The registered families' names, read live (a family registered later is in it), built-in ones first."""

    def __iter__(self):
        return iter(_registry())

    def __contains__(self, name: object) -> bool:
        return name in _registry()

    def __len__(self) -> int:
        return len(_registry())

    def __repr__(self) -> str:
        return repr(tuple(self))


FAMILIES = _Names()


def families() -> tuple[ModelFamily, ...]:
    return tuple(_registry().values())


def family(name: str) -> ModelFamily:
    """The adapter of the family called ``name`` (model.family's value, not "auto")."""
    registry = _registry()
    if name not in registry:
        raise UserError(msg("error.family.unknown", name=name, choices=chained("error.either", list(registry))))
    return registry[name]


def chosen_family(name: str) -> ModelFamily | None:
    """model.family's adapter, or None when it says "auto" (detect it from the base)."""
    return None if name == AUTO else family(name)


def family_of_pipeline(class_name: str) -> ModelFamily:
    """The family of a diffusers pipeline class name (``StableDiffusionXLPipeline`` → SDXL)."""
    for f in families():
        if f.pipeline_marker and f.pipeline_marker in class_name:
            return f
    return family(DEFAULT)


def family_of_hub_id(repo_id: str) -> ModelFamily:
    """A guess from a hub id's name alone (for estimates made before anything is downloaded), its hyphens and
    underscores ignored (``Tongyi-MAI/Z-Image`` shows ZImage's marker)."""
    name = repo_id.lower().replace("-", "").replace("_", "")
    for f in families():
        if f.pipeline_marker and f.pipeline_marker.lower() in name:
            return f
    return family(DEFAULT)


def family_of_checkpoint_keys(keys) -> ModelFamily:
    """The family of a single-file checkpoint from its tensor names."""
    keys = list(keys)
    for f in families():
        if f.checkpoint_marker and any(k.startswith(f.checkpoint_marker) for k in keys):
            return f
    return family(DEFAULT)


FAMILY_ATTRIBUTES = ("name", "label", "pipeline_class_name", "text_encoders", "kohya_script", "base_model_version",
                     "modelspec_architecture", "activations", "reference_widths",
                     "denoiser_component", "denoiser_targets", "prompt_embedding_names")
"""What every adapter must set (the tests check each registered family has them all)."""
