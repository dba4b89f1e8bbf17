"""The one table from UI fields to config paths.

Every widget that holds a setting is declared here once: its name (the keyword its handlers receive), the
config path it reads and writes, its kind and which wizard step shows it; its label and help line are the
words ``field.<name>`` and ``field.<name>.info`` in ``words/fields.py``.
:func:`values_from_config` and :func:`config_from_values` are the only two ways between widgets and a
:class:`~trainer.config.schema.Config`, so a field added out of order cannot shift anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.config.schema import Config, allowed_values, from_dict
from trainer.errors import UserError
from trainer.message import msg
from words import TEXTS, say


@dataclass(frozen=True)
class Field:
    name: str
    path: str
    kind: str  # text | int | float | check | choice | lines | csv | base | judge
    step: str  # dataset | caption | steps | preset | advanced | sample | validation | judge

    @property
    def choices(self) -> tuple[str, ...]:
        """A choice field's values, read from the config's declaration each time (a registered optimizer shows
        up without an edit here); the preset's list is the presets found, filled in by the preset step."""
        return allowed_values(self.path) if self.kind == "choice" else ()

    def choice_items(self, lang: str) -> list[tuple[str, str]]:
        """A choice field's (label, value) pairs: a value that is a word has its words (``field.<name>.choice.<value>``),
        a name (fp16, adamw, sd15) shows as it is."""
        codes = {v: f"field.{self.name}.choice.{v}" for v in self.choices}
        return [(say(code, lang) if code in TEXTS else v, v) for v, code in codes.items()]

    def label(self, lang: str) -> str:
        return say(f"field.{self.name}", lang)

    def help(self, lang: str) -> str | None:
        """The line under the widget, where the field has one."""
        code = f"field.{self.name}.info"
        return say(code, lang) if code in TEXTS else None

    @property
    def en(self) -> str:
        return self.label("en")

    @property
    def ko(self) -> str:
        return self.label("ko")


def _f(name: str, path: str, kind: str, step: str) -> Field:
    return Field(name, path, kind, step)


FIELDS: tuple[Field, ...] = (
    # 1 Dataset
    _f("dataset_path", "dataset.path", "text", "dataset"),
    _f("trigger", "dataset.trigger", "text", "dataset"),
    _f("reg_path", "dataset.reg_path", "text", "dataset"),
    # 1 Dataset, "Caption the pictures" accordion
    _f("captioner", "caption.captioner", "choice", "caption"),
    _f("caption_model", "caption.model", "text", "caption"),
    _f("caption_general", "caption.general_threshold", "float", "caption"),
    _f("caption_character", "caption.character_threshold", "float", "caption"),
    # 2 Steps
    _f("repeats", "dataset.repeats", "int", "steps"),
    _f("epochs", "train.epochs", "int", "steps"),
    _f("batch_size", "train.batch_size", "int", "steps"),
    _f("grad_accum", "train.grad_accum", "int", "steps"),
    _f("max_steps", "train.max_steps", "int", "steps"),
    _f("save_every", "save.every_steps", "int", "steps"),
    # 3 Preset
    _f("preset", "preset", "choice", "preset"),
    _f("base", "model.base", "base", "preset"),
    _f("family", "model.family", "choice", "preset"),
    _f("run_name", "save.name", "text", "preset"),
    _f("rank", "lora.rank", "int", "preset"),
    _f("alpha", "lora.alpha", "float", "preset"),
    _f("lr", "optim.lr", "float", "preset"),
    _f("resolution", "dataset.resolution", "int", "preset"),
    # 3 Preset, advanced accordion
    _f("precision", "train.precision", "choice", "advanced"),
    _f("optimizer", "optim.optimizer", "choice", "advanced"),
    _f("scheduler", "optim.scheduler", "choice", "advanced"),
    _f("warmup_steps", "optim.warmup_steps", "int", "advanced"),
    _f("max_grad_norm", "optim.max_grad_norm", "float", "advanced"),
    _f("ema", "ema.enabled", "check", "advanced"),
    _f("ema_decay", "ema.decay", "float", "advanced"),
    _f("conv_rank", "lora.conv_rank", "int", "advanced"),
    _f("conv_alpha", "lora.conv_alpha", "float", "advanced"),
    _f("conv_blocks", "lora.conv_blocks", "csv", "advanced"),
    _f("train_te", "lora.train_text_encoder", "check", "advanced"),
    _f("te_lr", "optim.te_lr", "float", "advanced"),
    _f("trigger_embedding", "lora.trigger_embedding", "check", "advanced"),
    _f("embedding_lr", "optim.embedding_lr", "float", "advanced"),
    _f("prior_loss_weight", "dataset.prior_loss_weight", "float", "advanced"),
    _f("masked_loss", "dataset.masked_loss", "check", "advanced"),
    _f("unmasked_weight", "dataset.unmasked_weight", "float", "advanced"),
    _f("tag_dropout", "dataset.tag_dropout", "float", "advanced"),
    _f("shuffle_tags", "dataset.shuffle_tags", "check", "advanced"),
    _f("noise_offset", "train.noise_offset", "float", "advanced"),
    _f("min_snr_gamma", "train.min_snr_gamma", "float", "advanced"),
    _f("grad_ckpt", "train.gradient_checkpointing", "check", "advanced"),
    _f("cache_latents", "dataset.cache_latents", "check", "advanced"),
    _f("offload_te", "model.offload_text_encoders", "check", "advanced"),
    _f("base_quant", "model.base_quant", "choice", "advanced"),
    _f("block_swap", "model.block_swap", "int", "advanced"),
    _f("on_nonfinite", "guard.on_nonfinite", "choice", "advanced"),
    _f("allow_distilled", "model.allow_distilled", "check", "advanced"),
    _f("seed", "train.seed", "int", "advanced"),
    # samples
    _f("sample_enabled", "sample.enabled", "check", "sample"),
    _f("sample_every", "sample.every_steps", "int", "sample"),
    _f("sample_steps", "sample.steps", "int", "sample"),
    _f("images_per_prompt", "sample.images_per_prompt", "int", "sample"),
    _f("sample_prompts", "sample.prompts", "lines", "sample"),
    _f("val_path", "validation.path", "text", "validation"),
    _f("val_holdout", "validation.holdout", "int", "validation"),
    _f("val_every", "validation.every_steps", "int", "validation"),
    # the picture judge: reads the sample pictures for any subject (trainer/doctor/clip_judge.py)
    _f("judge", "measure.judge", "judge", "judge"),
)
BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS}
NAMES: tuple[str, ...] = tuple(f.name for f in FIELDS)


