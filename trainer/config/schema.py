"""The one typed, versioned training config.

Loading order: defaults ← preset (sparse TOML) ← the user's TOML ← ``--set section.key=value``.
Every key is declared here; an unknown key, a wrong type or a value out of range is a :class:`UserError`
naming the key, the value and what is allowed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from trainer.config.choices import OneOf
from trainer.config.fieldtypes import MAX_STEPS as MAX_STEPS
from trainer.config.fieldtypes import FamilyName, OptimizerName, PathText, Steps, TriggerText
from trainer.config.invalid import format_validation_error
from trainer.config.overrides import apply_overrides, deep_merge, flatten, read_toml
from trainer.errors import BadValue, UserError
from trainer.message import msg
from trainer.models.family import AUTO
from trainer.toml_writer import dumps_toml

CONFIG_VERSION = 1

# The seed's four sample-prompt kinds. "{trigger}" is replaced by dataset.trigger at run time.
DEFAULT_SAMPLE_PROMPTS = ["{trigger}", "{trigger}, sitting on a bench in a park, from the side",
                          "{trigger}, wearing a red raincoat", "a person standing in a city street"]


class _Section(BaseModel):
    # allow_inf_nan=False: inf/nan (TOML inf, JSON Infinity, 1e999) in any float field is refused by name; no
    # setting means "infinitely", and a non-finite number cannot even be sent to the browser as JSON
    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=False, allow_inf_nan=False)


class ModelConfig(_Section):
    base: PathText = Field("tiny-sd15", min_length=1)
    """"tiny-sd15", "tiny-sdxl", "demo", a local diffusers folder, a local .safetensors/.ckpt, or a hub id."""
    family: FamilyName = AUTO
    """"auto" (read from the base) or a registered family's name (trainer.models.family): "sd15", "sdxl"."""
    prediction_type: Literal["auto", "epsilon", "v_prediction"] = "auto"
    allow_distilled: bool = False
    """Train on a turbo/LCM/lightning base anyway (docs/training-guide.md: "Do not train on distilled models")."""
    guidance: float = Field(1.0, ge=0.0, le=30.0)  # a guidance-distilled base's (FLUX.1-dev's) training guidance
    offload_text_encoders: bool = False
    """Encode every caption and sample prompt once before training, then move the text encoders to the CPU for the
    run (kohya's ``cache_text_encoder_outputs``; SD3.5's weigh 10.4 GiB in bf16). See :meth:`Config.offload_blockers`."""
    base_quant: Literal["none", "int8", "nf4", "fp8"] = "none"
    """The frozen denoiser's Linear weights in 8 bits (int8), 4 bits (nf4) or fp8; the LoRA stays in the run's precision."""
    block_swap: int = Field(0, ge=0, le=1000)
    """This many of the denoiser's blocks wait in CPU memory and visit the device for their forward and backward."""


class DatasetConfig(_Section):
    path: PathText = ""
    trigger: TriggerText = ""
    resolution: int = Field(512, ge=64, le=4096, multiple_of=8)
    repeats: int = Field(1, ge=1, le=10000)
    """Repeats for folders without an ``N_`` prefix."""
    caption_ext: str = ".txt"
    shuffle_tags: bool = False
    keep_tokens: int = Field(1, ge=0, le=255)
    caption_dropout: float = Field(0.0, ge=0.0, le=1.0)
    tag_dropout: float = Field(0.0, ge=0.0, le=1.0)
    """Chance that each tag after the first ``keep_tokens`` is left out of a step's caption (sd-scripts'
    ``caption_tag_dropout_rate``): the trigger learns to carry the subject without the other tags."""
    buckets: bool = True
    bucket_step: int = Field(64, ge=8, le=512, multiple_of=8)
    min_bucket_side: int = Field(256, ge=8, le=4096)
    max_bucket_side: int = Field(1024, ge=8, le=8192)
    cache_latents: bool = True
    cache_to_disk: bool = False
    flip: bool = False
    reg_path: PathText = ""
    """Prior (regularisation) images: pictures of what the base model should go on drawing, captioned without
    the trigger, in ``N_name`` folders like the dataset's (kohya's reg folder). They are trained beside the
    dataset, so no-trigger prompts stay where they were. Unlike sd-scripts they are not balanced to the
    dataset's count: their folders' repeats say how often they come."""
    prior_loss_weight: float = Field(1.0, ge=0.0, le=10.0)
    """Loss weight of prior images (sd-scripts' ``prior_loss_weight``)."""
    masked_loss: bool = False  # each picture's masked part teaches (trainer/data/masks.py; sd-scripts' masked_loss)
    unmasked_weight: float = Field(0.1, ge=0.0, le=1.0)  # what outside a mask still counts (OneTrainer's)

    @field_validator("caption_ext")
    @classmethod
    def _dot(cls, v: str) -> str:
        if not v.startswith(".") or len(v) < 2:
            raise BadValue(msg("error.value.caption_ext"))
        return v


