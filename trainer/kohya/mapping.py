"""The one table that says how kohya_ss / sd-scripts settings become ours and back.

Each :class:`Row` names the key in the kohya_ss GUI's saved JSON (``gui``), the sd-scripts key (``sd``: a
``train_network.py`` argument as its ``--config_file`` TOML spells it, or a ``dataset_config`` key), our dotted
config key, and the two converters. A row without ``ours`` is a setting we do not carry over; its note says
what we do instead or why it does not matter. The importer, the exporter and docs/kohya.md's table all read
this table (:func:`render_table`), so the three cannot drift apart.

Key names were checked against kohya_ss ``kohya_gui/lora_gui.py`` (``save_configuration``'s parameters are
the JSON's keys; ``train_model`` builds the sd-scripts config) and sd-scripts ``library/train_util.py``,
``train_network.py`` and ``library/config_util.py`` (the argument definitions and the dataset schema). SD3.5's own
settings are :data:`trainer.kohya.sd3.SD3_ROWS`, read only for an SD3 config, and Flux.1's
:data:`trainer.kohya.flux.FLUX_ROWS`, read only for a Flux.1 config.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainer.config.choices import OPTIMIZERS
from trainer.message import Msg, msg
from trainer.models.family import chosen_family


@dataclass(frozen=True)
class Changed:
    """A converter's answer when the value had to change on purpose; ``why`` says why."""

    value: Any
    why: Msg


def same(v: Any) -> Any:
    return v


def as_int(v: Any) -> int:
    if isinstance(v, bool):
        raise ValueError("expected a number, got true/false")
    f = float(v)  # the GUI writes numbers as "0.0001", 64.0 or 8
    if not f.is_integer():
        raise ValueError(f"expected a whole number, got {v!r}")
    return int(f)


def as_float(v: Any) -> float:
    if isinstance(v, bool):
        raise ValueError("expected a number, got true/false")
    return float(v)


def as_bool(v: Any) -> bool:
    if isinstance(v, str):
        if v.strip().lower() in ("true", "1", "yes"):
            return True
        if v.strip().lower() in ("false", "0", "no", ""):
            return False
        raise ValueError(f"expected true or false, got {v!r}")
    return bool(v)


def resolution_to_ours(v: Any) -> Any:
    """kohya "512,512" / "512" / [w, h] / 512 → one side; a non-square area becomes the square of equal area."""
    if isinstance(v, list | tuple):
        sides = [as_int(x) for x in v]
    else:
        sides = [as_int(x) for x in str(v).replace("x", ",").split(",") if x.strip()]
    if len(sides) == 1:
        sides *= 2
    if len(sides) != 2:
        raise ValueError(f"expected 'width,height', got {v!r}")
    w, h = sides
    if w == h:
        return w
    side = max(64, round(math.sqrt(w * h) / 8) * 8)
    return Changed(side, msg("kohya.changed.square_area", w=w, h=h, side=side))


def family_to_ours(v: Any) -> str:
    return "sdxl" if as_bool(v) else "auto"


def family_to_sd(v: str) -> bool:
    """sd-scripts' ``sdxl`` switch for our model.family ("auto": off)."""
    chosen = chosen_family(v)
    return bool(chosen and chosen.kohya_sdxl)


def vpred_to_ours(v: Any) -> str:
    return "v_prediction" if as_bool(v) else "auto"


def not_(v: Any) -> bool:
    return not as_bool(v)


def path_to_ours(v: Any) -> str:
    return "" if v is None else str(v)


LOCON_TYPES = ("Kohya LoCon", "LyCORIS/LoCon", "LoCon")
"""LoRA_type values for which kohya_ss passes conv_dim / conv_alpha on."""
# Close relatives: the same update rule with a different memory trick, or the method Prodigy grew out of.
OPTIMIZER_KIN = {"pagedadamw8bit": "adamw8bit", "pagedadamw": "adamw", "pagedadamw32bit": "adamw",
                 "dadaptation": "prodigy", "dadaptadam": "prodigy", "dadaptadampreprint": "prodigy",
                 "dadaptadagrad": "prodigy", "dadaptadan": "prodigy", "dadaptadanip": "prodigy",
                 "dadaptlion": "prodigy", "dadaptsgd": "prodigy"}  # fmt: skip