def fields_of(step: str) -> list[Field]:
    return [f for f in FIELDS if f.step == step]


def to_widget(f: Field, value: Any) -> Any:
    """A config value as its widget holds it."""
    if f.kind == "lines":
        return "\n".join(value)
    if f.kind == "csv":
        return ", ".join(value)
    return value


def from_widget(f: Field, value: Any) -> Any:
    """A widget's value as the config wants it (None from an emptied number box is left to validation)."""
    if f.kind == "lines":
        return [line.strip() for line in str(value or "").splitlines() if line.strip()]
    if f.kind == "csv":
        return [part.strip() for part in str(value or "").split(",") if part.strip()]
    if f.kind == "int" and isinstance(value, float) and value.is_integer():
        return int(value)
    if f.kind in ("text", "base", "judge"):
        return str(value or "").strip()
    return value


def values_from_config(cfg: Config) -> dict[str, Any]:
    return {f.name: to_widget(f, cfg.get(f.path)) for f in FIELDS}


def config_from_values(values: dict[str, Any], output_dir: Path, extra_preset_dirs: list[Path] | None = None) -> Config:
    """The full config: the preset's values, each field's value on top, the runs folder of the workspace.

    Raises :class:`UserError` naming the field (by its config key) when a value is out of range.
    """
    from trainer.config.presets import preset_config

    preset_id = values.get("preset") or ""
    if any(c in preset_id for c in "/\\:") or preset_id.endswith(".toml"):  # an id, never a file path
        raise UserError(msg("ui.err_not_preset_id", preset=preset_id))
    base = preset_config(preset_id, extra_preset_dirs) if preset_id else Config()
    data = base.to_dict()
    data.pop("preset", None)  # folded in already (and a user preset is not on from_dict's search path)
    for f in FIELDS:
        if f.name == "preset" or f.name not in values:
            continue
        value = from_widget(f, values[f.name])
        if value is None:
            raise UserError(msg("ui.err_field_empty", key=f.path))
        section, key = f.path.split(".")
        data[section][key] = value
    data["save"]["output_dir"] = str(output_dir)
    cfg = from_dict(data, origin="the settings")
    cfg.preset = preset_id
    return cfg