class CaptionConfig(_Section):
    """The captioner the Dataset step and ``python -m trainer caption`` run over bare pictures (trainer/caption/)."""

    captioner: Literal["auto", "tagger", "florence2", "blip"] = "auto"
    """auto: a WD14 tagger for an anime/illustration base (tags), Florence-2 otherwise (sentences)."""
    model: PathText = ""
    """A local folder or hub id; "" = the captioner's usual model (trainer.caption.models.DEFAULT_MODELS)."""
    general_threshold: float = Field(0.35, ge=0.0, le=1.0)
    """The tagger writes a general tag at or above this probability (SmilingWolf's suggested 0.35)."""
    character_threshold: float = Field(0.85, ge=0.0, le=1.0)
    """The tagger writes a character-name tag at or above this probability (0.85: a wrong name is worse)."""
    batch_size: int = Field(8, ge=1, le=256)


class LoraConfig(_Section):
    rank: int = Field(16, ge=1, le=1024)
    alpha: float = Field(16.0, gt=0.0, le=4096.0)
    targets: Literal["attn", "attn_ff", "cross_kv"] = "attn"
    """attn: attention projections; attn_ff adds the feed-forward and proj_in/proj_out (sd-scripts' default set);
    cross_kv: only the cross-attention's key and value projections, the layers that read the prompt (a new word's
    meaning is learnt where the words are read, and little else moves; pair it with conv_rank for fine detail).
    A text-encoder LoRA takes the attention projections under attn and cross_kv."""
    conv_rank: int = Field(0, ge=0, le=1024)
    """Rank of LoRA on the UNet's resnet convolutions (kohya's conv_dim, "LoCon"); 0 = none. They reach the
    pixels' fine detail (stripes, eyes, texture) that attention layers alone render blurred."""
    conv_alpha: float = Field(0.0, ge=0.0, le=4096.0)
    """Alpha of the convolution LoRA; 0 = the linear layers' ratio (alpha / rank x conv_rank)."""
    conv_blocks: list[str] = Field(default_factory=list)
    """UNet blocks whose resnets get convolution LoRA, by diffusers name ("up_blocks.2", "mid_block"); empty = all.
    The up path's last blocks draw the finest detail at the least cost."""
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    train_text_encoder: bool = False
    trigger_embedding: bool = False
    """Also train the trigger word's own token embeddings (pivotal tuning; needs dataset.trigger); they are saved
    as embedding.safetensors beside each LoRA file, a textual inversion named after the trigger."""

    @property
    def effective_conv_alpha(self) -> float:
        return self.conv_alpha or self.alpha / self.rank * self.conv_rank