def optimizer_to_kohya(ours: str) -> str:
    """Its ``optimizer_type`` name, as the optimizer's registration (trainer/train/optim.py) gives it."""
    return OPTIMIZERS[ours].kohya or ours


def optimizer_to_ours(v: Any) -> Any:
    name = str(v or "AdamW").strip()
    key = name.lower()
    ours = {(spec.kohya or spec.name).lower(): spec.name for spec in OPTIMIZERS.values()}
    if key in ours:
        return ours[key]
    if key in OPTIMIZER_KIN:
        kin = OPTIMIZER_KIN[key]
        return Changed(kin, msg("kohya.changed.optimizer_kin", name=name, ours=kin))
    return Changed("adamw", msg("kohya.changed.optimizer_adamw", name=name))


SCHEDULERS = ("constant", "constant_with_warmup", "cosine", "linear", "cosine_with_restarts")
SCHEDULER_KIN = {"polynomial": "linear", "cosine_with_min_lr": "cosine", "warmup_stable_decay": "linear"}


def scheduler_to_ours(v: Any) -> Any:
    name = str(v or "constant").strip().lower()
    if name in SCHEDULERS:
        return name
    ours = SCHEDULER_KIN.get(name, "constant")
    return Changed(ours, msg("kohya.changed.scheduler", name=name, ours=ours))


def seed_to_ours(v: Any) -> Any:
    if v in ("", None) or as_int(v) == 0:
        return Changed(42, msg("kohya.changed.seed"))
    return as_int(v)


def optional_float(v: Any) -> float:
    """"" and None (the GUI's empty box, sd-scripts' unset) are 0 = off / the same as lr."""
    return 0.0 if v in ("", None) else as_float(v)


def optional_int(v: Any) -> int:
    return 0 if v in ("", None) else as_int(v)


def te_lr_to_ours(v: Any) -> float:
    if isinstance(v, list | tuple):  # sd-scripts takes one lr per text encoder (SDXL has two)
        v = v[0] if v else 0.0
    return optional_float(v)


def caption_ext_to_ours(v: Any) -> str:
    text = str(v or "").strip()
    return text if text.startswith(".") or not text else "." + text


def zero_is_none(v: Any) -> Any:
    return v if v else None


def fp8_to_ours(v: Any) -> str:
    """sd-scripts' fp8_base (the frozen model's Linear weights in fp8) is model.base_quant's fp8."""
    return "fp8" if as_bool(v) else "none"


# Notes shared by many rows
N_SPEED = msg("kohya.row.speed")
N_LOG = msg("kohya.row.log")
N_LAUNCH = msg("kohya.row.launch")
N_FIXED_FP32 = msg("kohya.row.fixed_fp32")
N_NOISE = msg("kohya.row.noise")
N_LOSS = msg("kohya.row.loss")
N_BLOCKS = msg("kohya.row.blocks")
N_RESUME = msg("kohya.row.resume")
N_KEEP = msg("kohya.row.keep")
N_TE_CACHE = msg("kohya.row.te_cache")
N_VAE = msg("kohya.row.vae")
N_LORA_DROPOUT = msg("kohya.row.lora_dropout")


@dataclass(frozen=True)
class Row:
    """One setting: kohya_ss GUI key, sd-scripts key, our key, converters and a note."""

    gui: str
    sd: str
    ours: str = ""
    to_ours: Callable[[Any], Any] = same
    to_kohya: Callable[[Any], Any] = same
    note: Msg | None = None
    where: str = "args"
    """Where sd-scripts reads ``sd``: "args" (train config / command line), "dataset" ([[datasets]]) or "subset"
    ([[datasets.subsets]], and [general])."""
    sd_default: Any = None
    """sd-scripts' default, used when its TOML leaves the key out (None: no default worth carrying)."""
    special: bool = False
    """The importer handles it with its neighbours (the note says how), not by ``to_ours`` alone."""

    @property
    def supported(self) -> bool:
        return bool(self.ours)


