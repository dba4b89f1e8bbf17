"""The settings table (ui/fields.py) and the config (trainer/config/schema.py) name the same options.

A config option without a widget is missing from the app unseen; a widget naming an option the config lacks
fails only when it is used; a choice list copied by hand goes stale when the config gains a value.
"""

from __future__ import annotations

from typing import Literal, get_args, get_origin

from trainer.config.schema import Config, allowed_values, flatten
from ui.fields import FIELDS

# Options the app deliberately does not show: set them in a preset or a config file (`--set` on the CLI).
NOT_SHOWN = {
    "version",  # the file format's version, not a setting
    "save.output_dir",  # the workspace's runs folder, chosen by the app
    # read from the base model or the device, "auto" is right for nearly everyone
    "model.prediction_type", "train.device",
    # the fixed guidance a guidance-distilled base (FLUX.1-dev) trains at: its default is the family's choice
    "model.guidance",
    # dataset layout that kohya folders and presets already decide
    "dataset.caption_ext", "dataset.keep_tokens", "dataset.caption_dropout",
    "dataset.buckets", "dataset.bucket_step", "dataset.min_bucket_side", "dataset.max_bucket_side",
    "dataset.cache_to_disk", "dataset.flip",
    # the preset's recipe: LoRA targets, dropout and the optimizer's fine constants
    "lora.targets", "lora.dropout", "optim.num_cycles", "optim.weight_decay", "optim.beta1", "optim.beta2",
    "optim.eps", "ema.warmup",
    # speed and numerics knobs whose defaults were measured (fp16 scaler, layout, compile, loader workers)
    "train.fp16_init_scale", "train.fp16_growth_interval", "train.channels_last", "train.compile",
    "train.num_workers",
    # the validation loss's fixed timesteps and noise: fixed on purpose
    "validation.timesteps", "validation.seed",
    # the doctor's model measures: on by default, fixed pictures, timesteps and noise on purpose
    "measure.enabled", "measure.pictures", "measure.timesteps", "measure.seed",
    "measure.edge_pictures",
    # housekeeping of saves and samples
    "save.keep_last", "sample.negative_prompt", "sample.seed", "sample.guidance",
    # the guard's own tuning; turning it off is for benchmarks only
    "guard.enabled", "guard.max_consecutive_skips", "guard.max_rollbacks", "guard.detectors", "guard.detect_every",
    # the preset's dose zone, which the Steps page shows but does not edit
    "dose.fit_low", "dose.fit_high",
    # whether that zone is measured yet: the preset says so, the plan shows it
    "dose.provisional",
    # how many pictures the captioner reads at once: a memory knob, 8 suits every captioner offered
    "caption.batch_size",
}  # fmt: skip

CONFIG_OPTIONS = set(flatten(Config().to_dict()))


def test_every_config_option_has_a_widget_or_is_listed_as_not_shown():
    shown = {f.path for f in FIELDS}
    assert not (CONFIG_OPTIONS - shown - NOT_SHOWN), "give these options a row in ui/fields.py or list them above"
    assert not (shown & NOT_SHOWN), "these have a widget: take them off NOT_SHOWN"
    assert NOT_SHOWN <= CONFIG_OPTIONS, "NOT_SHOWN names options the config lacks"


def test_every_widget_names_a_config_option():
    assert {f.path for f in FIELDS} <= CONFIG_OPTIONS


def test_choice_widgets_offer_exactly_the_config_values():
    for f in FIELDS:
        if f.path == "preset":
            continue  # a preset is any preset file found, not a fixed list
        section, key = f.path.split(".")
        annotation = Config.model_fields[section].annotation.model_fields[key].annotation
        literal = get_args(annotation) if get_origin(annotation) is Literal else ()
        if f.kind == "choice":
            assert f.choices == allowed_values(f.path) and f.choices, f.name
            assert not literal or f.choices == literal, f.name
        else:
            assert not literal and not allowed_values(f.path), f"{f.path} has fixed values: make {f.name} a choice"


def test_every_setting_fit_to_memory_may_change_has_a_widget():
    """The Preset step applies the Fit's changes to its widgets: a change to a setting without one would be lost
    (and the text encoders' offload, applied without its fixed captions, refused)."""
    import torch

    from trainer.config.schema import from_dict
    from trainer.plan.memory_fit import _candidates

    cfg = from_dict({"dataset": {"cache_latents": False, "shuffle_tags": True, "tag_dropout": 0.1},
                     "train": {"precision": "fp32", "batch_size": 4}})
    keys = {key for step in _candidates(cfg, torch.device("cuda"), bf16=True) for key, _ in step}
    assert {"model.offload_text_encoders", "dataset.shuffle_tags", "train.batch_size"} <= keys
    assert keys <= {f.path for f in FIELDS}