class OptimConfig(_Section):
    optimizer: OptimizerName = "adamw"
    lr: float = Field(1e-4, gt=0.0, le=10.0)
    te_lr: float = Field(0.0, ge=0.0, le=10.0)
    """Text-encoder lr; 0 means the same as ``lr``."""
    embedding_lr: float = Field(0.0, ge=0.0, le=10.0)
    """lr of the trigger embedding (lora.trigger_embedding); 0 means the same as ``lr``."""
    scheduler: Literal["constant", "constant_with_warmup", "cosine", "linear", "cosine_with_restarts"] = (
        "constant_with_warmup"
    )
    warmup_steps: Steps = 0
    num_cycles: int = Field(1, ge=1, le=100)
    max_grad_norm: float = Field(1.0, ge=0.0)
    """0 turns clipping off."""
    weight_decay: float = Field(1e-2, ge=0.0, le=1.0)
    beta1: float = Field(0.9, ge=0.0, lt=1.0)
    beta2: float = Field(0.999, ge=0.0, lt=1.0)
    eps: float = Field(1e-8, gt=0.0, le=1e-2)


class TrainConfig(_Section):
    epochs: int = Field(10, ge=1, le=100000)
    max_steps: Steps = 0
    """0 = computed from epochs."""
    batch_size: int = Field(1, ge=1, le=1024)
    grad_accum: int = Field(1, ge=1, le=1024)
    precision: Literal["fp32", "bf16", "fp16"] = "bf16"
    seed: int = Field(42, ge=0, le=2**32 - 1)
    gradient_checkpointing: bool = False
    noise_offset: float = Field(0.0, ge=0.0, le=1.0)
    min_snr_gamma: float = Field(0.0, ge=0.0, le=100.0)
    """0 turns min-SNR weighting off; 5 is the paper's value."""
    fp16_init_scale: float = Field(65536.0, gt=0.0, le=2.0**24)
    """The fp16 loss scaler's starting scale (GradScaler's default); it halves on overflow."""
    fp16_growth_interval: Steps = Field(2000, ge=1)
    """Steps without overflow before the fp16 loss scale doubles."""
    device: Literal["auto", "cpu", "cuda", "mps"] = "auto"
    channels_last: bool = True
    """UNet activations in channels-last layout on CUDA (faster convolutions on tensor cores); ignored on CPU,
    where it measured slower."""
    compile: bool = False
    num_workers: int = Field(0, ge=0, le=64)


class EmaConfig(_Section):
    enabled: bool = False
    decay: float = Field(0.999, gt=0.0, lt=1.0)
    warmup: bool = True
    """Ramp the decay up as ``min(decay, (1 + step) / (10 + step))`` so early averages are not stuck at init."""


class SaveConfig(_Section):
    output_dir: PathText = "runs"
    name: str = Field("lora", min_length=1, max_length=100)
    every_steps: Steps = 0
    """0 = only the final save."""
    keep_last: Steps = 0
    """0 = keep every checkpoint."""

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v: str) -> str:
        if any(c in v for c in '/\\:*?"<>|') or v in {".", ".."}:
            raise BadValue(msg("error.value.file_name"))
        return v


class SampleConfig(_Section):
    every_steps: Steps = 0
    """0 = sample at every checkpoint (and at step 0 and the end)."""
    prompts: list[str] = Field(default_factory=lambda: list(DEFAULT_SAMPLE_PROMPTS))
    negative_prompt: str = ""
    seed: int = Field(1234, ge=0, le=2**32 - 1)
    images_per_prompt: int = Field(1, ge=1, le=16)
    """Pictures per prompt, drawn with seeds ``seed``, ``seed + 1``, …: one seed's picture can be lucky or unlucky,
    and the Review measures average over all of them."""
    steps: int = Field(20, ge=1, le=200)
    guidance: float = Field(7.0, ge=0.0, le=50.0)
    enabled: bool = True