R = Row
ROWS: tuple[Row, ...] = (
    # model
    R("pretrained_model_name_or_path", "pretrained_model_name_or_path", "model.base", path_to_ours),
    R("sdxl", "", "model.family", family_to_ours, family_to_sd, msg("kohya.row.sdxl")),
    R("v_parameterization", "v_parameterization", "model.prediction_type", vpred_to_ours, lambda v: v == "v_prediction",
      sd_default=False),
    R("v2", "v2", note=msg("kohya.row.v2"), special=True),
    # dataset
    R("train_data_dir", "train_data_dir", "dataset.path", path_to_ours, note=msg("kohya.row.train_data_dir")),
    R("reg_data_dir", "reg_data_dir", "dataset.reg_path", path_to_ours, note=msg("kohya.row.reg_data_dir")),
    R("max_resolution", "resolution", "dataset.resolution", resolution_to_ours, where="dataset",
      note=msg("kohya.row.max_resolution")),
    R("enable_bucket", "enable_bucket", "dataset.buckets", as_bool, where="dataset", sd_default=False),
    R("min_bucket_reso", "min_bucket_reso", "dataset.min_bucket_side", as_int, where="dataset", sd_default=256),
    R("max_bucket_reso", "max_bucket_reso", "dataset.max_bucket_side", as_int, where="dataset", sd_default=1024),
    R("bucket_reso_steps", "bucket_reso_steps", "dataset.bucket_step", as_int, where="dataset", sd_default=64),
    R("caption_extension", "caption_extension", "dataset.caption_ext", caption_ext_to_ours, where="subset",
      sd_default=".caption"),
    R("shuffle_caption", "shuffle_caption", "dataset.shuffle_tags", as_bool, where="subset", sd_default=False),
    R("keep_tokens", "keep_tokens", "dataset.keep_tokens", as_int, where="subset", sd_default=0),
    R("caption_dropout_rate", "caption_dropout_rate", "dataset.caption_dropout", as_float, where="subset",
      sd_default=0.0),
    R("", "caption_tag_dropout_rate", "dataset.tag_dropout", as_float, where="subset", sd_default=0.0),
    R("flip_aug", "flip_aug", "dataset.flip", as_bool, where="subset", sd_default=False),
    R("cache_latents", "cache_latents", "dataset.cache_latents", as_bool, sd_default=False),
    R("cache_latents_to_disk", "cache_latents_to_disk", "dataset.cache_to_disk", as_bool, sd_default=False),
    R("prior_loss_weight", "prior_loss_weight", "dataset.prior_loss_weight", as_float, sd_default=1.0),
    R("masked_loss", "masked_loss", "dataset.masked_loss", as_bool, note=msg("kohya.row.masked_loss"),
      sd_default=False),
    # network
    R("network_dim", "network_dim", "lora.rank", as_int, sd_default=4),
    R("network_alpha", "network_alpha", "lora.alpha", as_float, sd_default=1.0),
    R("conv_dim", "network_args conv_dim", "lora.conv_rank", optional_int, special=True,
      note=msg("kohya.row.conv_dim")),
    R("conv_alpha", "network_args conv_alpha", "lora.conv_alpha", optional_float, special=True),
    R("network_dropout", "network_dropout", "lora.dropout", optional_float, zero_is_none, sd_default=0.0),
    R("network_train_unet_only", "network_train_unet_only", "lora.train_text_encoder", not_, not_, sd_default=False),
    R("LoRA_type", "network_module", special=True, note=msg("kohya.row.LoRA_type")),
    # optimizer and schedule
    R("optimizer", "optimizer_type", "optim.optimizer", optimizer_to_ours, optimizer_to_kohya,
      msg("kohya.row.optimizer"), sd_default="AdamW"),
    R("optimizer_args", "optimizer_args", "optim.weight_decay", special=True,
      note=msg("kohya.row.optimizer_args")),
    R("learning_rate", "learning_rate", "optim.lr", as_float, sd_default=2e-6),
    R("unet_lr", "unet_lr", "optim.lr", optional_float, special=True, note=msg("kohya.row.unet_lr")),
    R("text_encoder_lr", "text_encoder_lr", "optim.te_lr", te_lr_to_ours, zero_is_none,
      msg("kohya.row.text_encoder_lr"), sd_default=0.0),
    R("lr_scheduler", "lr_scheduler", "optim.scheduler", scheduler_to_ours, sd_default="constant"),
    R("lr_scheduler_num_cycles", "lr_scheduler_num_cycles", "optim.num_cycles", optional_int, special=True,
      note=msg("kohya.row.lr_scheduler_num_cycles"), sd_default=1),
    R("lr_warmup", "", "optim.warmup_steps", special=True, note=msg("kohya.row.lr_warmup")),
    R("lr_warmup_steps", "lr_warmup_steps", "optim.warmup_steps", special=True,
      note=msg("kohya.row.lr_warmup_steps"), sd_default=0),
    R("max_grad_norm", "max_grad_norm", "optim.max_grad_norm", as_float, sd_default=1.0),
    # training
    R("train_batch_size", "train_batch_size", "train.batch_size", as_int, where="dataset", sd_default=1),
    R("gradient_accumulation_steps", "gradient_accumulation_steps", "train.grad_accum", as_int, sd_default=1),
    R("epoch", "", "train.epochs", as_int, note=msg("kohya.row.epoch")),
    R("max_train_epochs", "max_train_epochs", "train.epochs", optional_int, special=True,
      note=msg("kohya.row.max_train_epochs")),
    R("max_train_steps", "max_train_steps", "train.max_steps", optional_int, special=True,
      note=msg("kohya.row.max_train_steps"), sd_default=1600),
    R("mixed_precision", "mixed_precision", "train.precision", special=True,
      note=msg("kohya.row.mixed_precision"), sd_default="no"),
    R("seed", "seed", "train.seed", seed_to_ours, sd_default=""),
    R("gradient_checkpointing", "gradient_checkpointing", "train.gradient_checkpointing", as_bool, sd_default=False),
    R("noise_offset", "noise_offset", "train.noise_offset", optional_float, zero_is_none,
      msg("kohya.row.noise_offset"), sd_default=0.0),
    R("min_snr_gamma", "min_snr_gamma", "train.min_snr_gamma", optional_float, zero_is_none, sd_default=0.0),
    R("max_data_loader_n_workers", "max_data_loader_n_workers", "train.num_workers", optional_int, sd_default=8),
    # saving and samples
    R("output_dir", "output_dir", "save.output_dir", path_to_ours),
    R("output_name", "output_name", "save.name", path_to_ours),
    R("save_every_n_steps", "save_every_n_steps", "save.every_steps", optional_int, zero_is_none, sd_default=0),
    R("save_every_n_epochs", "save_every_n_epochs", "save.every_steps", special=True,
      note=msg("kohya.row.save_every_n_epochs")),
    R("sample_prompts", "sample_prompts", "sample.prompts", special=True,
      note=msg("kohya.row.sample_prompts")),
    R("sample_every_n_steps", "sample_every_n_steps", "sample.every_steps", optional_int, zero_is_none, sd_default=0),
    R("sample_every_n_epochs", "sample_every_n_epochs", "sample.every_steps", special=True,
      note=msg("kohya.row.sample_every_n_epochs")),
    # not carried over: what we do instead, or why it does not matter
    R("clip_skip", "clip_skip", note=msg("kohya.row.clip_skip")),
    R("save_precision", "save_precision", note=msg("kohya.row.save_precision")),
    R("save_model_as", "save_model_as", note=msg("kohya.row.save_model_as")),
    R("bucket_no_upscale", "bucket_no_upscale", where="dataset", note=msg("kohya.row.bucket_no_upscale")),
    R("color_aug", "color_aug", where="subset", note=msg("kohya.row.color_aug")),
    R("random_crop", "random_crop", where="subset", note=msg("kohya.row.random_crop")),
    R("max_token_length", "max_token_length", note=msg("kohya.row.max_token_length")),
    R("caption_dropout_every_n_epochs", "caption_dropout_every_n_epochs", where="subset",
      note=msg("kohya.row.caption_dropout_every_n_epochs")),
    R("stop_text_encoder_training", "stop_text_encoder_training",
      note=msg("kohya.row.stop_text_encoder_training")),
    R("xformers", "xformers", note=N_SPEED), R("", "sdpa", note=N_SPEED), R("mem_eff_attn", "mem_eff_attn", note=N_SPEED),
    R("full_fp16", "full_fp16", note=N_FIXED_FP32), R("full_bf16", "full_bf16", note=N_FIXED_FP32),
    R("fp8_base", "fp8_base", "model.base_quant", fp8_to_ours, note=msg("kohya.row.fp8_base")),
    R("noise_offset_type", "", note=N_NOISE), R("adaptive_noise_scale", "adaptive_noise_scale", note=N_NOISE),
    R("multires_noise_iterations", "multires_noise_iterations", note=N_NOISE),
    R("multires_noise_discount", "multires_noise_discount", note=N_NOISE),
    R("noise_offset_random_strength", "noise_offset_random_strength", note=N_NOISE),
    R("ip_noise_gamma", "ip_noise_gamma", note=N_NOISE),
    R("loss_type", "loss_type", note=N_LOSS), R("huber_c", "huber_c", note=N_LOSS),
    R("huber_schedule", "huber_schedule", note=N_LOSS), R("debiased_estimation_loss", "debiased_estimation_loss", note=N_LOSS),
    R("scale_v_pred_loss_like_noise_pred", "scale_v_pred_loss_like_noise_pred", note=N_LOSS),
    R("v_pred_like_loss", "v_pred_like_loss", note=N_LOSS), R("masked_loss", "masked_loss", note=N_LOSS),
    R("min_timestep", "min_timestep", note=N_LOSS), R("max_timestep", "max_timestep", note=N_LOSS),
    R("weighted_captions", "weighted_captions", note=msg("kohya.row.weighted_captions")),
    R("scale_weight_norms", "scale_weight_norms", note=msg("kohya.row.scale_weight_norms")),
    R("network_weights", "network_weights", note=N_RESUME), R("dim_from_weights", "dim_from_weights", note=N_RESUME),
    R("save_state", "save_state", note=N_RESUME), R("resume", "resume", note=N_RESUME),
    R("save_last_n_steps", "save_last_n_steps", note=N_KEEP), R("save_last_n_epochs", "save_last_n_epochs", note=N_KEEP),
    R("down_lr_weight", "", note=N_BLOCKS), R("mid_lr_weight", "", note=N_BLOCKS), R("up_lr_weight", "", note=N_BLOCKS),
    R("block_dims", "", note=N_BLOCKS), R("block_alphas", "", note=N_BLOCKS), R("conv_block_dims", "", note=N_BLOCKS),
    R("conv_block_alphas", "", note=N_BLOCKS), R("block_lr_zero_threshold", "", note=N_BLOCKS),
    R("rank_dropout", "", note=N_LORA_DROPOUT), R("module_dropout", "", note=N_LORA_DROPOUT),
    R("sample_sampler", "sample_sampler", note=msg("kohya.row.sample_sampler")),
    R("sdxl_cache_text_encoder_outputs", "cache_text_encoder_outputs", "model.offload_text_encoders", as_bool,
      note=N_TE_CACHE, special=True),
    R("sdxl_no_half_vae", "no_half_vae", note=N_VAE), R("vae", "vae", note=N_VAE),
    R("vae_batch_size", "vae_batch_size", note=msg("kohya.row.vae_batch_size")),
    R("persistent_data_loader_workers", "persistent_data_loader_workers", note=N_SPEED),
    R("lr_scheduler_power", "lr_scheduler_power", note=msg("kohya.row.lr_scheduler_power")),
    R("lr_scheduler_args", "lr_scheduler_args", note=msg("kohya.row.lr_scheduler_args")),
    R("lr_scheduler_type", "lr_scheduler_type", note=msg("kohya.row.lr_scheduler_type")),
    R("additional_parameters", "", note=msg("kohya.row.additional_parameters")),
    R("dataset_config", "dataset_config", note=msg("kohya.row.dataset_config")),
    R("training_comment", "training_comment", note=N_LOG), R("logging_dir", "logging_dir", note=N_LOG),
    R("log_with", "log_with", note=N_LOG), R("log_tracker_name", "log_tracker_name", note=N_LOG),
    R("log_tracker_config", "log_tracker_config", note=N_LOG), R("log_config", "log_config", note=N_LOG),
    R("wandb_api_key", "wandb_api_key", note=N_LOG), R("wandb_run_name", "wandb_run_name", note=N_LOG),
    R("metadata_author", "metadata_author", note=N_LOG), R("metadata_description", "metadata_description", note=N_LOG),
    R("metadata_license", "metadata_license", note=N_LOG), R("metadata_tags", "metadata_tags", note=N_LOG),
    R("metadata_title", "metadata_title", note=N_LOG), R("huggingface_repo_id", "huggingface_repo_id", note=N_LOG),
    R("skip_cache_check", "skip_cache_check", note=N_LOG), R("model_list", "", note=N_LOG),
    R("num_cpu_threads_per_process", "", note=N_LAUNCH), R("num_processes", "", note=N_LAUNCH),
    R("num_machines", "", note=N_LAUNCH), R("multi_gpu", "", note=N_LAUNCH), R("gpu_ids", "", note=N_LAUNCH),
    R("main_process_port", "", note=N_LAUNCH), R("dynamo_backend", "dynamo_backend", note=N_LAUNCH),
    R("extra_accelerate_launch_args", "", note=N_LAUNCH), R("highvram", "highvram", note=N_SPEED),
    R("lowvram", "", note=N_SPEED),
)