class ValidationConfig(_Section):
    """Validation loss: the denoising loss on pictures the LoRA does not train on, at fixed timesteps and noise."""

    path: PathText = ""
    """A folder of held-out pictures with captions (read like the dataset folder); "" = none."""
    holdout: int = Field(0, ge=0, le=10_000)
    """Pictures held back from the dataset for it (they do not train; the plan counts without them)."""
    every_steps: Steps = 0
    """0 = at every checkpoint and sample point, and at the end."""
    timesteps: int = Field(5, ge=1, le=50)
    """Fixed timesteps, spread evenly over the noise schedule, each picture is scored at."""
    seed: int = Field(0, ge=0, le=2**32 - 1)
    """The fixed noise's seed."""

    @property
    def enabled(self) -> bool:
        return bool(self.path) or self.holdout > 0


class MeasureConfig(_Section):
    """The doctor's measures from the run's own model (trainer/train/probes.py), at fixed pictures, timesteps and
    noise: does the trigger alone bring the subject, how far no-trigger predictions moved, which picture the
    trigger learns unlike the rest."""

    enabled: bool = True
    pictures: int = Field(24, ge=1, le=1000)
    """At most this many pictures of each set (the subject's, the prior's) are scored, spread over the folder."""
    timesteps: int = Field(3, ge=1, le=50)
    """Fixed timesteps, spread evenly over the noise schedule, each picture is scored at."""
    seed: int = Field(0, ge=0, le=2**32 - 1)
    """The fixed noise's seed."""
    judge: str = ""
    """A CLIP or SigLIP model (local folder or hub id) that reads the sample pictures too; "" = none."""
    edge_pictures: int = Field(12, ge=0, le=64)
    """Where a picture judge reads the run, the saves it reads near its likeness line are drawn again at this
    many pictures a prompt once training ends, and read; 0 = never (Review's "More pictures" still can)."""


class GuardConfig(_Section):
    enabled: bool = True
    """Off: no finiteness checks or decisions (benchmarks only; a NaN then reaches the weights)."""
    on_nonfinite: Literal["stop", "skip", "rollback"] = "stop"
    max_consecutive_skips: int = Field(5, ge=1, le=1000)
    max_rollbacks: int = Field(2, ge=0, le=20)
    detectors: bool = True
    """Run the detectors short of NaN (spikes, clipping, trends, weight growth, dose) while training."""
    detect_every: Steps = Field(25, ge=1)


class DoseConfig(_Section):
    """The zone in which ``lr × total_steps × alpha / rank`` usually lands a good LoRA (from the preset)."""

    fit_low: float = Field(0.05, gt=0.0)
    fit_high: float = Field(0.3, gt=0.0)
    provisional: bool = False
    """The zone was carried over from another family, not measured on this one: the plan says so."""

    @model_validator(mode="after")
    def _ordered(self) -> DoseConfig:
        if self.fit_low >= self.fit_high:
            raise BadValue(msg("error.value.fit_order", low=self.fit_low, high=self.fit_high))
        return self


class Config(_Section):
    version: int = CONFIG_VERSION
    preset: str = ""
    """The preset these values started from (informational once resolved)."""
    model: ModelConfig = Field(default_factory=ModelConfig)
    dataset: DatasetConfig = Field(default_factory=DatasetConfig)
    caption: CaptionConfig = Field(default_factory=CaptionConfig)
    lora: LoraConfig = Field(default_factory=LoraConfig)
    optim: OptimConfig = Field(default_factory=OptimConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    ema: EmaConfig = Field(default_factory=EmaConfig)
    save: SaveConfig = Field(default_factory=SaveConfig)
    sample: SampleConfig = Field(default_factory=SampleConfig)
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    measure: MeasureConfig = Field(default_factory=MeasureConfig)
    guard: GuardConfig = Field(default_factory=GuardConfig)
    dose: DoseConfig = Field(default_factory=DoseConfig)

    @field_validator("version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != CONFIG_VERSION:
            raise BadValue(msg("error.value.version", version=CONFIG_VERSION))
        return v

    @model_validator(mode="after")
    def _offload_needs_fixed_text(self) -> Config:
        """Text encoders that train, or captions that change every step, cannot be encoded once up front."""
        if blocking := (self.offload_blockers() if self.model.offload_text_encoders else []):
            code = "offload_trained" if blocking[0].startswith("lora.") else "offload_augmented"
            raise BadValue(msg(f"error.value.{code}", key=blocking[0], value=self.get(blocking[0])))
        return self

    def offload_blockers(self) -> list[str]:
        """What keeps ``model.offload_text_encoders`` off: text encoders that train (a LoRA, the trigger's embedding),
        captions that change every step (shuffled or dropped tags). Caption dropout only adds the empty caption."""
        keys = ("lora.train_text_encoder", "lora.trigger_embedding", "dataset.shuffle_tags", "dataset.tag_dropout")
        return [key for key in keys if self.get(key)]  # a dropout of 0 is off

    @property
    def effective_te_lr(self) -> float:
        return self.optim.te_lr or self.optim.lr

    @property
    def effective_embedding_lr(self) -> float:
        return self.optim.embedding_lr or self.optim.lr

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def to_toml(self) -> str:
        return dumps_toml(self.to_dict())

    def get(self, dotted: str) -> Any:
        obj: Any = self
        for part in dotted.split("."):
            obj = getattr(obj, part)
        return obj


def allowed_values(path: str) -> tuple[str, ...]:
    """The values a choice setting accepts (a ``Literal`` or a registry such as the optimizers); () for others."""
    section, _, key = path.rpartition(".")
    model: type[BaseModel] = Config.model_fields[section].annotation if section else Config  # type: ignore[assignment]
    info = model.model_fields[key]
    if get_origin(info.annotation) is Literal:
        return tuple(get_args(info.annotation))
    return next((m.names() for m in info.metadata if isinstance(m, OneOf)), ())


# --------------------------------------------------------------------------------------------- loading


def from_dict(data: dict[str, Any], origin: str = "") -> Config:
    """Validate a (possibly sparse) dict against the schema, applying its preset first."""
    data = dict(data)
    preset_name = data.get("preset") or ""
    if isinstance(preset_name, dict):  # a preset file read as a config ([preset] is its name table)
        if not str(origin).endswith(".toml"):
            raise UserError(msg("error.config.preset_table"))
        preset_name = data["preset"] = str(origin)  # the file is its own preset
    if preset_name:
        from trainer.config.presets import load_preset, sets_every_key

        if not sets_every_key(data):  # a resolved config (a run's own): its preset is a name, and may be the user's
            data = deep_merge(load_preset(preset_name).overrides, data)
    try:
        return Config.model_validate(data)
    except ValidationError as e:
        raise UserError(format_validation_error(e, origin, Config)) from None


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> Config:
    """Load a config file (or the defaults when ``path`` is None) and apply ``--set`` overrides."""
    data: dict[str, Any] = read_toml(path) if path else {}
    data = apply_overrides(data, overrides)
    cfg = from_dict(data, origin=str(path) if path else "")
    here = Path(path).parent if path else None
    for section, attr in ((cfg.dataset, "path"), (cfg.dataset, "reg_path"), (cfg.validation, "path")):
        folder = getattr(section, attr)
        if here is not None and folder and not Path(folder).is_absolute():
            # A relative picture folder in a file means relative to that file, as users expect.
            candidate = (here / folder).resolve()
            if candidate.exists():
                setattr(section, attr, str(candidate))
    return cfg


def save_config(cfg: Config, path: str | Path) -> None:
    from trainer.io import atomic_write_text

    atomic_write_text(path, cfg.to_toml())


def diff_configs(a: Config, b: Config) -> dict[str, tuple[Any, Any]]:
    """Flat ``{dotted.key: (a_value, b_value)}`` for every setting that differs (``preset`` ignored)."""
    fa, fb = flatten(a.to_dict()), flatten(b.to_dict())
    keys = sorted(set(fa) | set(fb))
    return {k: (fa.get(k), fb.get(k)) for k in keys if fa.get(k) != fb.get(k) and k != "preset"}