BY_GUI: dict[str, Row] = {r.gui: r for r in ROWS if r.gui}
BY_SD: dict[str, Row] = {r.sd: r for r in ROWS if r.sd and " " not in r.sd}
NEUTRAL: tuple[Any, ...] = ("", None, 0, 0.0, False, [], "0", "0.0", "none", "None")
"""Values that leave a setting off: an unsupported or unknown key holding one of them changes nothing."""


def is_neutral(v: Any) -> bool:
    return any(v == n and type(v) is type(n) for n in NEUTRAL) or (isinstance(v, str) and v.strip() in ("", "0"))


def render_table(say: Callable[[Msg, str], str], lang: str = "en") -> str:
    """The mapping table of docs/kohya.md and docs/ko/kohya.md (Markdown) in ``lang``, made from :data:`ROWS`
    and SD3.5's and Flux.1's rows; ``say`` words a message (``words.say``)."""
    from trainer.kohya.flux import FLUX_ROWS
    from trainer.kohya.sd3 import SD3_ROWS

    head = ("kohya_ss GUI (JSON)", "sd-scripts", "LoRA Doctor", say(msg("kohya.table.note"), lang))
    off = say(msg("kohya.table.not_carried"), lang)
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|---|"]
    sections: tuple[tuple[str, Msg | None, tuple[Row, ...]], ...] = (
        ("", None, ROWS), ("SD3.5", msg("kohya.table.sd3"), SD3_ROWS), ("Flux.1", msg("kohya.table.flux"), FLUX_ROWS))
    for title, note, rows in sections:
        if note is not None:  # a family's own settings follow
            lines.append(f"| **{title}** | | | {say(note, lang)} |")
        lines += [_table_line(r, say, lang, off) for r in rows]
    return "\n".join(lines)


def _table_line(r: Row, say: Callable[[Msg, str], str], lang: str, off: str) -> str:
    cells = [f"`{r.gui}`" if r.gui else "", f"`{r.sd}`" if r.sd else "", f"`{r.ours}`" if r.ours else off,
             say(r.note, lang).replace("|", "\\|") if r.note else ""]
    return "| " + " | ".join(cells) + " |"
